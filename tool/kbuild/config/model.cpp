#include <algorithm>

#include "kbuild/config/diagnostic.hpp"
#include "kbuild/config/model.hpp"

namespace kbuild::config {

namespace {
struct BackendName {
  Backend backend;
  const char* name;
};
constexpr BackendName k_backend_names[] = {
    {Backend::cann, "cann"},     {Backend::cpu, "cpu"},   {Backend::cuda, "cuda"}, {Backend::metal, "metal"},
    {Backend::neuron, "neuron"}, {Backend::rocm, "rocm"}, {Backend::tpu, "tpu"},   {Backend::xpu, "xpu"},
};
}  // namespace

std::string to_string(Backend backend) {
  for (const auto& entry : k_backend_names)
    if (entry.backend == backend) return entry.name;
  return "?";
}

std::optional<Backend> parse_backend(std::string_view name) {
  for (const auto& entry : k_backend_names)
    if (name == entry.name) return entry.backend;
  return std::nullopt;
}

const std::vector<std::string>& backend_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& entry : k_backend_names) out.push_back(entry.name);
    return out;
  }();
  return names;
}

std::string KernelConfig::package_dir() const {
  return (framework == Framework::tvm_ffi ? "tvm-ffi-ext/" : "torch-ext/") + general.python_name();
}

std::string General::python_name() const {
  std::string out = name;
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

std::vector<const KernelComponent*> KernelConfig::components_for(Backend backend) const {
  std::vector<const KernelComponent*> out;
  for (const auto& component : kernels)
    if (component.backend == backend) out.push_back(&component);
  return out;
}

}  // namespace kbuild::config
