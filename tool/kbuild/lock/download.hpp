#pragma once
// `kbuild download` as a library function: installs the variants of a kernels.lock into the
// Hugging Face cache (lock/hf_cache.hpp), verified, so that `kernels.get_locked_kernel` and
// `load_kernel` find them without the network.
//
// For each locked (repository, commit): the variant the loader would pick on this machine
// (lock/variant_select.hpp), or every variant. Per variant: its metadata.json is fetched first and
// must carry a digest; the files the Hub lists under build/<variant>/ must be exactly the digested
// ones (plus metadata.json and metadata.json.sigstore); every file is checked against the Hub's id
// (LFS sha256 or git blob id) and against the digest, whether downloaded now or already in the
// cache. Only then are the variant's snapshot links made, in a temporary directory renamed into
// place, so a loader never sees a half-installed variant. A variant that fails a check is not
// installed, and the file that failed is named.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "kbuild/lock/index.hpp"
#include "kbuild/lock/lockfile.hpp"
#include "kbuild/lock/variant_select.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::lock {

struct DownloadOptions {
  bool all_variants = false;
  SystemFacts system;                ///< used unless all_variants
  std::filesystem::path cache_root;  ///< the hub cache (resolve_hf_cache)
  std::function<void(const std::string&)> progress;
  /// A cached file that did not match its id and was downloaded again ("repo@commit path").
  std::function<void(const std::string&)> repaired;
};

struct InstalledVariant {
  std::string repo_id;
  std::string commit;
  std::string variant;
  std::filesystem::path path;  ///< snapshots/<commit>/build/<variant>
  std::size_t files = 0;
  std::size_t downloaded = 0;  ///< files fetched now (the rest were in the cache, re-verified)
  std::uint64_t bytes = 0;
};

struct DownloadOutcome {
  std::vector<InstalledVariant> variants;
};

/// Installs the variants of `entries` (one pass per distinct repository and commit). Stops at the
/// first variant that cannot be installed; variants installed before it stay installed.
Result<DownloadOutcome> download_locked(const std::vector<LockEntry>& entries, const DownloadOptions& options,
                                        KernelIndex& index, util::FileSystem& fs);

}  // namespace kbuild::lock
