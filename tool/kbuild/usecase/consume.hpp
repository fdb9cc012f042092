#pragma once
// The consumer side as use cases, over the Hub of services.http (usecase/hub_access.hpp):
//   lock      pyproject.toml's [tool.kernels.dependencies] -> kernels.lock (lock/project.hpp)
//   download  kernels.lock -> the variants this machine loads, in the Hugging Face cache
//             (lock/download.hpp)
// Progress goes to reporter.info, warnings to reporter.warning (a damaged cached file that download
// replaced, too), pyproject's problems to reporter.diagnostics. Offline (HF_HUB_OFFLINE=1 or
// --offline), both read the Hugging Face cache instead of the Hub (lock/cache_index.hpp).

#include <filesystem>
#include <optional>
#include <string>

#include "kbuild/lock/download.hpp"
#include "kbuild/lock/project.hpp"
#include "kbuild/usecase/services.hpp"

namespace kbuild::usecase {

struct LockKernelsRequest {
  std::filesystem::path project_dir;  ///< absolute; holds pyproject.toml
  lock::LockMode mode = lock::LockMode::write;
  bool upgrade_all = false;
  std::set<std::string> upgrade;  ///< repository ids resolved again
  std::set<std::string> trusted;  ///< namespaces or repository ids trusted without asking the Hub
  std::optional<std::string> endpoint;
  bool offline = false;  ///< --offline; HF_HUB_OFFLINE too: only kernels.lock and the cache (lock/cache_index.hpp)
};

using LockKernelsOutcome = lock::LockProjectOutcome;

Result<LockKernelsOutcome> lock_kernels(const LockKernelsRequest& request, Services& services);

struct DownloadRequest {
  std::filesystem::path project_dir;  ///< absolute; holds kernels.lock
  bool all_variants = false;          ///< every variant, not only what this machine loads
  std::string python = "python3";     ///< whose Torch decides the variant (unless all_variants)
  std::optional<std::string> endpoint;
  bool offline = false;  ///< --offline; HF_HUB_OFFLINE too: verify the cache, fetch nothing
};

struct DownloadOutcome {
  std::vector<lock::InstalledVariant> variants;
  std::filesystem::path cache;  ///< the Hugging Face hub cache they are in
  std::string cache_origin;     ///< which setting named it (HF_HUB_CACHE, HF_HOME, the default)
  std::uint64_t bytes_downloaded = 0;
  std::string system;  ///< the machine the variants were chosen for (empty with all_variants)
  bool offline = false;
  std::vector<std::string> repaired;  ///< damaged cached files replaced by a fresh download
};

/// Into the Hugging Face cache the `kernels` package reads (HF_HUB_CACHE, HF_HOME, ~/.cache).
Result<DownloadOutcome> download(const DownloadRequest& request, Services& services);

}  // namespace kbuild::usecase
