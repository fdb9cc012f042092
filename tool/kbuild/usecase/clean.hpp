#pragma once
// `kbuild clean` as a library function: removes a kernel's intermediates (.kbuild/), and with `all`
// its built variants (build/), under the kernel directory's build lock, so a running build is never
// pulled from under its feet. The lock file itself stays (a build waiting on it must keep waiting on
// the same file).

#include <filesystem>
#include <string>
#include <vector>

#include "kbuild/usecase/services.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::usecase {

struct CleanRequest {
  std::filesystem::path kernel_dir;  ///< absolute
  bool all = false;                  ///< build/ too
  bool dry_run = false;              ///< only say what would be removed
};

struct CleanOutcome {
  std::vector<std::filesystem::path> removed;  ///< (or, with dry_run, what would be)
};

/// Waits for a running build of the directory (saying so through the reporter) before removing.
Result<CleanOutcome> clean(const CleanRequest& request, Services& services);

}  // namespace kbuild::usecase
