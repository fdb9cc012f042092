#pragma once
// The content-addressed compile cache (keys: cache/key.hpp). It serves compile and link jobs of
// any kernel, checkout and variant from $KBUILD_CACHE/objects, so a .cu that does not include Torch
// headers is compiled once per CUDA version and architecture list and reused by every Torch
// version. A cache problem is a warning, never a failed build.
//
// On-disk format under the cache directory (entries: cache/entry.hpp, which binds each to its key):
//   objects/<k[0:2]>/<k>        the output of a job (object file or shared library), key k
//   manifests/<m[0:2]>/<m>      for manifest key m, up to 16 entries, newest first: the prerequisites
//                               the compiler read (paths normalised: $K/..., $TORCH/..., $CUDA/...)
//                               with their content hashes, the result key, and, only when the unit
//                               names the job's volatile define (the ops id), the value it was
//                               compiled with (an entry with it serves only that value). A hit
//                               rewrites the job's depfile from the entry.
//   stats                       JSON counters {"hits", "misses", "stores", "errors", "corrupt",
//                               "remote_hits", "remote_stores", "remote_errors"}
//                               summed over runs
// Every file is written to a temporary name (util::temp_sibling) and renamed into place; the
// temporary files of processes that died are swept by the next build that compiles (and by
// `cache verify`). Beyond the size cap, objects and manifests are evicted oldest (by modification
// time, refreshed on every hit) first; tmp/ (downloads and staging of running processes) is counted
// by `cache stats` and swept once its process is gone, but never makes entries go.
//
// The cache trusts nothing it reads: only regular files at entry positions are read (a link, a
// FIFO, a device or a directory there is damage; a linked shard or part directory too, removed as a
// link, never followed); an object is restored only when its header names its key and its bytes
// hash to the header's sha256; a manifest must name its key and each entry's result must be the key
// of its inputs. Anything else is a miss: the damaged file is removed, named in a warning and
// counted ("corrupt"), and the job runs as if the cache were empty: a damaged cache never fails a
// build and never yields a bad output. Someone who can write the cache directory can still plant
// an entry with a consistent header: the cache is as trusted as the compiler it stands in for.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kbuild/cache/remote.hpp"
#include "kbuild/exec/job_cache.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/result.hpp"
#include "kbuild/util/system.hpp"

namespace kbuild::cache {

struct CacheCounters {
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t stores = 0;
  std::uint64_t errors = 0;
  std::uint64_t corrupt = 0;        ///< damaged entries found (and removed)
  std::uint64_t remote_hits = 0;    ///< objects fetched from the remote tier (verified)
  std::uint64_t remote_stores = 0;  ///< objects sent to the remote tier
  std::uint64_t remote_errors = 0;  ///< remote requests that failed (each a miss, never a failed build)
};

struct CacheSummary {
  CacheCounters counters;  ///< cumulative
  std::uint64_t entries = 0;
  std::uint64_t bytes = 0;
};

class CompileCache final : public exec::JobCache {
 public:
  CompileCache(util::FileSystem& fs, std::filesystem::path dir, std::uint64_t max_bytes,
               std::function<void(const std::string&)> warn);
  /// Adds the shared tier (cache/remote.hpp): local misses are looked up there, and with `writable`
  /// what is stored locally is sent there too.
  void set_remote(RemoteStore* remote, bool writable);
  /// A cache on a read-only file system: entries are used as they are; nothing is stored, touched,
  /// removed or counted (a remote hit is used and not kept).
  void set_read_only() { m_read_only = true; }

  bool restore(const plan::Job& job) override;
  void store(const plan::Job& job, const std::vector<std::string>& prerequisites, bool names_volatile_define) override;
  /// Adds this run's counters to the stats file and evicts beyond the size cap. Best effort.
  void finish();
  const CacheCounters& run_counters() const { return m_run; }

  /// Reads the stats file and sizes what the cap bounds (objects, manifests, tmp/).
  static Result<CacheSummary> summarize(const util::FileSystem& fs, const std::filesystem::path& dir);
  struct VerifyReport {
    std::uint64_t objects = 0;
    std::uint64_t manifests = 0;
    std::uint64_t removed = 0;          ///< damaged objects, manifests and stray files removed
    std::uint64_t leftovers = 0;        ///< temporary files of dead processes removed
    std::vector<std::string> problems;  ///< "objects/ab/abcd...: why, removed", one per problem
  };
  /// Checks every object and manifest (`kbuild cache verify`), removing damaged ones and stray
  /// files, making unreadable shard directories readable again; one bad entry never stops it.
  static Result<VerifyReport> verify(util::FileSystem& fs, const std::filesystem::path& dir);
  /// Removes the temporary files and staging directories of processes that no longer run
  /// (util::abandoned_temp) in every part of the cache; returns how many.
  static std::uint64_t sweep_leftovers(util::FileSystem& fs, const std::filesystem::path& dir);
  /// Removes objects until their total is at most `target_bytes`, oldest first; returns bytes freed.
  static Result<std::uint64_t> evict(util::FileSystem& fs, const std::filesystem::path& dir,
                                     std::uint64_t target_bytes);

 private:
  Result<std::string> content_sha256(const std::string& path);
  Result<bool> try_restore(const plan::Job& job);
  Result<void> try_store(const plan::Job& job, const std::vector<std::string>& prerequisites,
                         bool names_volatile_define);
  std::filesystem::path object_path(const std::string& key) const;
  std::filesystem::path manifest_path(const std::string& key) const;
  void warn_once(const std::string& message);
  bool m_read_only = false;
  /// Removes a damaged cache file and counts it, naming it in a warning (never an error: the job
  /// just runs).
  void discard(const std::filesystem::path& damaged, const std::string& why);
  /// True when `path` is a regular file under real directories of the cache; a link, FIFO or
  /// directory in its place (or in place of its directories) is discarded as damage.
  bool usable_slot(const std::filesystem::path& path);
  /// The local file at `path` (under the cache directory), fetched from the remote tier into place
  /// when it is missing locally and `valid` accepts what the remote sent.
  std::optional<std::string> read_tiered(const std::filesystem::path& path,
                                         const std::function<bool(const std::string&)>& valid);
  void send_to_remote(const std::filesystem::path& path, const std::string& bytes);
  void remote_failed(const std::string& message);

  util::FileSystem& m_fs;
  std::filesystem::path m_dir;
  std::uint64_t m_max_bytes;
  std::function<void(const std::string&)> m_warn;
  bool m_warned = false;
  CacheCounters m_run;
  RemoteStore* m_remote = nullptr;
  bool m_remote_writable = false;
  std::set<std::string> m_remote_has;  ///< paths fetched from the remote in this run (not sent back)
  struct Memo {
    std::int64_t mtime_ns;
    std::uint64_t size;
    std::string sha256;
  };
  std::map<std::string, Memo> m_hashes;
};

/// The size cap of the compile cache: $KBUILD_CACHE_MAX_SIZE, default 10 GiB. Sizes are a number
/// (decimals allowed) with an optional unit K, M, G or T, each optionally followed by "B" or "iB";
/// all units are binary (1G = 1GB = 1GiB = 2^30 bytes). Anything else is an error (exit code 2).
Result<std::uint64_t> max_cache_bytes(const util::Environment& env);

}  // namespace kbuild::cache
