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

/// Which Torch may load a variant's library (the loader and `kbuild test` decide by this).
enum class TorchMatch {
  exact,     ///< only the Torch major.minor it was built against (the C++ ABI)
  at_least,  ///< that Torch or any newer one (Torch's stable ABI)
  none,      ///< no Torch library involved (tvm-ffi, noarch)
};

/// What a kind of variant is, as data: adding a kind (ROCm, XPU, Metal are next) is one entry of
/// the table in variant.cpp plus its tests; code asks these properties instead of naming kinds.
struct VariantKindTraits {
  std::string_view prefix;  ///< the name's first part: "torch", "torch-stable-abi", "tvm-ffi", "torch-" (noarch)
  bool compiled = true;     ///< holds a compiled library (else Python only: noarch)
  bool versioned_by_tvm_ffi = false;  ///< the name's version is tvm-ffi's, not Torch's
  bool cxx11_tag = false;             ///< the name carries "-cxx11" (Torch's C++ ABI)
  bool torch_toolchain = false;       ///< compiled against a Torch (headers, libraries, its Python)
  bool tvm_ffi_toolchain = false;     ///< compiled against tvm-ffi (its own flags and binding)
  bool torch_target_version = false;  ///< -DTORCH_TARGET_VERSION: the oldest Torch it serves
  bool stable_abi_gate = false;       ///< libraries may use only Torch's stable ABI (layout/check)
  TorchMatch loads_with = TorchMatch::exact;
  std::string_view library_suffix = ".abi3.so";  ///< after the ops id
};

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

  /// The properties of this variant's kind.
  const VariantKindTraits& traits() const;
  /// Whether the variant holds a compiled library (every kind but noarch).
  bool compiled() const { return traits().compiled; }
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
