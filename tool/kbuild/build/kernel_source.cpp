#include "kbuild/build/kernel_source.hpp"

#include <algorithm>

#include "kbuild/util/git.hpp"
#include "kbuild/util/hash.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::build {

Result<void> require_kernel_dir(const util::FileSystem& fs, const std::filesystem::path& kernel_dir) {
  const char* hint = "pass the kernel directory (the one containing build.toml), or create one with `kbuild init`";
  if (!fs.stat(kernel_dir).is_dir) return fail(kernel_dir.string() + " is not a directory", hint, ExitCode::usage);
  if (!fs.stat(kernel_dir / "build.toml").exists)
    return fail("no build.toml in " + kernel_dir.string(), hint, ExitCode::usage);
  return {};
}

Result<config::KernelConfig> load_kernel(const util::FileSystem& fs, const std::filesystem::path& kernel_dir,
                                         const config::DiagnosticSink& sink) {
  KB_TRY(require_kernel_dir(fs, kernel_dir));
  auto outcome = config::load_kernel_config(fs, kernel_dir);
  if (sink && !outcome.diagnostics.empty()) sink(outcome.diagnostics);
  if (!outcome.config) {
    size_t errors = 0;
    for (const auto& d : outcome.diagnostics) errors += d.severity == config::Severity::error;
    return fail((kernel_dir / "build.toml").string() + " is invalid (" + std::to_string(errors) + " error" +
                    (errors == 1 ? "" : "s") + ")",
                "fix the problems listed above; nothing was built", ExitCode::usage);
  }
  return *outcome.config;
}

bool is_valid_unique_id(const std::string& id) {
  return !id.empty() && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

Result<BuildIdentity> build_identity(util::FileSystem& fs, util::ProcessLauncher& launcher, util::Random& random,
                                     const std::filesystem::path& kernel_dir, const std::filesystem::path& work_dir,
                                     const std::optional<std::string>& explicit_id) {
  BuildIdentity identity;
  auto git = util::git_state(launcher, kernel_dir);
  if (git) identity.kernel_git = layout::GitProvenance{git->commit, git->dirty};
  if (explicit_id) {
    if (!is_valid_unique_id(*explicit_id))
      return fail("--unique-id \"" + *explicit_id + "\" is not usable in a Python identifier",
                  "use letters, digits and '_' only", ExitCode::usage);
    identity.unique_id = *explicit_id;
    return identity;
  }
  if (git) {
    identity.unique_id = git->tree.substr(0, 7) + (git->dirty ? "_dirty" : "");
    return identity;
  }
  std::filesystem::path id_file = work_dir / "unique-id";
  if (auto text = fs.read_file(id_file)) {
    std::string id(util::trim(*text));
    if (is_valid_unique_id(id)) {
      identity.unique_id = id;
      return identity;
    }
  }
  identity.unique_id = util::base32_lower_nopad(random.bytes(8));
  KB_TRY(fs.write_file_atomic(id_file, identity.unique_id + "\n"));
  return identity;
}

}  // namespace kbuild::build
