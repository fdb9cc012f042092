#include "kbuild/config/update_build.hpp"

#include "kbuild/config/build_toml.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::config {

namespace {

// The byte offset just past the line holding the [general] table header, or npos.
size_t after_general_header(std::string_view text) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    std::string_view line = text.substr(start, end == std::string_view::npos ? text.size() - start : end - start);
    std::string_view code = util::trim(line.substr(0, line.find('#')));
    if (code == "[general]") return end == std::string_view::npos ? text.size() : end + 1;
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return std::string_view::npos;
}

}  // namespace

Result<std::optional<std::string>> update_build_toml(std::string_view text, const std::string& file_name) {
  ParseOutcome outcome = parse_build_toml(text, file_name);
  if (outcome.edition == 3)
    return fail(file_name + " is in the v3 format, which kbuild cannot convert",
                "convert it once with `kernel-builder update-build`, then kbuild builds it", ExitCode::usage);
  const bool v4 = outcome.edition == 4;
  if (!outcome.config)
    return fail(file_name + " has errors; nothing was changed", "fix the problems `kbuild config` lists first",
                ExitCode::usage);
  if (!v4) return std::optional<std::string>();
  size_t at = after_general_header(text);
  if (at == std::string_view::npos)
    return fail(file_name + ": no `[general]` header line to add the edition to",
                "add `edition = 5` to the general table by hand", ExitCode::usage);
  std::string updated(text.substr(0, at));
  if (!updated.empty() && updated.back() != '\n') updated += '\n';
  updated += "edition = 5\n";
  updated += text.substr(at);
  ParseOutcome check = parse_build_toml(updated, file_name);
  if (!check.config) return fail("internal error: the updated " + file_name + " does not parse; nothing was changed");
  return std::optional<std::string>(std::move(updated));
}

}  // namespace kbuild::config
