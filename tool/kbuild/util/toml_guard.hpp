#pragma once
// A guard run before toml++ parses a file kbuild reads (build.toml, kbuild.toml, pyproject.toml, the
// user config, the registry's config.toml): toml++ recurses once per dotted-key part and per nested
// array or inline table, so a valid file with a 50,000-part key overflows the stack (SIGSEGV). Files
// kbuild reads need neither: keys of more than 64 parts and values nested more than 64 deep are
// refused with their position, before any parsing.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace kbuild::util {

struct TomlShapeProblem {
  std::size_t line = 0;  ///< 1-based
  std::size_t column = 0;
  std::string message;
};

inline constexpr std::size_t k_max_toml_key_parts = 64;
inline constexpr std::size_t k_max_toml_nesting = 64;

/// The first place where `text` has a longer dotted key or deeper nesting than the limits above;
/// nullopt when it has neither (whether it is valid TOML is left to the parser).
std::optional<TomlShapeProblem> toml_shape_problem(std::string_view text);

}  // namespace kbuild::util
