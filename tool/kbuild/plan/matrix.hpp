#pragma once
// The build matrix: Torch versions x (CUDA versions | cpu) for x86_64 Linux.
//
// kbuild's default table follows the ecosystem's policy (kernel-builder builds the last two Torch
// releases with the CUDA versions each is published for), restricted to what kbuild can obtain:
// Torch wheels from PyPI, CUDA 13.x from the system or from NVIDIA's PyPI wheels. CUDA 12.x needs a
// user-provided toolkit (--cuda-toolkit 12.6=/path), so it is not in the default table.
//
// A kernel chooses its own matrix in kbuild.toml (config/kbuild_toml.hpp).
//
// Entries are then filtered by build.toml: the backends listed, torch.minver/maxver,
// general.cuda.minver/maxver, and components' cuda-minver. A backend with a stable-ABI version
// (torch.stable-abi) gets one torch-stable-abi variant per compute, compiled against the newest Torch
// left (kernel-builder's rule), and none when that Torch is older than the stable-ABI version. A
// tvm-ffi kernel gets one tvm-ffi<series> variant per compute and no Torch.

#include <optional>
#include <string>
#include <vector>

#include "kbuild/config/kbuild_toml.hpp"
#include "kbuild/config/model.hpp"
#include "kbuild/config/variant.hpp"
#include "kbuild/util/result.hpp"
#include "kbuild/util/version.hpp"

namespace kbuild::plan {

using config::MatrixSpec;
using config::Variant;

struct MatrixEntry {
  Variant variant;
  util::Version torch;                ///< major.minor of the Torch toolchain (unused for noarch and tvm-ffi)
  std::optional<util::Version> cuda;  ///< major.minor of the CUDA toolchain
};

/// Every variant of `spec` that the kernel builds, sorted by name. `notes` explains entries that
/// build.toml's bounds removed (for `kbuild variants`).
std::vector<MatrixEntry> expand_matrix(const config::KernelConfig& config, const MatrixSpec& spec,
                                       std::vector<std::string>* notes = nullptr);

struct MatrixFilter {
  std::vector<std::string> variants;  ///< exact names (--variant)
  std::vector<std::string> torch;     ///< "2.15" (--torch)
  std::vector<std::string> cuda;      ///< "13.2" or "cpu" (--cuda)
};

/// Applies --variant/--torch/--cuda. Error (with suggestions) for a --variant that is not in the
/// matrix, or when nothing is left.
Result<std::vector<MatrixEntry>> filter_matrix(const std::vector<MatrixEntry>& entries, const MatrixFilter& filter);

}  // namespace kbuild::plan
