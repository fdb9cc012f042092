#include "kbuild/cache/compile_cache.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>

#include "kbuild/cache/key.hpp"
#include "kbuild/exec/depfile.hpp"
#include "kbuild/util/cache_layout.hpp"
#include "kbuild/util/hash.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::cache {

namespace fs = std::filesystem;

namespace {
constexpr size_t k_manifest_entries = 16;
}

std::optional<std::uint64_t> parse_size(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && ((text[digits] >= '0' && text[digits] <= '9') || text[digits] == '.')) ++digits;
  std::string number(text.substr(0, digits));
  std::string unit(text.substr(digits));
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (number.empty() || number.front() == '.' || std::count(number.begin(), number.end(), '.') > 1) return std::nullopt;
  static const std::pair<const char*, int> k_units[] = {{"", 0}, {"B", 0}, {"K", 10}, {"M", 20}, {"G", 30}, {"T", 40}};
  for (auto [name, shift] : k_units) {
    std::string base(name);
    bool matches = unit == base || (shift > 0 && (unit == base + "B" || unit == base + "IB"));
    if (!matches) continue;
    long double value = std::stold(number) * static_cast<long double>(1ull << shift);
    if (value >= 9.2e18L) return std::nullopt;
    return static_cast<std::uint64_t>(value);
  }
  return std::nullopt;
}

Result<std::uint64_t> max_cache_bytes(const util::Environment& env) {
  auto text = env.get("KBUILD_CACHE_MAX_SIZE");
  if (!text || text->empty()) return std::uint64_t{10} << 30;
  auto size = parse_size(*text);
  if (!size)
    return fail("KBUILD_CACHE_MAX_SIZE=\"" + *text + "\" is not a size",
                "write a number with an optional unit K, M, G or T (binary: 10G = 10 GiB), e.g. 20G", ExitCode::usage);
  return *size;
}

CompileCache::CompileCache(util::FileSystem& fs, fs::path dir, std::uint64_t max_bytes,
                           std::function<void(const std::string&)> warn)
    : m_fs(fs), m_dir(std::move(dir)), m_max_bytes(max_bytes), m_warn(std::move(warn)) {}

fs::path CompileCache::object_path(const std::string& key) const {
  return util::CacheLayout{m_dir}.objects() / key.substr(0, 2) / key;
}
fs::path CompileCache::manifest_path(const std::string& key) const {
  return util::CacheLayout{m_dir}.manifests() / key.substr(0, 2) / key;
}

void CompileCache::warn_once(const std::string& message) {
  ++m_run.errors;
  if (!m_warned && m_warn) m_warn("compile cache: " + message + " (building without it)");
  m_warned = true;
}

Result<std::string> CompileCache::content_sha256(const std::string& path) {
  util::FileStat st = m_fs.stat(path);
  if (!st.is_file) return fail("missing " + path);
  auto it = m_hashes.find(path);
  if (it != m_hashes.end() && it->second.mtime_ns == st.mtime_ns && it->second.size == st.size)
    return it->second.sha256;
  KB_TRY_ASSIGN(std::string content, m_fs.read_file(path));
  std::string sha = util::sha256_hex(content);
  m_hashes[path] = {st.mtime_ns, st.size, sha};
  return sha;
}

Result<bool> CompileCache::try_restore(const plan::Job& job) {
  std::string key;
  std::vector<std::string> prerequisites;
  if (job.kind == plan::JobKind::link) {
    std::vector<std::string> shas;
    for (const auto& input : job.inputs) {
      KB_TRY_ASSIGN(std::string sha, content_sha256(input.string()));
      shas.push_back(sha);
    }
    key = link_key(job, shas);
  } else {
    KB_TRY_ASSIGN(std::string source_sha, content_sha256(job.inputs.front().string()));
    std::string k1 = manifest_key(job, source_sha);
    auto text = m_fs.read_file(manifest_path(k1));
    if (!text) return false;
    nlohmann::json manifest;
    try {
      manifest = nlohmann::json::parse(*text);
    } catch (const std::exception&) {
      return false;  // a damaged manifest is a miss; the next store rewrites it
    }
    for (const auto& entry : manifest.value("entries", nlohmann::json::array())) {
      bool match = true;
      std::vector<std::string> paths;
      for (const auto& input : entry.at("inputs")) {
        std::string path = denormalize_path(input.at(0).get<std::string>(), job.path_roots);
        auto sha = content_sha256(path);
        if (!sha || *sha != input.at(1).get<std::string>()) {
          match = false;
          break;
        }
        paths.push_back(path);
      }
      if (match) {
        key = entry.at("result").get<std::string>();
        prerequisites = std::move(paths);
        break;
      }
    }
    if (key.empty()) return false;
  }
  fs::path object = object_path(key);
  auto bytes = m_fs.read_file(object);
  if (!bytes) return false;
  KB_TRY(m_fs.write_file_atomic(job.outputs.front(), *bytes, job.kind == plan::JobKind::link));
  if (job.depfile) {
    std::string depfile = job.outputs.front().string() + ":";
    for (const auto& path : prerequisites) depfile += " \\\n " + util::join(util::split(path, ' '), "\\ ");
    KB_TRY(m_fs.write_file_atomic(*job.depfile, depfile + "\n"));
  }
  (void)m_fs.touch(object);  // least recently used goes first
  return true;
}

