#pragma once
// The compiler flags a variant's translation units share (defines, system includes, prefix maps),
// as kernel-builder's CMake gives them (docs/build-toml.md, "Compiler command lines"). Internal to
// plan/: the planner adds per-unit flags (standard, includes, archs, cxx-flags) around these.

#include <string>
#include <vector>

#include "kbuild/layout/metadata.hpp"
#include "kbuild/plan/planner.hpp"

namespace kbuild::plan {

// Flags shared by every translation unit of a variant, for g++ (host) and nvcc.
struct VariantFlags {
  std::vector<std::string> defines;
  std::vector<std::string> system_includes;
  std::vector<std::string> prefix_maps;  ///< -ffile-prefix-map=... for reproducible objects
};

/// The shared flags of `variant` built with `tc`, whose ops id is `ops` (TORCH_EXTENSION_NAME, or
/// TVM_FFI_EXTENSION_NAME for a tvm-ffi variant).
VariantFlags variant_flags(const PlanRequest& request, const Variant& variant, const toolchain::Toolchain& tc,
                           const std::string& ops);

/// Where a build writes the multiarch pyconfig.h of a Debian-style Python (toolchain::PythonHeaders),
/// given to every compile with -isystem: `<work>/generated/python-multiarch/<multiarch>/pythonX.Y/`.
std::filesystem::path python_multiarch_dir(const std::filesystem::path& work_dir);

/// What metadata.json records of the toolchain that built a variant (layout::ToolchainRecord): only
/// what took part (no CUDA for a CPU variant, even where the probe found one; no Torch for tvm-ffi).
layout::ToolchainRecord toolchain_record(const toolchain::Toolchain& tc, const Variant& variant, bool tvm_ffi);

/// The host compiler's driver with the flags every compile and link passes (a pinned --sysroot).
std::vector<std::string> driver_command(const toolchain::HostCompiler& cxx);

/// CMAKE_CUDA_FLAGS as Torch's CMake package (share/cmake/Caffe2/public/cuda.cmake) sets them.
extern const std::vector<std::string> k_torch_nvcc_flags;

}  // namespace kbuild::plan
