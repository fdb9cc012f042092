#include "kbuild/usecase/local_variants.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "kbuild/util/strings.hpp"

namespace kbuild::usecase {

namespace {

std::string backend_names(const config::KernelConfig& config) {
  std::vector<std::string> names;
  for (auto b : config.general.backends) names.push_back(config::to_string(b));
  return util::join(names, ", ");
}

// A CUDA variant links the Torch's CUDA runtime: the toolkit must be of its major version.
Result<void> check_torch_matches_toolkit(const toolchain::Toolchain& tc,
                                         const std::function<void(const std::string&)>& warn) {
  if (!tc.torch.cuda)
    return fail("the Torch at " + tc.torch.root.string() + " is a CPU-only build; it cannot build cuda variants",
                "install a CUDA build of torch, or use --backend cpu", ExitCode::toolchain);
  if (tc.torch.cuda->major() != tc.cuda->version.major())
    return fail(fmt::format("Torch was built with CUDA {} but nvcc is CUDA {}", tc.torch.cuda->major_minor(),
                            tc.cuda->version.major_minor()),
                "use a CUDA toolkit of the same major version as torch (CUDA_HOME)", ExitCode::toolchain);
  if (tc.cuda->version.minor() > tc.torch.cuda->minor())
    warn(fmt::format(
        "nvcc is CUDA {} but Torch was built with CUDA {}: the kernels loader will "
        "not pick a cu{} variant for this Torch",
        tc.cuda->version.major_minor(), tc.torch.cuda->major_minor(), config::flatten_version(tc.cuda->version)));
  return {};
}

// Why a toolkit of `version` is outside [general.cuda] minver/maxver ("CUDA 13.0, above general.cuda.maxver
// 12.9"), compared by major.minor as the matrix does; nullopt within.
std::optional<std::string> cuda_outside_bounds(const config::KernelConfig& config, const util::Version& version) {
  const util::Version minor({version.major(), version.minor()});
  const auto& general = config.general;
  if (general.cuda_minver && minor < util::Version({general.cuda_minver->major(), general.cuda_minver->minor()}))
    return "CUDA " + minor.str() + ", below general.cuda.minver " + general.cuda_minver->str();
  if (general.cuda_maxver && minor > *general.cuda_maxver)
    return "CUDA " + minor.str() + ", above general.cuda.maxver " + general.cuda_maxver->str();
  return std::nullopt;
}

// --backend names must be backends of general.backends.
Result<void> check_wanted_backends(const config::KernelConfig& config, const std::vector<std::string>& wanted) {
  for (const auto& name : wanted) {
    auto backend = config::parse_backend(name);
    bool listed = backend && std::find(config.general.backends.begin(), config.general.backends.end(), *backend) !=
                                 config.general.backends.end();
    if (!listed)
      return fail("--backend " + name + " is not one of the kernel's backends (" + backend_names(config) + ")", "",
                  ExitCode::usage);
  }
  return {};
}

// torch.minver/maxver against the local Torch, and a backend's stable-ABI version (which makes the
// variant a torch-stable-abi one).
Result<void> apply_torch_bounds(const config::KernelConfig& config, const toolchain::Toolchain& tc,
                                config::Backend backend, config::Variant& variant) {
  const util::Version minor({tc.torch.version.major(), tc.torch.version.minor()});
  if (config.torch.minver && tc.torch.version < *config.torch.minver)
    return fail(
        fmt::format("Torch {} is older than torch.minver {}", tc.torch.version.str(), config.torch.minver->str()),
        "use a newer torch (--python)", ExitCode::toolchain);
  if (config.torch.maxver && minor > *config.torch.maxver)
    return fail(
        fmt::format("Torch {} is newer than torch.maxver {}", tc.torch.version.str(), config.torch.maxver->str()),
        "use an older torch (--python)", ExitCode::toolchain);
  auto stable = config.torch.stable_abi.find(backend);
  if (stable == config.torch.stable_abi.end()) return {};
  if (minor < stable->second)
    return fail(fmt::format("Torch {} is less than the stable ABI version {} of the {} backend; it cannot build "
                            "a stable-ABI variant targeting a newer Torch",
                            tc.torch.version.str(), stable->second.str(), config::to_string(backend)),
                "build with a Torch >= " + stable->second.str() + " (--python), or lower torch.stable-abi",
                ExitCode::toolchain);
  variant.kind = config::Variant::Kind::stable_abi;
  variant.torch = stable->second;
  return {};
}

}  // namespace

Result<std::vector<plan::VariantBuild>> select_local_variants(const config::KernelConfig& config,
                                                              const toolchain::Toolchain& tc,
                                                              const std::vector<std::string>& wanted,
                                                              const std::function<void(const std::string&)>& warn) {
  std::vector<plan::VariantBuild> builds;
  KB_TRY(check_wanted_backends(config, wanted));
  for (config::Backend backend : config.general.backends) {
    std::string name = config::to_string(backend);
    bool requested = std::find(wanted.begin(), wanted.end(), name) != wanted.end();
    if (!wanted.empty() && !requested) continue;
    const bool tvm_ffi = config.framework == config::Framework::tvm_ffi;
    config::Variant variant;
    if (!tvm_ffi) variant.torch = util::Version({tc.torch.version.major(), tc.torch.version.minor()});
    variant.backend = backend;
    variant.cxx11_abi = tc.torch.cxx11_abi;
    variant.cpu = config::normalize_cpu(util::split(tc.cxx.machine, '-').front());
    bool noarch = config.framework == config::Framework::torch_noarch || config.components_for(backend).empty();
    if (noarch && tvm_ffi) {
      // A Torch noarch variant of a tvm-ffi kernel would not load; kernel-builder builds none either.
      warn("the tvm-ffi kernel has no component for the " + name + " backend: nothing to build for it");
      continue;
    }
    if (noarch) {
      variant.kind = config::Variant::Kind::noarch;
      builds.push_back({variant, nullptr});
      continue;
    }
    if (backend == config::Backend::cuda) {
      if (!tc.cuda) {
        if (requested)
          return fail("no CUDA toolkit found for --backend cuda", "put nvcc on PATH or set CUDA_HOME",
                      ExitCode::toolchain);
        warn("no CUDA toolkit found (nvcc not on PATH, CUDA_HOME unset): skipping the cuda backend");
        continue;
      }
      // [general.cuda] minver/maxver bound the toolkit as they bound the matrix's CUDA versions.
      if (auto outside = cuda_outside_bounds(config, tc.cuda->version)) {
        if (requested)
          return fail("the CUDA toolkit here is " + *outside, "use a CUDA toolkit within the bounds (CUDA_HOME)",
                      ExitCode::toolchain);
        warn("the CUDA toolkit here is " + *outside + ": skipping the cuda backend, as kernel-builder does");
        continue;
      }
      // A tvm-ffi variant involves no Torch: the toolkit alone decides.
      if (!tvm_ffi) KB_TRY(check_torch_matches_toolkit(tc, warn));
      variant.cuda = util::Version({tc.cuda->version.major(), tc.cuda->version.minor()});
    } else if (backend != config::Backend::cpu) {
      warn("kbuild does not build " + name + " variants; skipping the " + name + " backend");
      continue;
    }
    if (tvm_ffi) {
      variant.kind = config::Variant::Kind::tvm_ffi;
      variant.tvm_ffi = toolchain::k_tvm_ffi_series;
      builds.push_back({variant, &tc});
      continue;
    }
    KB_TRY(apply_torch_bounds(config, tc, backend, variant));
    builds.push_back({variant, &tc});
  }
  if (builds.empty())
    return fail("nothing to build: none of the kernel's backends can be built here",
                "kbuild builds cpu and cuda variants", ExitCode::toolchain);
  return builds;
}

std::optional<Error> unknown_variant_error(const std::vector<std::string>& wanted, const VariantNameGroups& known) {
  std::vector<std::string> all;
  for (const auto& [from, names] : known) all.insert(all.end(), names.begin(), names.end());
  for (const auto& name : wanted) {
    if (std::find(all.begin(), all.end(), name) != all.end()) continue;
    std::string suggestion = util::closest_match(name, all);
    std::vector<std::string> listed;
    for (const auto& [from, names] : known)
      if (!names.empty()) listed.push_back(from + ": " + util::join(names, ", "));
    return Error{ExitCode::usage, "unknown variant \"" + name + "\"",
                 (suggestion.empty() ? "" : "did you mean " + suggestion + "? ") +
                     (listed.empty() ? "this kernel has no variant here" : util::join(listed, "; "))};
  }
  return std::nullopt;
}

}  // namespace kbuild::usecase
