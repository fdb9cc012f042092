#pragma once
// The parts of a matrix build shared by `build --matrix`, `variants` and `toolchains`: reading the
// kernel's matrix (kbuild.toml or kbuild's default table) and lock file, and provisioning the
// toolchains of a set of variants.

#include <deque>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kbuild/config/diagnostic.hpp"
#include "kbuild/config/model.hpp"
#include "kbuild/plan/matrix.hpp"
#include "kbuild/plan/planner.hpp"
#include "kbuild/toolchain/lock.hpp"
#include "kbuild/toolchain/provision.hpp"
#include "kbuild/toolchain/toolchain.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::usecase {

struct MatrixSession {
  std::filesystem::path kernel_dir;
  std::filesystem::path lock_path;  ///< <kernel>/kbuild.lock
  bool lock_existed = false;
  plan::MatrixSpec spec;
  toolchain::LockFile lock;
  std::vector<plan::MatrixEntry> all;       ///< the kernel's matrix
  std::vector<plan::MatrixEntry> selected;  ///< after --variant/--torch/--cuda
  std::vector<std::string> notes;           ///< entries build.toml's bounds removed
};

/// Reads kbuild.toml (diagnostics to `sink`; error exit 2) and kbuild.lock; `locked` requires the lock.
/// An empty matrix is an error unless `allow_empty` (kbuild variants lists it with the reasons).
/// The names of every variant of the kernel's matrix (kbuild.toml, or the default table); an error
/// when kbuild.toml or kbuild.lock cannot be read.
Result<std::vector<std::string>> matrix_variant_names(const util::FileSystem& fs, const config::KernelConfig& config,
                                                      const std::filesystem::path& kernel_dir);

Result<MatrixSession> open_matrix(const util::FileSystem& fs, const config::KernelConfig& config,
                                  const std::filesystem::path& kernel_dir, const plan::MatrixFilter& filter,
                                  bool locked, const config::DiagnosticSink& sink, bool allow_empty = false);

/// Parses repeated --cuda-toolkit VERSION=PATH options.
Result<std::map<std::string, std::filesystem::path>> parse_cuda_toolkits(const std::vector<std::string>& options);

/// What provisioning checks a pin against (toolchain/provenance.hpp): the Debian archive keyring
/// ($KBUILD_DEBIAN_KEYRING, else the system's; its absence is an error only when a .deb must be
/// checked), PyPI's Simple API ($KBUILD_PYPI_SIMPLE), and the origins trusted as they are: `allowed`
/// (--allow-toolchain-origin) and the user config's toolchain-origins.
Result<void> apply_provenance_settings(toolchain::ProvisionOptions& options, const util::FileSystem& fs,
                                       const util::Environment& env, const std::vector<std::string>& allowed);

/// Pins every Torch and CUDA (13+) toolchain of `entries` in the provisioner's lock and drops the
/// pins of toolchains they no longer use (`kbuild toolchains lock`).
/// Whether the matrix has tvm-ffi variants (which need the tvm-ffi toolchain).
bool needs_tvm_ffi(const std::vector<plan::MatrixEntry>& entries);
/// The build.toml `depends` names kbuild provides (CUTLASS) that the compiled variants of `entries` need.
std::set<std::string> provided_header_dependencies(const config::KernelConfig& config,
                                                   const std::vector<plan::MatrixEntry>& entries);

/// Pins (in `lock`, through `provisioner`) every toolchain of `entries` and the header libraries
/// `header_dependencies` names (provided_header_dependencies), and drops the pins none of them uses.
Result<void> pin_matrix_toolchains(const std::vector<plan::MatrixEntry>& entries,
                                   const std::set<std::string>& header_dependencies,
                                   toolchain::Provisioner& provisioner, toolchain::LockFile& lock);
/// What `kbuild toolchains lock --update` starts from: `lock` without the pins a newer patch release
/// can replace. CUTLASS source archives stay: their release is fixed by the `depends` name, and their
/// pin is the sha256 a user compared with a copy they trust.
toolchain::LockFile pins_kept_by_update(const toolchain::LockFile& lock);

/// Provisions every toolchain `entries` needs. `base` carries the Python headers and the system CUDA
/// toolkit (if any) and gets the pinned host compiler (Provisioner::host_compiler) every variant is
/// compiled with; the toolchains are stored in `storage` (stable addresses).
Result<std::vector<plan::VariantBuild>> provision_variants(const std::vector<plan::MatrixEntry>& entries,
                                                           toolchain::Provisioner& provisioner,
                                                           toolchain::Toolchain& base,
                                                           std::deque<toolchain::Toolchain>& storage);

/// Whether the toolchains of `entry` are already in the cache (or the system provides them).
bool toolchains_present(const plan::MatrixEntry& entry, const toolchain::LockFile& lock, const util::CacheLayout& cache,
                        const std::optional<toolchain::CudaToolkit>& system,
                        const std::map<std::string, std::filesystem::path>& user_cuda, const util::FileSystem& fs);

}  // namespace kbuild::usecase
