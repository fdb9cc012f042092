// The compile cache's maintenance (compile_cache.hpp): sizing, eviction, verification and the sweep
// of leftovers. Every walk has lstat semantics (util::walk_tree): a symbolic link inside the cache is
// damage, removed itself, and never followed, so nothing outside the cache is ever read or removed.

#include <nlohmann/json.hpp>

#include <algorithm>

#include "kbuild/cache/compile_cache.hpp"
#include "kbuild/cache/entry.hpp"
#include "kbuild/util/cache_layout.hpp"

namespace kbuild::cache {

namespace fs = std::filesystem;

namespace {

using Type = util::TreeEntry::Type;

std::string describe(Type type) {
  switch (type) {
    case Type::symlink:
      return "a symbolic link";
    case Type::directory:
      return "a directory";
    case Type::other:
      return "not a regular file";
    case Type::unreadable:
      return "an unreadable directory";
    case Type::file:
      break;
  }
  return "a file";
}

// <part>/<k[0:2]>: the first two hex digits of the keys below it.
bool is_shard_name(std::string_view name) {
  return name.size() == 2 &&
         std::all_of(name.begin(), name.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// The regular files at entry positions (<part>/<k2>/<name>) of a part, for sizing and eviction.
std::vector<std::pair<fs::path, util::FileStat>> entry_files(const util::FileSystem& fs, const fs::path& part) {
  std::vector<std::pair<fs::path, util::FileStat>> out;
  if (!fs.lstat(part).is_dir) return out;
  auto entries = util::walk_tree(fs, part);
  if (!entries) return out;
  for (const auto& entry : *entries)
    if (entry.type == Type::file && std::count(entry.rel.begin(), entry.rel.end(), '/') == 1)
      out.emplace_back(part / entry.rel, fs.lstat(part / entry.rel));
  return out;
}

// Makes every directory below `part` readable again (a `chmod 000` shard): it is the cache's own.
void repair_modes(util::FileSystem& fs, const fs::path& part, CompileCache::VerifyReport& report) {
  for (int round = 0; round < 8; ++round) {
    auto entries = util::walk_tree(fs, part);
    if (!entries) return;
    bool repaired = false;
    for (const auto& entry : *entries)
      if (entry.type == Type::unreadable && fs.set_mode(part / entry.rel, 0700)) {
        report.problems.push_back(entry.rel + ": unreadable directory, made readable again");
        repaired = true;
      }
    if (!repaired) return;
  }
}

// Why the file at an entry position is damaged; empty when it is a sound entry.
std::string entry_damage(const util::FileSystem& fs, const fs::path& path, const std::string& shard, bool object) {
  std::string name = path.filename().string();
  if (!is_cache_key(name) || name.substr(0, 2) != shard) return "not an entry name";
  auto text = fs.read_file(path);
  if (!text) return text.error().message;
  std::string why;
  if (object ? decode_object(std::move(*text), name, why).has_value() : decode_manifest(*text, name, why).has_value())
    return "";
  return why;
}

}  // namespace

Result<CacheSummary> CompileCache::summarize(const util::FileSystem& fs, const fs::path& dir) {
  CacheSummary summary;
  util::CacheLayout layout{dir};
  if (auto text = fs.read_file(layout.stats())) {
    auto j = nlohmann::json::parse(*text, nullptr, false);
    if (j.is_object()) {
      auto count = [&](const char* name) {
        return j.contains(name) && j[name].is_number_unsigned() ? j[name].get<std::uint64_t>() : 0;
      };
      summary.counters = {count("hits"),    count("misses"),      count("stores"),        count("errors"),
                          count("corrupt"), count("remote_hits"), count("remote_stores"), count("remote_errors")};
    }
  }
  for (const auto& part : {layout.objects(), layout.manifests()})
    for (const auto& [path, st] : entry_files(fs, part)) {
      summary.bytes += st.size;
      if (part == layout.objects()) ++summary.entries;
    }
  if (fs.lstat(layout.temp()).is_dir) summary.bytes += util::tree_size(fs, layout.temp()).value_or(0);
  return summary;
}

Result<std::uint64_t> CompileCache::evict(util::FileSystem& fs, const fs::path& dir, std::uint64_t target_bytes) {
  util::CacheLayout layout{dir};
  // Objects and manifests only, sized from the very list that is evicted: tmp/ holds the downloads and
  // staging of running processes (transient; the leftovers of dead ones are swept, not evicted), and
  // evicting entries for them would empty the cache during a large download.
  std::vector<std::pair<fs::path, util::FileStat>> files;
  std::uint64_t total = 0;
  for (const auto& part : {layout.objects(), layout.manifests()})
    for (auto& file : entry_files(fs, part)) {
      total += file.second.size;
      files.push_back(std::move(file));
    }
  std::sort(files.begin(), files.end(),
            [](const auto& a, const auto& b) { return a.second.mtime_ns < b.second.mtime_ns; });
  std::uint64_t freed = 0;
  for (const auto& [path, st] : files) {
    if (total - freed <= target_bytes) break;  // freed <= total: both sum the same list
    KB_TRY(fs.remove_all(path));
    freed += st.size;
  }
  return freed;
}

std::uint64_t CompileCache::sweep_leftovers(util::FileSystem& fs, const fs::path& dir) {
  util::CacheLayout layout{dir};
  std::uint64_t removed = 0;
  auto sweep = [&](const fs::path& where) {
    if (!fs.lstat(where).is_dir) return;
    auto entries = fs.list_dir(where);
    if (!entries) return;
    for (const auto& entry : *entries)
      if (util::abandoned_temp(fs, where / entry.name) && fs.remove_all(where / entry.name)) ++removed;
  };
  for (const auto& part : {layout.temp(), layout.toolchains(), layout.downloads(), layout.test_envs()}) sweep(part);
  for (const auto& part : {layout.objects(), layout.manifests()}) {
    sweep(part);
    if (auto shards = fs.list_dir(part))
      for (const auto& shard : *shards)
        if (!shard.is_symlink && shard.is_dir) sweep(part / shard.name);
  }
  return removed;
}

Result<CompileCache::VerifyReport> CompileCache::verify(util::FileSystem& fs, const fs::path& dir) {
  VerifyReport report;
  util::CacheLayout layout{dir};
  report.leftovers = sweep_leftovers(fs, dir);
  for (const auto& part : {layout.objects(), layout.manifests()}) {
    const bool object = part == layout.objects();
    const std::string part_name = part.filename().string();
    util::FileStat st = fs.lstat(part);
    if (!st.exists) continue;
    auto damaged = [&](const std::string& rel, const std::string& why) {
      report.problems.push_back(part_name + (rel.empty() ? "" : "/" + rel) + ": " + why + ", removed");
      ++report.removed;
      if (auto removed = fs.remove_all(rel.empty() ? part : part / rel); !removed)
        report.problems.back() = part_name + "/" + rel + ": " + why + ", cannot remove: " + removed.error().message;
    };
    if (!st.is_dir) {
      damaged("", st.is_symlink ? "a symbolic link where the cache's directory belongs" : "not a directory");
      continue;
    }
    repair_modes(fs, part, report);
    auto entries = util::walk_tree(fs, part);
    if (!entries) {
      report.problems.push_back(part_name + ": " + entries.error().message);
      continue;
    }
    for (const auto& entry : *entries) {
      size_t depth = std::count(entry.rel.begin(), entry.rel.end(), '/');
      std::string name = fs::path(entry.rel).filename().string();
      if (depth == 0 && entry.type == Type::directory && is_shard_name(name)) continue;
      if (util::temp_sibling_pid(name)) continue;  // another process is writing it (abandoned ones are gone)
      if (depth == 0) {
        damaged(entry.rel, entry.type == Type::directory ? "not a shard directory" : describe(entry.type));
      } else if (depth == 1) {
        object ? ++report.objects : ++report.manifests;
        if (entry.type != Type::file) {
          damaged(entry.rel, describe(entry.type));
        } else if (auto why = entry_damage(fs, part / entry.rel, entry.rel.substr(0, 2), object); !why.empty()) {
          damaged(entry.rel, why);
        }
      }  // deeper: inside something removed above
    }
  }
  return report;
}

}  // namespace kbuild::cache
