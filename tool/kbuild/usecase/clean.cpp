#include "kbuild/usecase/clean.hpp"

#include <algorithm>

#include "kbuild/usecase/build.hpp"

namespace kbuild::usecase {

Result<CleanOutcome> clean(const CleanRequest& request, Services& services) {
  auto& fs = services.fs;
  const auto& kernel_dir = request.kernel_dir;
  const bool dry_run = request.dry_run;
  auto waiting = [&services](const std::string& line) { services.reporter.info("kbuild: " + line); };
  if (!fs.stat(kernel_dir / "build.toml").is_file)
    return fail(kernel_dir.string() + " is not a kernel directory (no build.toml); nothing removed",
                "run kbuild clean inside the kernel directory or pass it as an argument", ExitCode::usage);
  CleanOutcome outcome;
  const auto work_dir = kernel_dir / ".kbuild";
  std::unique_ptr<util::FileLock> lock;
  if (!dry_run && fs.stat(work_dir).is_dir) {
    KB_TRY_ASSIGN(lock, lock_kernel_dir(fs, work_dir, true, waiting));
  }
  if (fs.stat(work_dir).is_dir) {
    KB_TRY_ASSIGN(auto entries, fs.list_dir(work_dir));
    bool any = std::any_of(entries.begin(), entries.end(), [](const auto& entry) { return entry.name != "lock"; });
    // The lock goes too: a build waiting on it notices the file was replaced and takes the new one.
    if (!dry_run) KB_TRY(fs.remove_all(work_dir));
    if (any) outcome.removed.push_back(work_dir);
  }
  if (request.all && fs.stat(kernel_dir / "build").exists) {
    if (!dry_run) KB_TRY(fs.remove_all(kernel_dir / "build"));
    outcome.removed.push_back(kernel_dir / "build");
  }
  return outcome;
}

}  // namespace kbuild::usecase
