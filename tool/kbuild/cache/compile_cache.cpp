#include "kbuild/cache/compile_cache.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>

#include "kbuild/cache/entry.hpp"
#include "kbuild/cache/key.hpp"
#include "kbuild/exec/depfile.hpp"
#include "kbuild/util/cache_layout.hpp"
#include "kbuild/util/hash.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::cache {

namespace fs = std::filesystem;

namespace {
// A manifest lists the header sets seen for one (command, source) pair, newest first. Sixteen covers
// a kernel switching between a few Torch or CUDA versions and branches; beyond that the oldest
// header sets go, costing at worst a recompile.
constexpr size_t k_manifest_entries = 16;
constexpr std::uint64_t k_named_warnings = 3;  ///< damaged entries named per run; the rest are counted
}  // namespace

Result<std::uint64_t> max_cache_bytes(const util::Environment& env) {
  auto text = env.get("KBUILD_CACHE_MAX_SIZE");
  if (!text || text->empty()) return std::uint64_t{10} << 30;
  auto size = util::parse_byte_size(*text);
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

void CompileCache::discard(const fs::path& damaged, const std::string& why) {
  ++m_run.corrupt;
  if (m_read_only) return;         // a miss; a writable cache's next store replaces it
  (void)m_fs.remove_all(damaged);  // a link is removed itself, never what it points at
  if (!m_warn) return;
  if (m_run.corrupt <= k_named_warnings)
    m_warn("compile cache: removed the damaged entry " + damaged.lexically_relative(m_dir).generic_string() + " (" +
           why + "); the job runs again");
  else if (m_run.corrupt == k_named_warnings + 1)
    m_warn("compile cache: more damaged entries removed (see `kbuild cache stats` for the count)");
}

bool CompileCache::usable_slot(const fs::path& path) {
  // The part and shard directories must be directories of the cache itself, not links out of it.
  for (const fs::path& dir : {path.parent_path().parent_path(), path.parent_path()}) {
    util::FileStat st = m_fs.lstat(dir);
    if (!st.exists) return false;
    if (!st.is_dir) {
      discard(dir, st.is_symlink ? "a symbolic link where a directory belongs" : "not a directory");
      return false;
    }
  }
  util::FileStat st = m_fs.lstat(path);
  if (!st.exists || st.is_file) return st.exists;
  discard(path, st.is_symlink ? "a symbolic link" : st.is_dir ? "a directory" : "not a regular file");
  return false;
}

void CompileCache::warn_once(const std::string& message) {
  ++m_run.errors;
  if (!m_warned && m_warn) m_warn("compile cache: " + message + " (building without it)");
  m_warned = true;
}

// Memoised by (mtime, size) within one run: a header included by every unit is hashed once, not once
// per job. Across runs nothing is trusted from timestamps: each run hashes again.
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

// Two lookups, as ccache's "direct mode": a compile's manifest key (compiler, flags, source content;
// key.hpp) finds the header sets that compiling it read before; the first set whose headers all
// still have the recorded hashes names the object. A link's key is its command and the hashes of its
// inputs, whose objects were themselves verified. Every restored byte is checked against its key
// (decode_object) and must be an ELF of the job's kind before it is written.
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
    std::string why;
    auto text =
        read_tiered(manifest_path(k1), [&](const std::string& t) { return decode_manifest(t, k1, why).has_value(); });
    if (!text) return false;
    auto entries = decode_manifest(*text, k1, why);
    if (!entries) {
      discard(manifest_path(k1), why);  // a damaged manifest is a miss; the next store writes a new one
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
  std::string why;
  auto stored = read_tiered(object, [&](const std::string& t) { return decode_object(t, key, why).has_value(); });
  if (!stored) return false;
  auto bytes = decode_object(std::move(*stored), key, why);
  if (bytes && !plausible_output(job.kind == plan::JobKind::link, *bytes)) {
    bytes.reset();
    why = std::string("not an ELF ") + (job.kind == plan::JobKind::link ? "shared library" : "object file");
  }
  if (!bytes) {
    discard(object, why);
    return false;
  }
  KB_TRY(m_fs.write_file_atomic(job.outputs.front(), *bytes, job.kind == plan::JobKind::link));
  if (job.depfile) {
    std::string depfile = job.outputs.front().string() + ":";
    for (const auto& path : prerequisites) depfile += " \\\n " + util::join(util::split(path, ' '), "\\ ");
    KB_TRY(m_fs.write_file_atomic(*job.depfile, depfile + "\n"));
  }
  if (!m_read_only) {
    (void)m_fs.touch(object);  // least recently used goes first, the manifest of a hit too
    if (!k1.empty()) (void)m_fs.touch(manifest_path(k1));
  }
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

// Local first, then the remote cache. A remote entry is validated before use and kept locally, so
// the next run does not ask again; a damaged one is only a miss (it cannot be removed from here, and
// the next store replaces it).
std::optional<std::string> CompileCache::read_tiered(const fs::path& path,
                                                     const std::function<bool(const std::string&)>& valid) {
  if (usable_slot(path)) {
    if (auto local = m_fs.read_file(path)) return *local;
  }
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
  if (!m_read_only) (void)m_fs.write_file_atomic(path, **fetched);
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
  KB_TRY_ASSIGN(std::string bytes, m_fs.read_file(job.outputs.front()));
  std::string encoded = encode_object(key, bytes);
  encoded += bytes;
  // An entry with other bytes under this key (a link retried without the cache compiled it again)
  // is replaced: what was just built is what the key stands for now.
  auto existing = usable_slot(object) ? m_fs.read_file(object) : Result<std::string>(fail(""));
  if (!existing || *existing != encoded) KB_TRY(m_fs.write_file_atomic(object, encoded));
  send_to_remote(object, encoded);
  if (!k1.empty()) {
    nlohmann::json previous = nlohmann::json::array();
    std::string previous_text;
    if (auto text = usable_slot(manifest_path(k1)) ? m_fs.read_file(manifest_path(k1)) : fail("")) {
      std::string why;
      if (auto valid = decode_manifest(*text, k1, why)) previous = *valid;
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
    std::string manifest = encode_manifest(k1, entries);
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
  if (m_read_only) return;
  if (auto stored = try_store(job, prerequisites, names_volatile_define); !stored) warn_once(stored.error().message);
}

// Eviction runs once per build, down to 90 % of the cap, so that a cache at its cap is not scanned
// again after every build that adds one object.
void CompileCache::finish() {
  if (m_read_only) return;
  (void)sweep_leftovers(m_fs, m_dir);
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
  if (summary.bytes > m_max_bytes) (void)evict(m_fs, m_dir, m_max_bytes / 10 * 9);
}

}  // namespace kbuild::cache
