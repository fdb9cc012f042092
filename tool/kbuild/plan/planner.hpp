#pragma once
// The planner turns (build.toml model, variants, toolchains) into a JobGraph. It is pure: it reads no
// files and runs nothing; the caller passes the file listing of the Python package.
//
// Per compiled variant V (work = <kernel>/.kbuild, out = <kernel>/build):
//   GEN      work/generated/registration.h            (shared by all variants)
//   CXX      work/V/obj/<src>.o        for every .cpp/.cc/.cxx/.c of [torch].src and of V's components
//   CUDA     work/V/obj/<src>.o        for every .cu of V's CUDA components (nvcc, one -gencode per arch)
//   LINK     work/V/<ops-id>.abi3.so   all objects of V, against libtorch (+ libcudart)
//   INSTALL  out/V/                    Python package, _ops.py, the library, metadata.json + digest
// A noarch variant (torch-<backend>) only has INSTALL.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/config/model.hpp"
#include "kbuild/config/variant.hpp"
#include "kbuild/layout/metadata.hpp"
#include "kbuild/plan/graph.hpp"
#include "kbuild/toolchain/toolchain.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::plan {

using config::Variant;

struct VariantBuild {
  Variant variant;
  const toolchain::Toolchain* toolchain = nullptr;  ///< null for noarch variants
};

struct PlanRequest {
  const config::KernelConfig* config = nullptr;
  fs::path kernel_dir;  ///< absolute
  fs::path work_dir;    ///< absolute; intermediates (never shipped)
  fs::path output_dir;  ///< absolute; build/
  std::string unique_id;
  /// Files under torch-ext/<python_name>/, relative to it, sorted.
  std::vector<std::string> package_files;
  /// .kbuild/sources (usecase::SourceManifest): an input of every install job, rewritten only when the
  /// sources change, so that an install's record tells which sources its variant was built from.
  std::optional<fs::path> source_manifest;
  std::vector<VariantBuild> variants;
  int nvcc_threads = 0;  ///< --threads for nvcc; 0 leaves it out
  std::string builder_version;
  std::optional<layout::GitProvenance> kernel_git;
  /// The policy every linked library must meet before it is installed ("none": symbol versions unchecked).
  std::string manylinux = "manylinux_2_28";
  /// The header libraries of build.toml dependencies (CUTLASS), by dependency name, provisioned.
  std::map<std::string, toolchain::HeaderLibrary> header_libraries;
  /// libkbuild_stdcxx_compat.a (toolchain/stdcxx_compat.hpp), linked privately before libstdc++.so.6.
  std::optional<fs::path> stdcxx_compat;
  /// apache-tvm-ffi, provisioned, when the kernel is a tvm-ffi kernel.
  std::optional<toolchain::TvmFfiInstall> tvm_ffi;
  /// Off only where the compiler is a fake that produces no ELF (unit tests of the build use case).
  bool gate_libraries = true;
  /// CUDA variants compile only these capabilities of what build.toml declares (--cuda-archs: the
  /// local GPU's, or a list); nullopt compiles all. metadata.json lists what was compiled.
  std::optional<std::vector<std::string>> cuda_archs_only;
};

/// Why `build` would refuse a variant of `backend` whatever the toolchain (a component needs a
/// dependency kbuild cannot provide), or nullopt. `kbuild variants` lists such variants as left out.
std::optional<std::string> unbuildable_reason(const config::KernelConfig& config, config::Backend backend);

/// "_" + python_name + "_" + backend + "_" + unique_id (kernel-builder's ops identifier; docs/architecture.md).
std::string ops_id(const std::string& python_name, config::Backend backend, const std::string& unique_id);

/// -DTORCH_TARGET_VERSION=<hex> as kernel-builder defines it for a stable-ABI variant: (major << 56) |
/// (minor << 48) in lowercase hexadecimal, e.g. 0x20b000000000000 for 2.11. Torch's stable headers then
/// offer only what that Torch version has.
std::string torch_target_version_define(const util::Version& stable_abi);

/// Whether `path` is a translation unit, and of which kind; nullopt for headers and other files.
std::optional<JobKind> compile_kind(const std::string& path);

/// The effective CUDA capabilities of a variant: the union over its CUDA components (each restricted
/// to `only` when given), sorted as strings (that is how metadata.json lists them).
std::vector<std::string> variant_cuda_archs(const config::KernelConfig& config, const util::Version& cuda,
                                            const std::optional<std::vector<std::string>>& only = std::nullopt);

Result<JobGraph> plan_build(const PlanRequest& request);

}  // namespace kbuild::plan
