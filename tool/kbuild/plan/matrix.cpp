#include "kbuild/plan/matrix.hpp"

#include <algorithm>
#include <set>

#include "kbuild/toolchain/toolchain.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::plan {

std::vector<MatrixEntry> expand_matrix(const config::KernelConfig& config, const MatrixSpec& spec,
                                       std::vector<std::string>* notes) {
  auto note = [&](std::string text) {
    if (notes) notes->push_back(std::move(text));
  };
  auto listed = [&](config::Backend backend) {
    return std::find(config.general.backends.begin(), config.general.backends.end(), backend) !=
           config.general.backends.end();
  };
  std::vector<MatrixEntry> entries;
  std::vector<util::Version> torch_versions;
  for (const auto& torch : spec.torch) {
    if (config.torch.minver && torch < *config.torch.minver) {
      note("torch " + torch.str() + ": below torch.minver " + config.torch.minver->str());
      continue;
    }
    if (config.torch.maxver && torch > *config.torch.maxver) {
      note("torch " + torch.str() + ": above torch.maxver " + config.torch.maxver->str());
      continue;
    }
    torch_versions.push_back(torch);
  }
  bool noarch_framework = config.framework == config::Framework::torch_noarch;
  for (config::Backend backend : config.general.backends) {
    bool has_components = !config.components_for(backend).empty();
    if (config.framework == config::Framework::tvm_ffi && !has_components) {
      note(config::to_string(backend) + ": the tvm-ffi kernel has no component for this backend");
      continue;
    }
    if (noarch_framework || !has_components) {
      MatrixEntry entry;
      entry.variant.kind = Variant::Kind::noarch;
      entry.variant.backend = backend;
      entries.push_back(entry);
    }
  }
  // kernel-builder builds a stable-ABI backend once per compute, with the newest Torch of the matrix
  // (nix-builder/lib/build.nix); its CMake refuses a Torch older than the stable-ABI version.
  std::optional<util::Version> newest;
  for (const auto& torch : torch_versions)
    if (!newest || *newest < torch) newest = torch;
  std::set<config::Backend> noted;
  const bool tvm_framework = config.framework == config::Framework::tvm_ffi;
  auto torch_versions_for = [&](config::Backend backend) -> std::vector<util::Version> {
    if (tvm_framework) return {util::Version()};  // no Torch: one variant per compute
    auto stable = config.torch.stable_abi.find(backend);
    if (stable == config.torch.stable_abi.end()) return torch_versions;
    if (!newest) return {};
    if (*newest < stable->second) {
      if (!noted.insert(backend).second) return {};
      note("torch-stable-abi" + config::flatten_version(stable->second) + " (" + config::to_string(backend) +
           "): the newest Torch of the matrix, " + newest->str() + ", is less than the stable ABI version " +
           stable->second.str() + "; it cannot build with a stable ABI targeting a newer Torch");
      return {};
    }
    return {*newest};
  };
  auto add_arch_entry = [&](config::Backend backend, const util::Version& torch, std::optional<util::Version> cuda) {
    MatrixEntry entry;
    auto stable = config.torch.stable_abi.find(backend);
    entry.variant.kind = stable == config.torch.stable_abi.end() ? Variant::Kind::torch : Variant::Kind::stable_abi;
    entry.variant.torch = stable == config.torch.stable_abi.end() ? torch : stable->second;
    if (tvm_framework) {
      entry.variant.kind = Variant::Kind::tvm_ffi;
      entry.variant.tvm_ffi = toolchain::k_tvm_ffi_series;
    }
    entry.variant.backend = backend;
    entry.variant.cuda = cuda;
    entry.torch = torch;
    entry.cuda = cuda;
    entries.push_back(entry);
  };
  if (!noarch_framework && spec.cpu && listed(config::Backend::cpu) &&
      !config.components_for(config::Backend::cpu).empty())
    for (const auto& torch : torch_versions_for(config::Backend::cpu))
      add_arch_entry(config::Backend::cpu, torch, std::nullopt);
  bool builds_cuda =
      !noarch_framework && listed(config::Backend::cuda) && !config.components_for(config::Backend::cuda).empty();
  for (const auto& cuda : builds_cuda ? spec.cuda : std::vector<util::Version>{}) {
    if (config.general.cuda_minver &&
        cuda < util::Version({config.general.cuda_minver->major(), config.general.cuda_minver->minor()})) {
      note("cuda " + cuda.str() + ": below general.cuda.minver " + config.general.cuda_minver->str());
      continue;
    }
    if (config.general.cuda_maxver && cuda > *config.general.cuda_maxver) {
      note("cuda " + cuda.str() + ": above general.cuda.maxver " + config.general.cuda_maxver->str());
      continue;
    }
    bool any_component = false;
    for (const auto* component : config.components_for(config::Backend::cuda))
      if (!component->cuda_minver ||
          !(cuda < util::Version({component->cuda_minver->major(), component->cuda_minver->minor()})))
        any_component = true;
    if (!any_component) {
      note("cuda " + cuda.str() + ": every CUDA component needs a newer CUDA (cuda-minver)");
      continue;
    }
    for (const auto& torch : torch_versions_for(config::Backend::cuda))
      add_arch_entry(config::Backend::cuda, torch, cuda);
  }
  std::sort(entries.begin(), entries.end(),
            [](const MatrixEntry& a, const MatrixEntry& b) { return a.variant.name() < b.variant.name(); });
  return entries;
}

Result<std::vector<MatrixEntry>> filter_matrix(const std::vector<MatrixEntry>& entries, const MatrixFilter& filter) {
  std::vector<std::string> names;
  for (const auto& entry : entries) names.push_back(entry.variant.name());
  for (const auto& wanted : filter.variants) {
    if (std::find(names.begin(), names.end(), wanted) == names.end()) {
      std::string suggestion = util::closest_match(wanted, names);
      return fail("unknown variant \"" + wanted + "\"",
                  (suggestion.empty() ? "" : "did you mean " + suggestion + "? ") +
                      "valid variants are: " + util::join(names, ", "),
                  ExitCode::usage);
    }
  }
  std::vector<MatrixEntry> out;
  for (const auto& entry : entries) {
    const Variant& v = entry.variant;
    if (!filter.variants.empty() &&
        std::find(filter.variants.begin(), filter.variants.end(), v.name()) == filter.variants.end())
      continue;
    if (!filter.torch.empty()) {
      if (v.kind == Variant::Kind::noarch) continue;
      bool match = false;
      for (const auto& t : filter.torch)
        if (auto version = util::Version::parse(t); version && *version == entry.torch) match = true;
      if (!match) continue;
    }
    if (!filter.cuda.empty()) {
      bool match = false;
      for (const auto& c : filter.cuda) {
        if (c == "cpu" && v.backend == config::Backend::cpu && v.compiled()) match = true;
        if (auto version = util::Version::parse(c); version && entry.cuda && *version == *entry.cuda) match = true;
      }
      if (!match) continue;
    }
    out.push_back(entry);
  }
  bool any_torch = std::any_of(entries.begin(), entries.end(), [](const MatrixEntry& e) {
    return e.variant.kind == Variant::Kind::torch || e.variant.kind == Variant::Kind::stable_abi;
  });
  if (out.empty())
    return fail("no variant of the matrix matches the filters",
                !filter.torch.empty() && !any_torch
                    ? "this kernel's variants (tvm-ffi or noarch) have no Torch version: drop --torch"
                    : "kbuild variants lists the matrix",
                ExitCode::usage);
  return out;
}

}  // namespace kbuild::plan
