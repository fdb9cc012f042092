#pragma once
// What the whole cache directory holds (util/cache_layout.hpp), part by part, and pruning it to a size,
// least recently used first: `kbuild cache stats` and `kbuild cache prune`.
//
// Units of removal: a compile-cache object or manifest (a file; used = its mtime, refreshed on every
// hit), a toolchain or a test environment (a directory; used = the mtime of its .complete marker,
// touched whenever a build or a test run uses it), a download (its sha256 directory; used = the mtime
// of the file, touched on use), and anything under tmp/ (leftovers; used = mtime). Incomplete
// toolchains and environments (no .complete) are somebody's work in progress and are never removed
// here.
//
// Never what a running build uses: builds and test runs hold a shared lock on <root>/.in-use for as
// long as they run (hold_cache_in_use); prune takes it exclusively, so it waits for them to finish
// (or, without waiting, says the cache is busy) and no build starts while it removes.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "kbuild/util/fs.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::cache {

struct CachePart {
  std::string name;  ///< "objects", "manifests", "toolchains", "downloads", "test-envs", "tmp", "other"
  std::uint64_t entries = 0;
  std::uint64_t bytes = 0;
};

struct CacheUsage {
  std::vector<CachePart> parts;  ///< in the order above, every part listed (zeros included)
  std::uint64_t total_bytes() const;
};

/// Sizes every part of the cache at `root` (symbolic links neither followed nor counted).
Result<CacheUsage> cache_usage(const util::FileSystem& fs, const std::filesystem::path& root);

struct PruneEntry {
  std::filesystem::path path;
  std::string part;
  std::int64_t last_used_ns = 0;
  std::uint64_t bytes = 0;
};

struct PruneReport {
  std::vector<PruneEntry> removed;  ///< oldest first (what would go, with dry_run)
  std::uint64_t freed = 0;
  std::uint64_t total_before = 0;
  std::uint64_t total_after = 0;
};

/// Removes entries of every part, least recently used first, until the cache is at most `target_bytes`.
/// The caller holds the in-use lock exclusively (lock_cache_exclusive).
Result<PruneReport> prune_cache(util::FileSystem& fs, const std::filesystem::path& root, std::uint64_t target_bytes,
                                bool dry_run);

/// The lock builds and test runs hold shared while they use the cache; held until destroyed. A cache
/// on a read-only file system (or one this user may not write) cannot be locked, nor pruned by anyone:
/// `read_only` then, and no lock.
struct CacheHold {
  std::unique_ptr<util::FileLock> lock;
  bool read_only = false;
};
Result<CacheHold> hold_cache_in_use(util::FileSystem& fs, const std::filesystem::path& root);
/// The same lock, exclusively (prune); nullptr without `wait` when a build holds it.
Result<std::unique_ptr<util::FileLock>> lock_cache_exclusive(util::FileSystem& fs, const std::filesystem::path& root,
                                                             bool wait);

}  // namespace kbuild::cache
