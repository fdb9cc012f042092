#pragma once
// `kbuild toolchains lock|fetch|verify` as use cases: pin every toolchain of the kernel's matrix in
// kbuild.lock (Torch and CUDA wheels, tvm-ffi, CUTLASS, the host GCC), download, verify and unpack
// them into the toolchain cache ahead of a build, and check what the pins prove without downloading
// them (toolchain/provenance.hpp). Provisioning progress goes to reporter.info.

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
  std::string python = "python3";            ///< whose pip downloads and whose headers are used
  bool locked = false;                       ///< fail instead of adding pins
  std::vector<std::string> cuda_toolkits;    ///< VERSION=PATH
  std::vector<std::string> allowed_origins;  ///< --allow-toolchain-origin URL
  bool download_progress = false;            ///< let pip draw progress bars (a terminal)
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

struct ToolchainsVerifyRequest {
  std::filesystem::path kernel_dir;
  std::vector<std::string> allowed_origins;  ///< --allow-toolchain-origin URL
};

/// What one kbuild.lock entry's pins prove.
struct PinVerdict {
  std::string entry;  ///< "gcc-12.2", "torch-2.11"
  std::size_t pins = 0;
  toolchain::PinProof proof = toolchain::PinProof::pypi_listed;
  std::optional<Error> problem = {};  ///< set: the entry's pins are not what upstream published
};

struct ToolchainsVerifyOutcome {
  std::filesystem::path lock_path;
  std::vector<PinVerdict> verdicts;  ///< one per kbuild.lock entry, in its order
  bool all_proven() const;
};

/// Checks every pin of kbuild.lock against Debian's signed indices and PyPI, downloading only indices.
Result<ToolchainsVerifyOutcome> verify_toolchains(const ToolchainsVerifyRequest& request, Services& services);

}  // namespace kbuild::usecase
