#include "kbuild/config/update_build.hpp"

#include <toml++/toml.h>

#include "kbuild/config/build_toml.hpp"
#include "kbuild/util/strings.hpp"
#include "kbuild/util/toml_parse.hpp"

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

// What kernel-builder's v3 -> current conversion adds (kernels-data's config/v3.rs): `version = 1` when
// general.version is missing, an empty [torch-noarch] when there is no framework table; a missing
// license cannot be made up. Everything else of a v3 file ([general.*], [torch], [kernel.*]) has the
// current meaning already.
struct V3Additions {
  bool version = false;
  bool framework = false;
};

Result<V3Additions> v3_additions(std::string_view text, const std::string& file_name) {
  toml::table root;
  try {
    root = util::parse_toml(text, file_name);  // parsed once already (parse_build_toml): well-formed
  } catch (const toml::parse_error&) {
    return fail(file_name + " is not valid TOML", "`kbuild config` shows where", ExitCode::usage);
  }
  const toml::table* general = root["general"].as_table();
  if (!general) return fail(file_name + " has no [general] table", "add one with name and license", ExitCode::usage);
  if (!general->get("license"))
    return fail(file_name + ": the `license` key is required in the `general` section to convert a v3 file",
                "add the kernel's license to [general], e.g. license = \"Apache-2.0\" (kernel-builder refuses "
                "the conversion the same way)",
                ExitCode::usage);
  V3Additions additions;
  additions.version = !general->get("version");
  additions.framework = !root.get("torch") && !root.get("torch-noarch") && !root.get("tvm-ffi");
  return additions;
}

}  // namespace

Result<std::optional<std::string>> update_build_toml(std::string_view text, const std::string& file_name) {
  ParseOutcome outcome = parse_build_toml(text, file_name);
  V3Additions v3;
  if (outcome.edition == 3) {
    KB_TRY_ASSIGN(v3, v3_additions(text, file_name));
  } else if (!outcome.config) {
    return fail(file_name + " has errors; nothing was changed", "fix the problems `kbuild config` lists first",
                ExitCode::usage);
  } else if (outcome.edition != 4) {
    return std::optional<std::string>();
  }
  size_t at = after_general_header(text);
  if (at == std::string_view::npos)
    return fail(file_name + ": no `[general]` header line to add the edition to",
                "add `edition = 5` to the general table by hand", ExitCode::usage);
  std::string updated(text.substr(0, at));
  if (!updated.empty() && updated.back() != '\n') updated += '\n';
  updated += "edition = 5\n";
  if (v3.version) updated += "version = 1\n";
  updated += text.substr(at);
  if (v3.framework)
    updated += std::string(updated.empty() || updated.back() == '\n' ? "" : "\n") + "\n[torch-noarch]\n";
  ParseOutcome check = parse_build_toml(updated, file_name);
  if (!check.config) {
    if (outcome.edition == 3)
      return fail(file_name + " is a v3 file with problems beyond the format; nothing was changed",
                  "fix what `kbuild config` lists after adding edition = 5, version and a framework table by hand",
                  ExitCode::usage);
    return fail("internal error: the updated " + file_name + " does not parse; nothing was changed");
  }
  return std::optional<std::string>(std::move(updated));
}

}  // namespace kbuild::config
