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

struct TomlPosition {
  std::size_t line = 0;    ///< 1-based
  std::size_t column = 0;  ///< 1-based, in code points (as toml++ counts)
};

/// Where byte `offset` of a string value's decoded text sits in `text`, the string's opening quote
/// being at `opening`. Handles the four TOML string forms: escapes (a byte an escape produces sits at
/// its backslash), the newline dropped after an opening """ or ''', and line-ending backslashes. Past
/// the end of the string: its closing quote.
TomlPosition toml_string_position(std::string_view text, TomlPosition opening, std::size_t offset);

}  // namespace kbuild::util
