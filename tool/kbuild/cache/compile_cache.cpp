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

bool is_hex64(const nlohmann::json& value) {
  if (!value.is_string()) return false;
  const auto& text = value.get_ref<const std::string&>();
  return text.size() == 64 &&
         std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// The entries of a manifest, or nullopt when it does not have exactly the documented shape.
std::optional<nlohmann::json> valid_entries(const std::string& text) {
  auto manifest = nlohmann::json::parse(text, nullptr, false);
  if (!manifest.is_object() || !manifest.contains("entries") || !manifest["entries"].is_array()) return std::nullopt;
  for (const auto& entry : manifest["entries"]) {
    if (!entry.is_object() || !is_hex64(entry.value("result", nlohmann::json())) || !entry.contains("inputs") ||
        !entry["inputs"].is_array())
      return std::nullopt;
    for (const auto& input : entry["inputs"])
      if (!input.is_array() || input.size() != 2 || !input[0].is_string() || !is_hex64(input[1])) return std::nullopt;
    if (entry.contains("volatile") && !entry["volatile"].is_string()) return std::nullopt;
  }
  return manifest["entries"];
}

std::string object_header(std::string_view bytes) {
  return "KBOBJ1 " + util::sha256_hex(bytes) + " " + std::to_string(bytes.size()) + "\n";
}

// The bytes of a stored object when its header matches them; nullopt when damaged.
std::optional<std::string> object_bytes(std::string stored) {
  size_t newline = stored.find('\n');
  if (newline == std::string::npos || newline > 100 || !stored.starts_with("KBOBJ1 ")) return std::nullopt;
  std::string header = stored.substr(0, newline + 1);
  std::string bytes = stored.substr(newline + 1);
  if (object_header(bytes) != header) return std::nullopt;
  return bytes;
}
}  // namespace

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

