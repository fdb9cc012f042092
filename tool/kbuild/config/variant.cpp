#include "kbuild/config/variant.hpp"

#include <regex>

namespace kbuild::config {

std::string flatten_version(const util::Version& version) {
  return std::to_string(version.major()) + std::to_string(version.minor());
}

std::string normalize_cpu(std::string_view machine) {
  if (machine == "amd64" || machine == "AMD64" || machine == "x86_64") return "x86_64";
  if (machine == "arm64" || machine == "ARM64" || machine == "aarch64") return "aarch64";
  return std::string(machine);
}

namespace {

// One entry per Variant::Kind, in its order.
constexpr VariantKindTraits k_kinds[] = {
    // torch: the C++ ABI of one Torch version.
    {.prefix = "torch", .cxx11_tag = true, .torch_toolchain = true},
    // stable_abi: Torch's stable ABI, loadable by the Torch it targets and newer ones.
    {.prefix = "torch-stable-abi",
     .torch_toolchain = true,
     .torch_target_version = true,
     .stable_abi_gate = true,
     .loads_with = TorchMatch::at_least},
    // tvm_ffi: a tvm-ffi module, no Torch.
    {.prefix = "tvm-ffi",
     .versioned_by_tvm_ffi = true,
     .tvm_ffi_toolchain = true,
     .loads_with = TorchMatch::none,
     .library_suffix = ".so"},
    // noarch: Python only (Triton kernels and the like), one per backend.
    {.prefix = "torch-", .compiled = false, .loads_with = TorchMatch::none, .library_suffix = ""},
};

}  // namespace

const VariantKindTraits& Variant::traits() const { return k_kinds[static_cast<int>(kind)]; }

std::string Variant::name() const {
  const auto& kind_traits = traits();
  if (!kind_traits.compiled) return std::string(kind_traits.prefix) + to_string(backend);
  std::string out =
      std::string(kind_traits.prefix) + flatten_version(kind_traits.versioned_by_tvm_ffi ? tvm_ffi : torch);
  if (kind_traits.cxx11_tag && cxx11_abi && os == "linux") out += "-cxx11";
  if (backend == Backend::cuda && cuda)
    out += "-cu" + flatten_version(*cuda);
  else
    out += "-" + to_string(backend);
  return out + "-" + cpu + "-" + os;
}

std::optional<Variant> Variant::parse(std::string_view name) {
  static const std::regex k_noarch(R"(^torch-(cpu|cuda|rocm|metal|xpu|neuron|tpu)$)");
  // Minor versions are one digit for CUDA (the loader reads the last digit as the minor).
  static const std::regex k_arch(
      R"(^(torch|torch-stable-abi|tvm-ffi)(\d)(\d+)(-cxx11)?-(cu(\d+)(\d)|cpu)-(x86_64|aarch64)-(linux)$)");
  std::string text(name);
  std::smatch match;
  Variant variant;
  if (std::regex_match(text, match, k_noarch)) {
    variant.kind = Kind::noarch;
    variant.backend = *parse_backend(match[1].str());
    return variant;
  }
  if (!std::regex_match(text, match, k_arch)) return std::nullopt;
  auto number = [&](int group) { return static_cast<unsigned>(std::stoul(match[group])); };
  for (int kind = 0; kind < static_cast<int>(std::size(k_kinds)); ++kind)
    if (k_kinds[kind].compiled && k_kinds[kind].prefix == match[1].str()) variant.kind = static_cast<Kind>(kind);
  if (match[4].matched && !variant.traits().cxx11_tag) return std::nullopt;
  (variant.traits().versioned_by_tvm_ffi ? variant.tvm_ffi : variant.torch) = util::Version({number(2), number(3)});
  variant.cxx11_abi = match[4].matched;
  if (match[5].str() == "cpu") {
    variant.backend = Backend::cpu;
  } else {
    variant.backend = Backend::cuda;
    variant.cuda = util::Version({number(6), number(7)});
  }
  variant.cpu = match[8];
  variant.os = match[9];
  return variant;
}

}  // namespace kbuild::config
