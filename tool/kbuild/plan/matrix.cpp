#include "kbuild/plan/matrix.hpp"

#include <algorithm>
#include <set>

#include "kbuild/toolchain/toolchain.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::plan {

namespace {

// One expansion of the matrix: the Torch versions build.toml allows, the noarch entries, then the
// arch entries per backend (a stable-ABI backend once per compute, with the newest Torch).
class MatrixExpander {
 public:
  MatrixExpander(const config::KernelConfig& config, const MatrixSpec& spec, std::vector<std::string>* notes)
      : m_config(config), m_spec(spec), m_notes(notes) {}

  std::vector<MatrixEntry> expand() {
    select_torch_versions();
    add_noarch_entries();
    for (config::Backend backend : m_config.general.backends)
      if (backend != config::Backend::cpu && backend != config::Backend::cuda && compiles(backend))
        note(config::to_string(backend) + ": kbuild does not build " + config::to_string(backend) + " variants");
    bool noarch_framework = m_config.framework == config::Framework::torch_noarch;
    if (!noarch_framework && m_spec.cpu && compiles(config::Backend::cpu))
      for (const auto& torch : torch_versions_for(config::Backend::cpu))
        add_arch_entry(config::Backend::cpu, torch, std::nullopt);
    bool builds_cuda = !noarch_framework && compiles(config::Backend::cuda);
    bool cuda_in_bounds = false;
    for (const auto& cuda : builds_cuda ? m_spec.cuda : std::vector<util::Version>{}) {
      if (auto reason = cuda_left_out(cuda)) {
        note("cuda " + cuda.str() + ": " + *reason);
        continue;
      }
      cuda_in_bounds = true;
      for (const auto& torch : torch_versions_for(config::Backend::cuda))
        add_arch_entry(config::Backend::cuda, torch, cuda);
    }
    if (builds_cuda && !m_spec.cuda.empty() && !cuda_in_bounds) note_cuda_fix();
    std::sort(m_entries.begin(), m_entries.end(),
              [](const MatrixEntry& a, const MatrixEntry& b) { return a.variant.name() < b.variant.name(); });
    return m_entries;
  }

 private:
  void note(std::string text) {
    if (m_notes) m_notes->push_back(std::move(text));
  }

  bool compiles(config::Backend backend) const {
    bool listed = std::find(m_config.general.backends.begin(), m_config.general.backends.end(), backend) !=
                  m_config.general.backends.end();
    return listed && !m_config.components_for(backend).empty();
  }

  void select_torch_versions() {
    for (const auto& torch : m_spec.torch) {
      if (m_config.torch.minver && torch < *m_config.torch.minver) {
        note("torch " + torch.str() + ": below torch.minver " + m_config.torch.minver->str());
        continue;
      }
      if (m_config.torch.maxver && torch > *m_config.torch.maxver) {
        note("torch " + torch.str() + ": above torch.maxver " + m_config.torch.maxver->str());
        continue;
      }
      m_torch.push_back(torch);
      if (!m_newest || *m_newest < torch) m_newest = torch;
    }
  }

  void add_noarch_entries() {
    for (config::Backend backend : m_config.general.backends) {
      bool has_components = !m_config.components_for(backend).empty();
      if (m_config.framework == config::Framework::tvm_ffi && !has_components) {
        note(config::to_string(backend) + ": the tvm-ffi kernel has no component for this backend");
        continue;
      }
      if (m_config.framework == config::Framework::torch_noarch || !has_components) {
        MatrixEntry entry;
        entry.variant.kind = Variant::Kind::noarch;
        entry.variant.backend = backend;
        m_entries.push_back(entry);
      }
    }
  }

