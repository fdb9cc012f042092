#include "kbuild/cli/build_session.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <fstream>
#include <random>

#include "kbuild/util/git.hpp"
#include "kbuild/util/hash.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::cli {

Result<void> require_kernel_dir(const util::FileSystem& fs, const std::filesystem::path& kernel_dir) {
  const char* hint = "pass the kernel directory (the one containing build.toml), or create one with `kbuild init`";
  if (!fs.stat(kernel_dir).is_dir) return fail(kernel_dir.string() + " is not a directory", hint, ExitCode::usage);
  if (!fs.stat(kernel_dir / "build.toml").exists)
    return fail("no build.toml in " + kernel_dir.string(), hint, ExitCode::usage);
  return {};
}

Result<config::KernelConfig> load_config_reporting(const util::FileSystem& fs,
                                                   const std::filesystem::path& kernel_dir) {
  KB_TRY(require_kernel_dir(fs, kernel_dir));
  auto outcome = config::load_kernel_config(fs, kernel_dir);
  std::string text = config::format_diagnostics(outcome.diagnostics);
  if (!text.empty()) fmt::print(stderr, "{}", text);
  if (!outcome.config) {
    size_t errors = 0;
    for (const auto& d : outcome.diagnostics) errors += d.severity == config::Severity::error;
    return fail(
        fmt::format("{} is invalid ({} error{})", (kernel_dir / "build.toml").string(), errors, errors == 1 ? "" : "s"),
        "fix the problems listed above; nothing was built", ExitCode::usage);
  }
  return *outcome.config;
}

bool is_valid_unique_id(const std::string& id) {
  return !id.empty() && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

Result<BuildIdentity> build_identity(util::FileSystem& fs, util::ProcessLauncher& launcher,
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
  std::random_device device;
  std::string raw(8, '\0');
  for (auto& c : raw) c = static_cast<char>(device() & 0xff);
  identity.unique_id = util::base32_lower_nopad(raw);
  KB_TRY(fs.write_file_atomic(id_file, identity.unique_id + "\n"));
  return identity;
}

}  // namespace kbuild::cli
