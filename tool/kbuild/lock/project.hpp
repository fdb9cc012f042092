#pragma once
// The `kbuild lock` use case on a project directory: read pyproject.toml and the existing
// kernels.lock, resolve (lock/resolver.hpp), compare, and write kernels.lock atomically when asked.
// Nothing is written unless every dependency resolved.

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "kbuild/config/diagnostic.hpp"
#include "kbuild/lock/resolver.hpp"
#include "kbuild/util/fs.hpp"

namespace kbuild::lock {

enum class LockMode {
  write,    ///< write kernels.lock when its content changes
  dry_run,  ///< resolve and compare, write nothing
  check,    ///< like dry_run; the caller fails when the file is not up to date
};

struct LockRequest {
  std::filesystem::path project_dir;
  LockMode mode = LockMode::write;
  LockOptions options;
  /// Receives every diagnostic of pyproject.toml (printed by the CLI) before an invalid file fails.
  std::function<void(const std::vector<config::Diagnostic>&)> diagnostics;
};

struct LockChange {
  enum class Kind { added, removed, moved };
  Kind kind = Kind::added;
  Dependency dependency;
  std::string old_commit;
  std::string new_commit;
};

struct LockProjectOutcome {
  std::filesystem::path lockfile;
  LockOutcome lock;
  bool existed = false;     ///< kernels.lock was there before
  bool up_to_date = false;  ///< its content equals what was resolved
  bool written = false;
  std::vector<LockChange> changes;  ///< entry by entry, against the old file
};

Result<LockProjectOutcome> lock_project(const LockRequest& request, KernelIndex& index, util::FileSystem& fs);

/// Reads and parses <dir>/kernels.lock; exit code 2 when it is missing or invalid.
Result<std::vector<LockEntry>> read_lockfile(const util::FileSystem& fs, const std::filesystem::path& project_dir);

}  // namespace kbuild::lock