  // kernel-builder builds a stable-ABI backend once per compute, with the newest Torch of the matrix
  // (nix-builder/lib/build.nix); its CMake refuses a Torch older than the stable-ABI version.
  std::vector<util::Version> torch_versions_for(config::Backend backend) {
    if (m_config.framework == config::Framework::tvm_ffi) return {util::Version()};  // no Torch: one per compute
    auto stable = m_config.torch.stable_abi.find(backend);
    if (stable == m_config.torch.stable_abi.end()) return m_torch;
    if (!m_newest) return {};
    if (*m_newest < stable->second) {
      if (!m_noted.insert(backend).second) return {};
      note("torch-stable-abi" + config::flatten_version(stable->second) + " (" + config::to_string(backend) +
           "): the newest Torch of the matrix, " + m_newest->str() + ", is less than the stable ABI version " +
           stable->second.str() + "; it cannot build with a stable ABI targeting a newer Torch");
      return {};
    }
    return {*m_newest};
  }

  // Every CUDA version of the matrix is outside build.toml's bounds: the exact fix, with a version
  // inside them (a kernel capped at CUDA 12.x against a matrix of 13.x).
  void note_cuda_fix() {
    const auto& general = m_config.general;
    std::optional<util::Version> inside = general.cuda_maxver ? general.cuda_maxver : general.cuda_minver;
    if (!inside) return;
    const std::string version = std::to_string(inside->major()) + "." + std::to_string(inside->minor());
    note("no CUDA version of the matrix is within build.toml's CUDA bounds: to build CUDA " + version +
         ", list it in kbuild.toml ([matrix] cuda = [\"" + version + "\"]) and give its toolkit (kbuild build " +
         "--matrix --cuda-toolkit " + version + "=/usr/local/cuda-" + version + ")");
  }

  // Why a CUDA version of the matrix builds nothing for this kernel, if it does not.
  std::optional<std::string> cuda_left_out(const util::Version& cuda) const {
    const auto& general = m_config.general;
    if (general.cuda_minver && cuda < util::Version({general.cuda_minver->major(), general.cuda_minver->minor()}))
      return "below general.cuda.minver " + general.cuda_minver->str();
    if (general.cuda_maxver && cuda > *general.cuda_maxver)
      return "above general.cuda.maxver " + general.cuda_maxver->str();
    for (const auto* component : m_config.components_for(config::Backend::cuda))
      if (!component->cuda_minver ||
          !(cuda < util::Version({component->cuda_minver->major(), component->cuda_minver->minor()})))
        return std::nullopt;
    return "every CUDA component needs a newer CUDA (cuda-minver)";
  }

  void add_arch_entry(config::Backend backend, const util::Version& torch, std::optional<util::Version> cuda) {
    MatrixEntry entry;
    auto stable = m_config.torch.stable_abi.find(backend);
    bool is_stable = stable != m_config.torch.stable_abi.end();
    entry.variant.kind = is_stable ? Variant::Kind::stable_abi : Variant::Kind::torch;
    entry.variant.torch = is_stable ? stable->second : torch;
    if (m_config.framework == config::Framework::tvm_ffi) {
      entry.variant.kind = Variant::Kind::tvm_ffi;
      entry.variant.tvm_ffi = toolchain::k_tvm_ffi_series;
    }
    entry.variant.backend = backend;
    entry.variant.cuda = cuda;
    entry.torch = torch;
    entry.cuda = cuda;
    m_entries.push_back(entry);
  }

  const config::KernelConfig& m_config;
  const MatrixSpec& m_spec;
  std::vector<std::string>* m_notes;
  std::vector<util::Version> m_torch;
  std::optional<util::Version> m_newest;
  std::set<config::Backend> m_noted;
  std::vector<MatrixEntry> m_entries;
};

}  // namespace

std::vector<MatrixEntry> expand_matrix(const config::KernelConfig& config, const MatrixSpec& spec,
                                       std::vector<std::string>* notes) {
  return MatrixExpander(config, spec, notes).expand();
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
      if (!v.compiled()) continue;
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
  bool any_torch = std::any_of(entries.begin(), entries.end(),
                               [](const MatrixEntry& e) { return e.variant.traits().torch_toolchain; });
  if (out.empty())
    return fail("no variant of the matrix matches the filters",
                !filter.torch.empty() && !any_torch
                    ? "this kernel's variants (tvm-ffi or noarch) have no Torch version: drop --torch"
                    : "kbuild variants lists the matrix",
                ExitCode::usage);
  return out;
}

}  // namespace kbuild::plan
