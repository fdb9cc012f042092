#include "kbuild/lock/variant_select.hpp"

#include <algorithm>
#include <tuple>

#include "kbuild/util/strings.hpp"

namespace kbuild::lock {

namespace {

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "<digits><digits>" split as the loader's regexes do: with a greedy first group the minor is the
// last digit (cu130 -> 13.0); with a lazy one (tvm-ffi) the major is the first digit.
std::optional<util::Version> split_digits(std::string_view digits, bool lazy_major) {
  if (!all_digits(digits) || digits.size() < 2 || digits.size() > 9) return std::nullopt;
  size_t cut = lazy_major ? 1 : digits.size() - 1;
  return util::Version::parse(std::string(digits.substr(0, cut)) + "." + std::string(digits.substr(cut)));
}

std::optional<ComputeBackend> parse_compute(std::string_view text) {
  for (std::string_view exact : {"cpu", "metal", "neuron", "tpu"})
    if (text == exact) return ComputeBackend{std::string(exact), std::nullopt};
  static const std::pair<std::string_view, std::string_view> k_versioned[] = {
      {"cu", "cuda"}, {"rocm", "rocm"}, {"xpu", "xpu"}, {"cann", "cann"}};
  for (auto [prefix, name] : k_versioned) {
    if (!text.starts_with(prefix)) continue;
    auto version = split_digits(text.substr(prefix.size()), false);
    if (!version) return std::nullopt;
    return ComputeBackend{std::string(name), version};
  }
  return std::nullopt;
}

bool parse_arch(const std::vector<std::string>& parts, size_t from, LoaderVariant& out) {
  if (parts.size() != from + 3) return false;
  auto backend = parse_compute(parts[from]);
  if (!backend) return false;
  out.backend = *backend;
  out.cpu = parts[from + 1];
  out.os = parts[from + 2];
  return true;
}

std::string mm(const util::Version& v) { return v.major_minor(); }

}  // namespace

std::string ComputeBackend::variant_str() const {
  if (!version) return name;
  std::string prefix = name == "cuda" ? "cu" : name;
  return prefix + std::to_string(version->major()) + std::to_string(version->minor());
}

std::optional<LoaderVariant> parse_loader_variant(std::string_view name) {
  auto parts = util::split(name, '-');
  LoaderVariant v;
  v.name = std::string(name);
  if (name.starts_with("torch-stable-abi")) {
    if (parts.size() < 3) return std::nullopt;
    std::string digits = parts[2].substr(std::string_view("abi").size());
    auto version = split_digits(digits, true);
    if (!parts[2].starts_with("abi") || !version) return std::nullopt;
    v.framework = LoaderVariant::Framework::stable_abi;
    v.framework_version = *version;
    return parse_arch(parts, 3, v) ? std::optional(v) : std::nullopt;
  }
  if (parts[0] == "torch") {
    v.framework = LoaderVariant::Framework::noarch;
    std::vector<std::string> rest(parts.begin() + 1, parts.end());
    v.noarch_backend = util::join(rest, "-");
    return v;
  }
  if (parts[0].starts_with("torch")) {
    auto version = split_digits(std::string_view(parts[0]).substr(5), true);
    if (!version) return std::nullopt;
    v.framework = LoaderVariant::Framework::torch;
    v.framework_version = *version;
    size_t arch_from = 1;
    if (parts.size() >= 2 && (parts[1] == "cxx11" || parts[1] == "cxx98")) {
      v.cxx11_abi = parts[1] == "cxx11";
      arch_from = 2;
    }
    return parse_arch(parts, arch_from, v) ? std::optional(v) : std::nullopt;
  }
  if (parts[0] == "tvm" && parts.size() >= 2 && parts[1].starts_with("ffi")) {
    auto version = split_digits(std::string_view(parts[1]).substr(3), true);
    if (!version) return std::nullopt;
    v.framework = LoaderVariant::Framework::tvm_ffi;
    v.framework_version = *version;
    return parse_arch(parts, 2, v) ? std::optional(v) : std::nullopt;
  }
  return std::nullopt;
}

std::string SystemFacts::describe() const {
  std::string out = cpu + "-" + os;
  if (torch) out += ", torch " + mm(*torch) + (torch_cxx11_abi ? (*torch_cxx11_abi ? " (cxx11)" : " (cxx98)") : "");
  if (tvm_ffi) out += ", tvm-ffi " + mm(*tvm_ffi);
  out += ", " + backend.name + (backend.version ? " " + mm(*backend.version) : "");
  return out;
}

SystemFacts linux_system_facts(const std::optional<toolchain::TorchInstall>& torch, std::string_view machine) {
  SystemFacts facts;
  facts.os = "linux";
  facts.cpu = std::string(machine);  // the loader uses platform.machine() as is on Linux
  if (torch) {
    facts.torch = util::Version({torch->version.major(), torch->version.minor()});
    facts.torch_cxx11_abi = torch->cxx11_abi;
    if (torch->cuda) facts.backend = {"cuda", util::Version({torch->cuda->major(), torch->cuda->minor()})};
  }
  return facts;
}

namespace {

std::optional<std::string> rejection(const LoaderVariant& v, const SystemFacts& s) {
  using F = LoaderVariant::Framework;
  auto opt = [](const std::optional<util::Version>& version) { return version ? mm(*version) : std::string("None"); };
  if (v.framework == F::noarch) {
    std::string backend = s.backend.name == "cann" ? "npu" : s.backend.name;
    if (v.noarch_backend != backend && v.noarch_backend != "universal")
      return "backend (" + v.noarch_backend + ") does not match system backend (" + backend + ") and is not universal";
    return std::nullopt;
  }
  if (v.cpu != s.cpu) return "CPU (" + v.cpu + ") does not match system CPU (" + s.cpu + ")";
  if (v.os != s.os) return "OS (" + v.os + ") does not match system OS (" + s.os + ")";
  if (v.framework == F::torch) {
    if (!s.torch || *s.torch != v.framework_version)
      return "Torch version (" + mm(v.framework_version) + ") does not match environment Torch version (" +
             opt(s.torch) + ")";
    if (v.cxx11_abi && v.cxx11_abi != s.torch_cxx11_abi)
      return std::string("Torch CXX11 ABI (") + (*v.cxx11_abi ? "True" : "False") +
             ") does not match environment Torch CXX11 ABI (" +
             (s.torch_cxx11_abi ? (*s.torch_cxx11_abi ? "True" : "False") : "None") + ")";
  } else if (v.framework == F::stable_abi) {
    if (!s.torch || v.framework_version > *s.torch)
      return "Torch stable ABI version (" + mm(v.framework_version) + ") is too new for environment Torch version (" +
             opt(s.torch) + ")";
  } else if (v.framework == F::tvm_ffi) {
    if (!s.tvm_ffi || *s.tvm_ffi != v.framework_version)
      return "tvm-ffi version (" + mm(v.framework_version) + ") does not match environment tvm-ffi version (" +
             opt(s.tvm_ffi) + ")";
  }
  if (s.backend.name == "cuda" && v.backend.name == "cuda" && s.backend.version && v.backend.version) {
    if (v.backend.version->major() != s.backend.version->major() ||
        v.backend.version->minor() > s.backend.version->minor())
      return "CUDA version (" + mm(*v.backend.version) + ") is not compatible with system CUDA version (" +
             mm(*s.backend.version) + ")";
  } else if (v.backend.variant_str() != s.backend.variant_str()) {
    return "backend (" + v.backend.variant_str() + ") does not match selected backend (" + s.backend.variant_str() +
           ")";
  } else if (v.backend.name == "metal") {
    return "Metal kernels require macOS 26.0 or later";
  }
  return std::nullopt;
}

std::tuple<int, int, long, long, long> preference(const VariantDecision& d) {
  using F = LoaderVariant::Framework;
  const LoaderVariant& v = d.variant;
  int decision = d.accepted ? 0 : 1;
  if (v.framework == F::noarch) return {decision, 2, 0, 0, v.noarch_backend == "universal" ? 1 : 0};
  int framework = v.framework == F::stable_abi ? 0 : v.framework == F::torch ? 1 : 2;
  long abi_a = 0, abi_b = 0;
  if (v.framework == F::stable_abi) {
    abi_a = -static_cast<long>(v.framework_version.major());
    abi_b = -static_cast<long>(v.framework_version.minor());
  } else if (v.framework == F::torch) {
    abi_b = v.cxx11_abi ? 1 : 0;
  }
  bool versioned = v.backend.version && (v.backend.name == "cuda" || v.backend.name == "rocm" ||
                                         v.backend.name == "xpu" || v.backend.name == "cann");
  long backend = versioned ? -static_cast<long>(v.backend.version->minor()) : 0;
  return {decision, framework, abi_a, abi_b, backend};
}

}  // namespace

std::vector<VariantDecision> rank_variants(std::vector<LoaderVariant> variants, const SystemFacts& system) {
  std::sort(variants.begin(), variants.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  std::vector<VariantDecision> decisions;
  for (auto& variant : variants) {
    auto reason = rejection(variant, system);
    decisions.push_back({std::move(variant), !reason, reason.value_or("")});
  }
  std::stable_sort(decisions.begin(), decisions.end(),
                   [](const auto& a, const auto& b) { return preference(a) < preference(b); });
  return decisions;
}

std::optional<std::string> select_variant(const std::vector<std::string>& names, const SystemFacts& system,
                                          std::vector<VariantDecision>* trace) {
  std::vector<LoaderVariant> variants;
  for (const auto& name : names)
    if (auto parsed = parse_loader_variant(name)) variants.push_back(std::move(*parsed));
  auto ranked = rank_variants(std::move(variants), system);
  std::optional<std::string> chosen;
  if (!ranked.empty() && ranked.front().accepted) chosen = ranked.front().variant.name;
  if (trace) *trace = std::move(ranked);
  return chosen;
}

}  // namespace kbuild::lock
