#pragma once
// `kbuild toolchains lock|fetch` as use cases: pin every toolchain of the kernel's matrix in
// kbuild.lock (Torch and CUDA wheels, tvm-ffi, CUTLASS), and download, verify and unpack them into
// the toolchain cache ahead of a build. Provisioning progress goes to reporter.info.

#include <deque>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/toolchain/provision.hpp"
#include "kbuild/toolchain/toolchain.hpp"
#include "kbuild/usecase/services.hpp"

namespace kbuild::usecase {

struct ToolchainsLockRequest {
  std::filesystem::path kernel_dir;  ///< absolute
  std::string python = "python3";    ///< whose pip resolves
  bool update = false;               ///< re-resolve to the newest patch releases
};

struct ToolchainsLockOutcome {
  std::filesystem::path lock_path;
  bool up_to_date = false;                                ///< nothing changed; nothing written
  std::vector<std::pair<std::string, std::string>> pins;  ///< toolchain name -> "package version"
};

Result<ToolchainsLockOutcome> lock_toolchains(const ToolchainsLockRequest& request, Services& services);

struct ToolchainsFetchRequest {
  std::filesystem::path kernel_dir;
  std::string python = "python3";          ///< whose pip downloads and whose headers are used
  bool locked = false;                     ///< fail instead of adding pins
  std::vector<std::string> cuda_toolkits;  ///< VERSION=PATH
  bool download_progress = false;          ///< let pip draw progress bars (a terminal)
};

struct ToolchainsFetchOutcome {
  std::deque<toolchain::Toolchain> toolchains;  ///< one per Torch x CUDA of the matrix
  std::optional<toolchain::TvmFfiInstall> tvm_ffi;
  std::vector<toolchain::HeaderLibrary> headers;  ///< CUTLASS and other header-only dependencies
  std::size_t variants = 0;
  std::filesystem::path cache;  ///< the toolchain cache directory
};

/// New pins are written to kbuild.lock even when a later download fails (a retry fetches the same).
Result<ToolchainsFetchOutcome> fetch_toolchains(const ToolchainsFetchRequest& request, Services& services);

}  // namespace kbuild::usecase
