#include "kbuild/plan/compile_flags.hpp"

#include <fmt/core.h>

#include <cstdint>

namespace kbuild::plan {

std::string ops_id(const std::string& python_name, config::Backend backend, const std::string& unique_id) {
  return "_" + python_name + "_" + config::to_string(backend) + "_" + unique_id;
}

std::optional<JobKind> compile_kind(const std::string& path) {
  for (const char* ext : {".cpp", ".cc", ".cxx", ".c"})
    if (path.ends_with(ext)) return JobKind::compile_cxx;
  if (path.ends_with(".cu")) return JobKind::compile_cuda;
  return std::nullopt;
}

std::string torch_target_version_define(const util::Version& stable_abi) {
  std::uint64_t value = (std::uint64_t{stable_abi.major()} << 56) | (std::uint64_t{stable_abi.minor()} << 48);
  return fmt::format("-DTORCH_TARGET_VERSION={:#x}", value);
}

namespace {

// A tvm-ffi variant, as kernel-builder's tvm-ffi CMake builds one: no Torch, no Python; the
// extension name, the backend's define, and tvm-ffi's headers (which include dlpack).
VariantFlags tvm_ffi_variant_flags(const PlanRequest& request, const Variant& variant, const toolchain::Toolchain& tc,
                                   const std::string& ops) {
  VariantFlags flags;
  flags.defines = {"-DNDEBUG", "-DTVM_FFI_EXTENSION_NAME=" + ops,
                   variant.backend == config::Backend::cuda ? "-DCUDA_KERNEL" : "-DCPU_KERNEL"};
  flags.system_includes.push_back(request.tvm_ffi->include_dir.string());
  if (variant.backend == config::Backend::cuda && tc.cuda)
    flags.system_includes.push_back(tc.cuda->include_dir.string());
  flags.prefix_maps = {"-ffile-prefix-map=" + request.kernel_dir.string() + "/=",
                       "-ffile-prefix-map=" + request.tvm_ffi->root.string() + "=/tvm-ffi"};
  if (tc.cuda) flags.prefix_maps.push_back("-ffile-prefix-map=" + tc.cuda->root.string() + "=/cuda");
  for (const auto& [dependency, library] : request.header_libraries)
    flags.prefix_maps.push_back("-ffile-prefix-map=" + library.root.string() + "=/" + dependency);
  // A pinned toolchain's headers are recorded where the system's would be.
  if (tc.cxx.pinned()) flags.prefix_maps.push_back("-ffile-prefix-map=" + tc.cxx.sysroot.string() + "/=/");
  return flags;
}

}  // namespace

VariantFlags variant_flags(const PlanRequest& request, const Variant& variant, const toolchain::Toolchain& tc,
                           const std::string& ops) {
  if (variant.traits().tvm_ffi_toolchain) return tvm_ffi_variant_flags(request, variant, tc, ops);
  VariantFlags flags;
  flags.defines = {"-DNDEBUG", std::string("-D_GLIBCXX_USE_CXX11_ABI=") + (tc.torch.cxx11_abi ? "1" : "0"),
                   "-DTORCH_EXTENSION_NAME=" + ops, "-DPy_LIMITED_API=0x03090000"};
  // The interface definitions of Torch's CMake targets, which kernel-builder's compiles inherit.
  for (const char* define : {"-DUSE_DISTRIBUTED", "-DUSE_C10D_GLOO", "-DUSE_RPC", "-DUSE_TENSORPIPE"})
    flags.defines.push_back(define);
  if (variant.backend == config::Backend::cuda) {
    for (const char* define : {"-DUSE_C10D_NCCL", "-DUSE_NVSHMEM", "-DCUDA_KERNEL", "-DUSE_CUDA=1"})
      flags.defines.push_back(define);
  } else {
    flags.defines.push_back("-DCPU_KERNEL");
  }
  if (variant.traits().torch_target_version) flags.defines.push_back(torch_target_version_define(variant.torch));
  for (const auto& dir : tc.torch.include_dirs()) flags.system_includes.push_back(dir.string());
  flags.system_includes.push_back(tc.python.include_dir.string());
  if (!tc.python.multiarch_header.empty())
    flags.system_includes.push_back(python_multiarch_dir(request.work_dir).string());
  if (variant.backend == config::Backend::cuda && tc.cuda)
    flags.system_includes.push_back(tc.cuda->include_dir.string());
  // Source paths are recorded relative to the kernel, toolchain paths under fixed names, so that
  // __FILE__ and friends do not depend on where the checkout or the toolchain lives.
  flags.prefix_maps = {"-ffile-prefix-map=" + request.kernel_dir.string() + "/=",
                       "-ffile-prefix-map=" + tc.torch.root.string() + "=/torch",
                       "-ffile-prefix-map=" + tc.python.include_dir.string() + "=/python"};
  if (tc.cuda) flags.prefix_maps.push_back("-ffile-prefix-map=" + tc.cuda->root.string() + "=/cuda");
  for (const auto& [dependency, library] : request.header_libraries)
    flags.prefix_maps.push_back("-ffile-prefix-map=" + library.root.string() + "=/" + dependency);
  // A pinned toolchain's headers are recorded where the system's would be.
  if (tc.cxx.pinned()) flags.prefix_maps.push_back("-ffile-prefix-map=" + tc.cxx.sysroot.string() + "/=/");
  return flags;
}

std::filesystem::path python_multiarch_dir(const std::filesystem::path& work_dir) {
  return work_dir / "generated" / "python-multiarch";
}

layout::ToolchainRecord toolchain_record(const toolchain::Toolchain& tc, const Variant& variant, bool tvm_ffi) {
  layout::ToolchainRecord record;
  record.compiler = "gcc " + tc.cxx.version;
  record.compiler_origin = tc.cxx.origin;
  record.host_packages = tc.cxx.pins;
  if (!tvm_ffi) {  // tvm-ffi variants are compiled without Torch
    record.torch = tc.torch.version_string;
    // The kind of origin only: "python:/home/me/venv/bin/python3" would tie the bytes to a machine.
    record.torch_origin = tc.torch.origin.starts_with("python:") ? "python" : tc.torch.origin;
  }
  if (tc.cuda && variant.backend == config::Backend::cuda) {
    record.cuda = tc.cuda->version.str();
    record.cuda_origin = tc.cuda->origin;
  }
  return record;
}

std::vector<std::string> driver_command(const toolchain::HostCompiler& cxx) {
  std::vector<std::string> argv = {cxx.cxx.string()};
  for (const auto& flag : cxx.driver_flags()) argv.push_back(flag);
  return argv;
}

const std::vector<std::string> k_torch_nvcc_flags = {
    "-DONNX_NAMESPACE=onnx_c2", "-Xcudafe",
    "--diag_suppress=cc_clobber_ignored,--diag_suppress=field_without_dll_interface,"
    "--diag_suppress=base_class_has_different_dll_interface,--diag_suppress=dll_interface_conflict_none_assumed,"
    "--diag_suppress=dll_interface_conflict_dllexport_assumed,--diag_suppress=bad_friend_decl",
    "--expt-relaxed-constexpr", "--expt-extended-lambda"};

}  // namespace kbuild::plan
