#pragma once
// The typed model of a kernel project's build.toml (edition 5; edition-less v4 files are upgraded to
// it in memory). Field names follow build.toml's keys; see docs/build-toml.md.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/util/version.hpp"

namespace kbuild::config {

enum class Backend { cann, cpu, cuda, metal, neuron, rocm, tpu, xpu };

std::string to_string(Backend backend);
std::optional<Backend> parse_backend(std::string_view name);
/// Every backend in build.toml's spelling, sorted.
const std::vector<std::string>& backend_names();

/// A position in an input file, 1-based; line 0 means "the file as a whole".
struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;
};

struct KernelDependency {
  std::string repo_id;
  std::optional<std::int64_t> version;
  std::optional<std::string> revision;
};

struct BackendDepends {
  std::vector<std::string> python_depends;
  std::vector<KernelDependency> kernel_depends;
};

struct General {
  std::string name;
  std::int64_t version = 0;
  std::string license;
  std::vector<Backend> backends;
  std::optional<std::string> upstream;
  std::optional<std::string> source;
  std::vector<std::string> python_depends;
  std::vector<KernelDependency> kernel_depends;
  std::optional<std::string> hub_repo_id;
  std::optional<std::string> hub_branch;
  std::optional<util::Version> cuda_minver;
  std::optional<util::Version> cuda_maxver;
  /// Backend-specific dependencies ([general.cuda], [general.xpu], ...).
  std::map<Backend, BackendDepends> backend_depends;

  /// `name` with '-' replaced by '_': the Python package name.
  std::string python_name() const;
};

enum class Framework { torch, torch_noarch, tvm_ffi };

struct TorchExtension {
  std::vector<std::string> src;
  std::vector<std::string> include;
  std::vector<std::string> pyext{"py", "pyi"};
  std::optional<util::Version> minver;
  std::optional<util::Version> maxver;
  std::vector<std::string> cxx_flags;
  /// Stable-ABI target per backend (a single string in build.toml applies to every backend).
  std::map<Backend, util::Version> stable_abi;
};

struct TorchNoarch {
  std::vector<std::string> pyext{"py", "pyi"};
  std::vector<std::string> cuda_capabilities;
  std::vector<std::string> rocm_archs;
};

struct KernelComponent {
  std::string name;
  Backend backend = Backend::cpu;
  std::vector<std::string> src;
  std::vector<std::string> depends;
  std::vector<std::string> include;
  std::vector<std::string> cxx_flags;
  std::vector<std::string> cuda_capabilities;
  std::vector<std::string> cuda_flags;
  std::optional<util::Version> cuda_minver;
  std::vector<std::string> rocm_archs;
  std::vector<std::string> hip_flags;
  std::vector<std::string> sycl_flags;
  SourceLocation location;
};

struct KernelConfig {
  General general;
  Framework framework = Framework::torch;
  TorchExtension torch;                  ///< for Framework::torch and tvm_ffi (src/include/pyext/cxx-flags)
  TorchNoarch noarch;                    ///< for Framework::torch_noarch
  std::vector<KernelComponent> kernels;  ///< sorted by name
  /// 5, or 4 for an edition-less file that was upgraded in memory.
  int source_edition = 5;

  /// Components to compile for `backend`, in name order.
  std::vector<const KernelComponent*> components_for(Backend backend) const;
  /// The kernel's Python package, relative to the kernel directory: tvm-ffi-ext/<python_name> for
  /// tvm-ffi kernels, torch-ext/<python_name> otherwise (kernel-builder's layout).
  std::string package_dir() const;
};

}  // namespace kbuild::config
