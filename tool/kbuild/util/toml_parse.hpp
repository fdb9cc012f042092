#pragma once
// toml::parse behind the shape guard (toml_guard.hpp), for every TOML file kbuild reads: a file with
// a key or nesting beyond the limits throws toml::parse_error at its position, as a syntax error
// would, so each reader reports it the same way. Header-only: the modules that parse TOML link toml++.

#include <toml++/toml.h>

#include <memory>
#include <string>
#include <string_view>

#include "kbuild/util/toml_guard.hpp"

namespace kbuild::util {

inline toml::table parse_toml(std::string_view text, std::string_view file) {
  if (auto shape = toml_shape_problem(text)) {
    toml::source_position at{static_cast<toml::source_index>(shape->line),
                             static_cast<toml::source_index>(shape->column)};
    const std::string description = shape->message + " (kbuild reads at most " + std::to_string(k_max_toml_key_parts) +
                                    " key parts and " + std::to_string(k_max_toml_nesting) + " levels)";
    // The description is copied by the exception (std::runtime_error) before this string goes.
    throw toml::parse_error(description.c_str(),
                            toml::source_region{at, at, std::make_shared<const std::string>(file)});
  }
  return toml::parse(text, file);
}

}  // namespace kbuild::util
