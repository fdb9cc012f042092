#pragma once
// Build variants and their names, as the `kernels` loader parses them (kernels/variants.py):
//   torch<MA><MI>[-cxx11]-<compute>-<cpu>-<os>     e.g. torch211-cxx11-cu130-x86_64-linux
//   torch-stable-abi<MA><MI>-<compute>-<cpu>-<os>  e.g. torch-stable-abi211-cpu-x86_64-linux: built on
//                                                   Torch's stable ABI, loadable by that Torch and newer
//   tvm-ffi<MA><MI>-<compute>-<cpu>-<os>           e.g. tvm-ffi01-cpu-x86_64-linux: a tvm-ffi kernel,
//                                                   for the tvm_ffi of that major.minor (no Torch)
//   torch-<backend>                                 noarch, e.g. torch-cpu
// <compute> is cu<MA><MI> for CUDA, cpu for CPU. kbuild builds x86_64 and aarch64 Linux variants.

#include <optional>
#include <string>
#include <string_view>

#include "kbuild/config/model.hpp"
#include "kbuild/util/version.hpp"

namespace kbuild::config {

struct Variant {
  enum class Kind { torch, stable_abi, tvm_ffi, noarch };

  Kind kind = Kind::torch;
  /// major.minor of Torch; for stable_abi the oldest Torch it serves (TORCH_TARGET_VERSION), which
  /// need not be the Torch it was compiled against. Unused for noarch.
  util::Version torch;
  util::Version tvm_ffi;  ///< tvm_ffi kind: the tvm-ffi major.minor
  Backend backend = Backend::cpu;
  std::optional<util::Version> cuda;  ///< CUDA major.minor for CUDA variants
  bool cxx11_abi = true;              ///< torch kind only: stable-ABI names carry no C++ ABI tag
  std::string cpu = "x86_64";
  std::string os = "linux";

  /// Whether the variant holds a compiled library (every kind but noarch).
  bool compiled() const { return kind != Kind::noarch; }
  /// The directory name under build/.
  std::string name() const;
  /// Parses a name produced by name(); nullopt for anything kbuild does not build.
  static std::optional<Variant> parse(std::string_view name);

  bool operator==(const Variant& other) const { return name() == other.name(); }
};

/// "2.11" -> "211", "13.0" -> "130": the first two components concatenated (the loader reads them back so).
std::string flatten_version(const util::Version& version);

/// Normalises a machine name as the loader does: amd64/AMD64 -> x86_64, arm64/ARM64 -> aarch64.
std::string normalize_cpu(std::string_view machine);

}  // namespace kbuild::config
