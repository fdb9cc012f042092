#pragma once
// `kbuild clean` as a library function: removes a kernel's intermediates (.kbuild/), and with `all`
// its built variants (build/), under the kernel directory's build lock, so a running build is never
// pulled from under its feet. The lock file itself stays (a build waiting on it must keep waiting on
// the same file).

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "kbuild/util/fs.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::usecase {

struct CleanOutcome {
  std::vector<std::filesystem::path> removed;  ///< (or, with dry_run, what would be)
};

Result<CleanOutcome> clean(util::FileSystem& fs, const std::filesystem::path& kernel_dir, bool all, bool dry_run,
                           const std::function<void(const std::string&)>& waiting);

}  // namespace kbuild::usecase
