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

std::string Variant::name() const {
  if (kind == Kind::noarch) return "torch-" + to_string(backend);
  std::string out = kind == Kind::tvm_ffi      ? "tvm-ffi" + flatten_version(tvm_ffi)
                    : kind == Kind::stable_abi ? "torch-stable-abi" + flatten_version(torch)
                                               : "torch" + flatten_version(torch);
  if (kind == Kind::torch && cxx11_abi && os == "linux") out += "-cxx11";
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
  if (match[1].str() != "torch") {
    if (match[4].matched) return std::nullopt;  // only Torch-version names carry a C++ ABI tag
    variant.kind = match[1].str() == "tvm-ffi" ? Kind::tvm_ffi : Kind::stable_abi;
  }
  (variant.kind == Kind::tvm_ffi ? variant.tvm_ffi : variant.torch) = util::Version({number(2), number(3)});
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
