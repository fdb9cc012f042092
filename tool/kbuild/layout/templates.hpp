#pragma once
// Files kbuild generates, from templates/ in the source tree. They are embedded into the binary at
// build time (tool/embed_templates.cmake), so an installed kbuild is a single relocatable file.
//
// Template syntax: @NAME@ is replaced by the value of variable NAME (as in CMake's configure_file
// @ONLY mode). An @NAME@ without a value is an error, so a typo cannot ship silently.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/util/result.hpp"

namespace kbuild::layout {

/// The embedded template at `path` relative to templates/ (e.g. "torch/_ops.py.in").
std::optional<std::string_view> find_template(std::string_view path);
/// Every embedded template path, sorted.
std::vector<std::string> template_paths();

Result<std::string> render(std::string_view text, const std::map<std::string, std::string>& vars);
/// find_template + render; error when the template does not exist.
Result<std::string> render_template(std::string_view path, const std::map<std::string, std::string>& vars);

}  // namespace kbuild::layout