void CompileCache::discard(const fs::path& damaged) {
  ++m_run.corrupt;
  (void)m_fs.remove_all(damaged);
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
  std::string k1;  // the manifest key of a compile job
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
    k1 = manifest_key(job, source_sha);
    auto text = read_tiered(manifest_path(k1), [](const std::string& t) { return valid_entries(t).has_value(); });
    if (!text) return false;
    auto entries = valid_entries(*text);
    if (!entries) {
      discard(manifest_path(k1));  // a damaged manifest is a miss; the next store writes a new one
      return false;
    }
    for (const auto& entry : *entries) {
      if (entry.contains("volatile") && (!job.volatile_define || entry.at("volatile") != job.volatile_define->value))
        continue;  // compiled with another ops id, which the unit names
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
  auto stored = read_tiered(object, [](const std::string& t) { return object_bytes(t).has_value(); });
  if (!stored) return false;
  auto bytes = object_bytes(std::move(*stored));
  if (!bytes) {
    discard(object);
    return false;
  }
  KB_TRY(m_fs.write_file_atomic(job.outputs.front(), *bytes, job.kind == plan::JobKind::link));
  if (job.depfile) {
    std::string depfile = job.outputs.front().string() + ":";
    for (const auto& path : prerequisites) depfile += " \\\n " + util::join(util::split(path, ' '), "\\ ");
    KB_TRY(m_fs.write_file_atomic(*job.depfile, depfile + "\n"));
  }
  (void)m_fs.touch(object);  // least recently used goes first, the manifest of a hit too
  if (!k1.empty()) (void)m_fs.touch(manifest_path(k1));
  return true;
}

void CompileCache::set_remote(RemoteStore* remote, bool writable) {
  m_remote = remote;
  m_remote_writable = writable;
}

void CompileCache::remote_failed(const std::string& message) {
  ++m_run.remote_errors;
  m_remote = nullptr;  // one failure per run: a dead server costs one timeout, not one per job
  m_warn("remote compile cache: " + message + "; building without it for the rest of this run");
}

std::optional<std::string> CompileCache::read_tiered(const fs::path& path,
                                                     const std::function<bool(const std::string&)>& valid) {
  if (auto local = m_fs.read_file(path)) return *local;
  if (!m_remote) return std::nullopt;
  std::string rel = path.lexically_relative(m_dir).generic_string();
  auto fetched = m_remote->get(rel);
  if (!fetched) {
    remote_failed(fetched.error().message);
    return std::nullopt;
  }
  if (!*fetched) return std::nullopt;
  if (!valid(**fetched)) {
    ++m_run.corrupt;  // a damaged remote entry is a miss; the next store replaces it
    return std::nullopt;
  }
  if (rel.starts_with("objects/")) ++m_run.remote_hits;
  m_remote_has.insert(path.string());
  (void)m_fs.write_file_atomic(path, **fetched);
  return std::move(**fetched);
}

void CompileCache::send_to_remote(const fs::path& path, const std::string& bytes) {
  if (!m_remote || !m_remote_writable || m_remote_has.count(path.string())) return;
  if (auto sent = m_remote->put(path.lexically_relative(m_dir).generic_string(), bytes); !sent) {
    remote_failed(sent.error().message);
    return;
  }
  m_remote_has.insert(path.string());
  if (path.lexically_relative(m_dir).generic_string().starts_with("objects/")) ++m_run.remote_stores;
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

Result<void> CompileCache::try_store(const plan::Job& job, const std::vector<std::string>& prerequisites,
                                     bool names_volatile_define) {
  std::optional<std::string> volatile_value;
  if (names_volatile_define && job.volatile_define) volatile_value = job.volatile_define->value;
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
    key = result_key(k1, inputs, volatile_value);
  }
  fs::path object = object_path(key);
  auto existing = m_fs.stat(object).is_file ? m_fs.read_file(object) : Result<std::string>(fail(""));
  if (!existing || !object_bytes(*existing)) {
    KB_TRY_ASSIGN(std::string bytes, m_fs.read_file(job.outputs.front()));
    existing = object_header(bytes) + bytes;
    KB_TRY(m_fs.write_file_atomic(object, *existing));
  }
  send_to_remote(object, *existing);
  if (!k1.empty()) {
    nlohmann::json previous = nlohmann::json::array();
    std::string previous_text;
    if (auto text = m_fs.read_file(manifest_path(k1))) {
      if (auto valid = valid_entries(*text)) previous = *valid;
      previous_text = std::move(*text);
    }
    nlohmann::json entries = nlohmann::json::array();
    nlohmann::json entry = {{"result", key}, {"inputs", nlohmann::json::array()}};
    std::sort(inputs.begin(), inputs.end());
    for (const auto& [path, sha] : inputs) entry["inputs"].push_back({path, sha});
    if (volatile_value) entry["volatile"] = *volatile_value;
    entries.push_back(entry);
    for (const auto& old : previous)
      if (old["result"] != key && entries.size() < k_manifest_entries) entries.push_back(old);
    std::string manifest = nlohmann::json{{"entries", entries}}.dump() + "\n";
    if (manifest != previous_text) {
      KB_TRY(m_fs.write_file_atomic(manifest_path(k1), manifest));
      m_remote_has.erase(manifest_path(k1).string());  // changed: the remote gets the merged list
      send_to_remote(manifest_path(k1), manifest);
    }
  }
  ++m_run.stores;
  return {};
}

void CompileCache::store(const plan::Job& job, const std::vector<std::string>& prerequisites,
                         bool names_volatile_define) {
  if (auto stored = try_store(job, prerequisites, names_volatile_define); !stored) warn_once(stored.error().message);
}

Result<CacheSummary> CompileCache::summarize(const util::FileSystem& fs, const fs::path& dir) {
  CacheSummary summary;
  if (auto text = fs.read_file(util::CacheLayout{dir}.stats())) {
    try {
      auto j = nlohmann::json::parse(*text);
      summary.counters = {j.value("hits", 0ull),          j.value("misses", 0ull),       j.value("stores", 0ull),
                          j.value("errors", 0ull),        j.value("corrupt", 0ull),      j.value("remote_hits", 0ull),
                          j.value("remote_stores", 0ull), j.value("remote_errors", 0ull)};
    } catch (const std::exception&) {
    }
  }
  for (const auto& part : {util::CacheLayout{dir}.objects(), util::CacheLayout{dir}.manifests()}) {
    if (!fs.stat(part).is_dir) continue;
    KB_TRY_ASSIGN(auto files, util::list_files_recursive(fs, part));
    for (const auto& rel : files) {
      summary.bytes += fs.stat(part / rel).size;
      if (part == util::CacheLayout{dir}.objects() && rel.find("/.") == std::string::npos) ++summary.entries;
    }
  }
  return summary;
}

Result<std::uint64_t> CompileCache::evict(util::FileSystem& fs, const fs::path& dir, std::uint64_t target_bytes) {
  struct Object {
    std::int64_t mtime;
    std::uint64_t size;
    fs::path path;
  };
  std::vector<Object> objects;
  std::uint64_t total = 0;
  // Manifests too: they are small, but unbounded otherwise (one per source and flag set ever built).
  for (const auto& part : {util::CacheLayout{dir}.objects(), util::CacheLayout{dir}.manifests()}) {
    if (!fs.stat(part).is_dir) continue;
    KB_TRY_ASSIGN(auto files, util::list_files_recursive(fs, part));
    for (const auto& rel : files) {
      util::FileStat st = fs.stat(part / rel);
      objects.push_back({st.mtime_ns, st.size, part / rel});
      total += st.size;
    }
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

Result<CompileCache::VerifyReport> CompileCache::verify(util::FileSystem& fs, const fs::path& dir) {
  VerifyReport report;
  util::CacheLayout layout{dir};
  if (fs.stat(layout.objects()).is_dir) {
    KB_TRY_ASSIGN(auto files, util::list_files_recursive(fs, layout.objects()));
    for (const auto& rel : files) {
      ++report.objects;
      auto stored = fs.read_file(layout.objects() / rel);
      if (stored && object_bytes(std::move(*stored))) continue;
      KB_TRY(fs.remove_all(layout.objects() / rel));
      ++report.removed;
    }
  }
  if (fs.stat(layout.manifests()).is_dir) {
    KB_TRY_ASSIGN(auto files, util::list_files_recursive(fs, layout.manifests()));
    for (const auto& rel : files) {
      ++report.manifests;
      auto text = fs.read_file(layout.manifests() / rel);
      if (text && valid_entries(*text)) continue;
      KB_TRY(fs.remove_all(layout.manifests() / rel));
      ++report.removed;
    }
  }
  return report;
}

void CompileCache::finish() {
  CacheSummary summary;
  if (auto existing = summarize(m_fs, m_dir)) summary = *existing;
  nlohmann::json stats = {{"hits", summary.counters.hits + m_run.hits},
                          {"misses", summary.counters.misses + m_run.misses},
                          {"stores", summary.counters.stores + m_run.stores},
                          {"errors", summary.counters.errors + m_run.errors},
                          {"corrupt", summary.counters.corrupt + m_run.corrupt},
                          {"remote_hits", summary.counters.remote_hits + m_run.remote_hits},
                          {"remote_stores", summary.counters.remote_stores + m_run.remote_stores},
                          {"remote_errors", summary.counters.remote_errors + m_run.remote_errors}};
  if (!m_fs.write_file_atomic(util::CacheLayout{m_dir}.stats(), stats.dump() + "\n")) return;
  if (m_run.stores > 0 && summary.bytes > m_max_bytes) (void)evict(m_fs, m_dir, m_max_bytes / 10 * 9);
}

}  // namespace kbuild::cache
