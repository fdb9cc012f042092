#pragma once
// Which build variant the `kernels` loader (0.17, kernels/variants.py) picks on a machine, so that
// `kbuild download` installs what `get_locked_kernel` will load and `kbuild versions` can say why.
//
// Names (the loader's kernels/variants.py): torch<MA><MI>[-cxx11|-cxx98]-<compute>-<cpu>-<os>,
// torch-stable-abi<MA><MI>-<compute>-<cpu>-<os>, tvm-ffi<MA><MI>-<compute>-<cpu>-<os>, and the noarch
// torch-<backend>. <compute> is cpu, metal, neuron, tpu, cu<MA><MI>, rocm<MA><MI>, xpu<MA><MI> or
// cann<MA><MI>, where the minor version is the last digit. Names that do not parse are ignored,
// as the loader ignores them.
//
// Acceptance: arch variants need the machine's CPU and OS; Torch variants the installed Torch's
// major.minor (and its C++ ABI when tagged); stable-ABI variants a Torch at least as new; tvm-ffi
// variants the installed tvm-ffi's major.minor; on a CUDA machine, CUDA variants of the same major
// and a minor not above the machine's; otherwise the compute string must equal the machine's.
// Noarch variants need the backend's name (npu for CANN) or "universal".
// Preference: stable ABI (newest first), then Torch (untagged before tagged), then tvm-ffi and noarch;
// inside each, the highest backend minor version; torch-universal last; ties keep name order.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/toolchain/toolchain.hpp"
#include "kbuild/util/version.hpp"

namespace kbuild::lock {

/// A compute backend: its name ("cuda", "cpu", ...) and, for cuda/rocm/xpu/cann, its version.
struct ComputeBackend {
  std::string name;
  std::optional<util::Version> version;  ///< major.minor
  /// "cu130", "rocm71", "cpu": as the variant name spells it.
  std::string variant_str() const;
};

struct LoaderVariant {
  enum class Framework { torch, stable_abi, tvm_ffi, noarch };
  std::string name;
  Framework framework = Framework::torch;
  util::Version framework_version;  ///< Torch, stable-ABI or tvm-ffi major.minor
  std::optional<bool> cxx11_abi;    ///< Torch: nullopt when the name has no ABI tag
  ComputeBackend backend;           ///< arch variants
  std::string cpu, os;              ///< arch variants
  std::string noarch_backend;       ///< noarch: "cpu", "cuda", "universal", ...
};

/// Parses a variant directory name as the loader does; nullopt when the loader would ignore it.
std::optional<LoaderVariant> parse_loader_variant(std::string_view name);

/// What the loader knows about the machine it runs on.
struct SystemFacts {
  std::string cpu = "x86_64";
  std::string os = "linux";
  std::optional<util::Version> torch;  ///< major.minor of the installed Torch
  std::optional<bool> torch_cxx11_abi;
  std::optional<util::Version> tvm_ffi;
  ComputeBackend backend{"cpu", std::nullopt};
  /// One line for messages: "x86_64-linux, torch 2.11 (cxx11), cuda 13.0".
  std::string describe() const;
};

/// The facts of a Linux machine with `torch` installed (or none): its CUDA build decides the backend
/// (CUDA when Torch was built with CUDA, else CPU), as the loader's backend detection does.
SystemFacts linux_system_facts(const std::optional<toolchain::TorchInstall>& torch, std::string_view machine);

struct VariantDecision {
  LoaderVariant variant;
  bool accepted = false;
  std::string reason;  ///< why it was rejected
};

/// Every variant with its decision, accepted ones first in the loader's order of preference.
std::vector<VariantDecision> rank_variants(std::vector<LoaderVariant> variants, const SystemFacts& system);

/// The loader's choice among `names` (unparseable names ignored), or nullopt; `trace` gets the ranking.
std::optional<std::string> select_variant(const std::vector<std::string>& names, const SystemFacts& system,
                                          std::vector<VariantDecision>* trace = nullptr);

}  // namespace kbuild::lock
