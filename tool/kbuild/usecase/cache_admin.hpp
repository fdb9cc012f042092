#pragma once
// `kbuild cache stats|prune|clean|verify` as use cases over the cache directory
// (util/cache_layout.hpp: $KBUILD_CACHE, else $XDG_CACHE_HOME/kbuild, else ~/.cache/kbuild).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "kbuild/cache/compile_cache.hpp"
#include "kbuild/cache/remote.hpp"
#include "kbuild/cache/usage.hpp"
#include "kbuild/usecase/services.hpp"

namespace kbuild::usecase {

struct CacheStatsOutcome {
  std::filesystem::path directory;
  cache::CacheUsage usage;
  cache::CacheSummary summary;  ///< the compile cache's counters
  std::uint64_t cap_bytes = 0;  ///< KBUILD_CACHE_MAX_SIZE
  std::optional<cache::RemoteSettings> remote;
};

/// Nothing to choose yet: the request keeps `kbuild cache stats` on the one shape of every use case.
struct CacheStatsRequest {};

Result<CacheStatsOutcome> cache_stats(const CacheStatsRequest& request, Services& services);

struct CachePruneRequest {
  std::optional<std::string> max_size;  ///< --max-size; default KBUILD_CACHE_MAX_SIZE
  bool dry_run = false;
  bool wait = true;  ///< wait for builds and tests using the cache (else fail)
};

struct CachePruneOutcome {
  std::filesystem::path directory;
  std::uint64_t target_bytes = 0;
  cache::PruneReport report;
};

Result<CachePruneOutcome> cache_prune(const CachePruneRequest& request, Services& services);

struct CacheCleanOutcome {
  std::filesystem::path directory;
  bool toolchains = false;  ///< the toolchains, downloads and test environments went too
};

struct CacheCleanRequest {
  bool toolchains = false;  ///< also the toolchains, downloads and test environments
  bool wait = true;         ///< wait for builds and tests using the cache (else fail), as prune does
};

/// Empties the compile cache (and with `toolchains` the rest), holding the in-use lock exclusively:
/// never what a running build or test uses.
Result<CacheCleanOutcome> cache_clean(const CacheCleanRequest& request, Services& services);

struct CacheVerifyOutcome {
  std::filesystem::path directory;
  cache::CompileCache::VerifyReport report;
};

struct CacheVerifyRequest {};

/// Re-hashes every object and manifest; damaged ones and leftover temporary files are removed.
Result<CacheVerifyOutcome> cache_verify(const CacheVerifyRequest& request, Services& services);

}  // namespace kbuild::usecase
