#pragma once
// The consumer side offline (HF_HUB_OFFLINE=1, or --offline): a KernelIndex over the Hugging Face
// cache (lock/hf_cache.hpp) instead of the Hub, so that `lock --check`, `download`, `versions` and
// `info` answer from kernels.lock and what was downloaded before, and name what is missing.
//
//   - revisions: the snapshots/<commit>/ a download made; the cache's refs/<name> files (written by
//     huggingface_hub and the `kernels` loader, not by kbuild) name branches and tags;
//   - files: the snapshot's links, each naming its blob (blobs/<etag>: the LFS sha256 or the git blob
//     id), which the caller verifies as it would a download;
//   - publishers: only those of repositories kernels.lock already holds count as trusted (they were
//     checked when the lock was made); any other question is an error;
//   - fetching is impossible: a file that is missing or damaged in the cache is an error.
// Every error is a network error (exit code 4) that names the repository, commit or file missing and
// says how to get it.

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kbuild/lock/index.hpp"
#include "kbuild/util/fs.hpp"

namespace kbuild::lock {

class CacheKernelIndex final : public KernelIndex {
 public:
  /// `cache_root`: the hub cache; `locked_repos`: the repository ids kernels.lock holds.
  CacheKernelIndex(const util::FileSystem& fs, std::filesystem::path cache_root, std::set<std::string> locked_repos)
      : m_fs(fs), m_root(std::move(cache_root)), m_locked(std::move(locked_repos)) {}

  Result<bool> trusted_publisher(const std::string& ns) override;
  Result<hub::Refs> refs(const std::string& repo_id) override;
  Result<std::vector<std::string>> variant_dirs(const std::string& repo_id, const std::string& commit) override;
  Result<std::vector<hub::RemoteFile>> list_files(const std::string& repo_id, const std::string& commit,
                                                  const std::string& folder) override;
  Result<std::string> read_file(const std::string& repo_id, const std::string& commit,
                                const std::string& path) override;
  Result<void> fetch(const std::string& repo_id, const std::string& commit, const std::string& path,
                     const std::filesystem::path& destination) override;

 private:
  std::filesystem::path snapshot(const std::string& repo_id, const std::string& commit) const;
  Result<std::filesystem::path> existing_snapshot(const std::string& repo_id, const std::string& commit) const;

  const util::FileSystem& m_fs;
  std::filesystem::path m_root;
  std::set<std::string> m_locked;
};

/// Whether HF_HUB_OFFLINE asks for offline work (1, true, yes or on, as huggingface_hub reads it).
bool offline_requested(const std::map<std::string, std::string>& env);

}  // namespace kbuild::lock