bool CompileCache::restore(const plan::Job& job) {
  auto hit = try_restore(job);
  if (!hit) {
    warn_once(hit.error().message);
    ++m_run.misses;
    return false;
  }
  ++(*hit ? m_run.hits : m_run.misses);
  return *hit;
}

Result<void> CompileCache::try_store(const plan::Job& job, const std::vector<std::string>& prerequisites) {
  std::string key;
  std::vector<std::pair<std::string, std::string>> inputs;
  std::string k1;
  if (job.kind == plan::JobKind::link) {
    std::vector<std::string> shas;
    for (const auto& input : job.inputs) {
      KB_TRY_ASSIGN(std::string sha, content_sha256(input.string()));
      shas.push_back(sha);
    }
    key = link_key(job, shas);
  } else {
    KB_TRY_ASSIGN(std::string source_sha, content_sha256(job.inputs.front().string()));
    k1 = manifest_key(job, source_sha);
    for (const auto& path : prerequisites) {
      KB_TRY_ASSIGN(std::string sha, content_sha256(path));
      inputs.emplace_back(normalize_path(path, job.path_roots), sha);
    }
    key = result_key(k1, inputs);
  }
  fs::path object = object_path(key);
  if (!m_fs.stat(object).is_file) {
    KB_TRY_ASSIGN(std::string bytes, m_fs.read_file(job.outputs.front()));
    KB_TRY(m_fs.write_file_atomic(object, bytes));
  }
  if (!k1.empty()) {
    nlohmann::json manifest = {{"entries", nlohmann::json::array()}};
    if (auto text = m_fs.read_file(manifest_path(k1))) {
      try {
        manifest = nlohmann::json::parse(*text);
      } catch (const std::exception&) {
      }
    }
    nlohmann::json entries = nlohmann::json::array();
    nlohmann::json entry = {{"result", key}, {"inputs", nlohmann::json::array()}};
    std::sort(inputs.begin(), inputs.end());
    for (const auto& [path, sha] : inputs) entry["inputs"].push_back({path, sha});
    entries.push_back(entry);
    for (const auto& old : manifest.value("entries", nlohmann::json::array()))
      if (old.value("result", "") != key && entries.size() < k_manifest_entries) entries.push_back(old);
    KB_TRY(m_fs.write_file_atomic(manifest_path(k1), nlohmann::json{{"entries", entries}}.dump() + "\n"));
  }
  ++m_run.stores;
  return {};
}

void CompileCache::store(const plan::Job& job, const std::vector<std::string>& prerequisites) {
  if (auto stored = try_store(job, prerequisites); !stored) warn_once(stored.error().message);
}

Result<CacheSummary> CompileCache::summarize(const util::FileSystem& fs, const fs::path& dir) {
  CacheSummary summary;
  if (auto text = fs.read_file(util::CacheLayout{dir}.stats())) {
    try {
      auto j = nlohmann::json::parse(*text);
      summary.counters = {j.value("hits", 0ull), j.value("misses", 0ull), j.value("stores", 0ull),
                          j.value("errors", 0ull)};
    } catch (const std::exception&) {
    }
  }
  if (fs.stat(util::CacheLayout{dir}.objects()).is_dir) {
    KB_TRY_ASSIGN(auto files, util::list_files_recursive(fs, util::CacheLayout{dir}.objects()));
    for (const auto& rel : files) {
      summary.bytes += fs.stat(util::CacheLayout{dir}.objects() / rel).size;
      if (rel.find("/.") == std::string::npos) ++summary.entries;
    }
  }
  return summary;
}

Result<std::uint64_t> CompileCache::evict(util::FileSystem& fs, const fs::path& dir, std::uint64_t target_bytes) {
  if (!fs.stat(util::CacheLayout{dir}.objects()).is_dir) return std::uint64_t{0};
  KB_TRY_ASSIGN(auto files, util::list_files_recursive(fs, util::CacheLayout{dir}.objects()));
  struct Object {
    std::int64_t mtime;
    std::uint64_t size;
    fs::path path;
  };
  std::vector<Object> objects;
  std::uint64_t total = 0;
  for (const auto& rel : files) {
    util::FileStat st = fs.stat(util::CacheLayout{dir}.objects() / rel);
    objects.push_back({st.mtime_ns, st.size, util::CacheLayout{dir}.objects() / rel});
    total += st.size;
  }
  std::sort(objects.begin(), objects.end(), [](const Object& a, const Object& b) { return a.mtime < b.mtime; });
  std::uint64_t freed = 0;
  for (const auto& object : objects) {
    if (total - freed <= target_bytes) break;
    KB_TRY(fs.remove_all(object.path));
    freed += object.size;
  }
  return freed;
}

void CompileCache::finish() {
  CacheSummary summary;
  if (auto existing = summarize(m_fs, m_dir)) summary = *existing;
  nlohmann::json stats = {{"hits", summary.counters.hits + m_run.hits},
                          {"misses", summary.counters.misses + m_run.misses},
                          {"stores", summary.counters.stores + m_run.stores},
                          {"errors", summary.counters.errors + m_run.errors}};
  if (!m_fs.write_file_atomic(util::CacheLayout{m_dir}.stats(), stats.dump() + "\n")) return;
  if (m_run.stores > 0 && summary.bytes > m_max_bytes) (void)evict(m_fs, m_dir, m_max_bytes / 10 * 9);
}

}  // namespace kbuild::cache
