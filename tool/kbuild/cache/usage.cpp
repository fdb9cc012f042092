#include "kbuild/cache/usage.hpp"

#include <cerrno>

#include <algorithm>

#include "kbuild/util/cache_layout.hpp"

namespace kbuild::cache {

namespace fs = std::filesystem;

namespace {

constexpr const char* k_parts[] = {"objects", "manifests", "toolchains", "downloads", "test-envs", "tmp"};

bool is_directory_part(const std::string& part) {
  return part == "toolchains" || part == "downloads" || part == "test-envs";
}

// The removable entries of a part: files for objects, manifests and tmp (recursively); directories
// (first level) for toolchains, downloads and test environments.
Result<void> collect(const util::FileSystem& fs, const fs::path& root, const std::string& part,
                     std::vector<PruneEntry>& out) {
  const fs::path dir = root / part;
  if (!fs.stat(dir).is_dir) return {};
  if (!is_directory_part(part)) {
    KB_TRY_ASSIGN(auto files, util::list_files_recursive(fs, dir));
    for (const auto& rel : files) {
      util::FileStat st = fs.stat(dir / rel);
      out.push_back({dir / rel, part, st.mtime_ns, st.size});
    }
    return {};
  }
  KB_TRY_ASSIGN(auto entries, fs.list_dir(dir));
  for (const auto& entry : entries) {
    if (entry.is_symlink) continue;
    const fs::path path = dir / entry.name;
    util::FileStat used;
    if (part == "downloads") {
      // <sha256>/<file>: one file, touched on use.
      auto files = fs.list_dir(path);
      if (files && !files->empty()) used = fs.stat(path / files->front().name);
    } else {
      used = fs.stat(path / ".complete");  // absent: in progress (or broken), never pruned here
    }
    if (!used.exists) continue;
    KB_TRY_ASSIGN(std::uint64_t bytes, entry.is_dir ? util::tree_size(fs, path) : Result<std::uint64_t>(used.size));
    out.push_back({path, part, used.mtime_ns, bytes});
  }
  return {};
}

}  // namespace

std::uint64_t CacheUsage::total_bytes() const {
  std::uint64_t total = 0;
  for (const auto& part : parts) total += part.bytes;
  return total;
}

Result<CacheUsage> cache_usage(const util::FileSystem& fs, const fs::path& root) {
  CacheUsage usage;
  std::uint64_t known = 0;
  for (const char* name : k_parts) {
    CachePart part{name, 0, 0};
    const fs::path dir = root / name;
    if (fs.stat(dir).is_dir) {
      KB_TRY_ASSIGN(part.bytes, util::tree_size(fs, dir));
      if (is_directory_part(name)) {
        KB_TRY_ASSIGN(auto entries, fs.list_dir(dir));
        for (const auto& entry : entries) part.entries += entry.name.empty() || entry.name[0] != '.';
      } else {
        KB_TRY_ASSIGN(auto files, util::list_files_recursive(fs, dir));
        part.entries = files.size();
      }
    }
    known += part.bytes;
    usage.parts.push_back(part);
  }
  std::uint64_t all = 0;
  if (fs.stat(root).is_dir) {
    KB_TRY_ASSIGN(all, util::tree_size(fs, root));
  }
  usage.parts.push_back({"other", 0, all > known ? all - known : 0});
  return usage;
}

Result<PruneReport> prune_cache(util::FileSystem& fs, const fs::path& root, std::uint64_t target_bytes, bool dry_run) {
  PruneReport report;
  KB_TRY_ASSIGN(CacheUsage usage, cache_usage(fs, root));
  report.total_before = usage.total_bytes();
  std::vector<PruneEntry> entries;
  for (const char* part : k_parts) KB_TRY(collect(fs, root, part, entries));
  std::sort(entries.begin(), entries.end(),
            [](const PruneEntry& a, const PruneEntry& b) { return a.last_used_ns < b.last_used_ns; });
  std::uint64_t total = report.total_before;
  for (const auto& entry : entries) {
    if (total <= target_bytes) break;
    if (!dry_run) KB_TRY(fs.remove_all(entry.path));
    total -= std::min(total, entry.bytes);
    report.freed += entry.bytes;
    report.removed.push_back(entry);
  }
  report.total_after = total;
  return report;
}

Result<CacheHold> hold_cache_in_use(util::FileSystem& fs, const fs::path& root) {
  auto lock = fs.lock_file_shared(root / ".in-use", true);
  if (lock) return CacheHold{std::move(*lock), false};
  const int error = lock.error().os_errno;
  if (error == EROFS || error == EACCES || error == EPERM) return CacheHold{nullptr, true};
  return fail(lock.error());
}

Result<std::unique_ptr<util::FileLock>> lock_cache_exclusive(util::FileSystem& fs, const fs::path& root, bool wait) {
  return fs.lock_file(root / ".in-use", wait);
}

}  // namespace kbuild::cache
