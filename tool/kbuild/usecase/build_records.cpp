#include "kbuild/usecase/build_records.hpp"

#include <nlohmann/json.hpp>

namespace kbuild::usecase {

std::string toolchains_record(const std::vector<plan::VariantBuild>& builds) {
  nlohmann::ordered_json record;
  record["variants"] = nlohmann::ordered_json::object();
  for (const auto& build : builds) {
    if (!build.toolchain) continue;
    const auto& tc = *build.toolchain;
    nlohmann::ordered_json entry = {{"cxx", tc.cxx.cxx.string() + " " + tc.cxx.version}, {"cxx-origin", tc.cxx.origin}};
    if (tc.cxx.pinned()) entry["cxx-pins"] = tc.cxx.pins;
    if (build.variant.traits().torch_toolchain) {  // tvm-ffi: see kbuild.lock's tvm-ffi pin
      entry["torch"] = tc.torch.version_string;
      entry["torch-origin"] = tc.torch.origin;
      entry["python-headers"] = tc.python.version;
    }
    if (tc.cuda) {
      entry["cuda"] = tc.cuda->version.str();
      entry["cuda-origin"] = tc.cuda->origin + ":" + tc.cuda->root.string();
    }
    record["variants"][build.variant.name()] = entry;
  }
  return record.dump(2) + "\n";
}

std::string compile_commands(const plan::JobGraph& graph, const std::filesystem::path& kernel_dir) {
  nlohmann::ordered_json entries = nlohmann::ordered_json::array();
  for (const auto& job : graph.jobs) {
    if (job.kind != plan::JobKind::compile_cxx && job.kind != plan::JobKind::compile_cuda) continue;
    if (job.inputs.empty() || job.outputs.empty()) continue;
    entries.push_back({{"directory", kernel_dir.string()},
                       {"file", job.inputs.front().string()},
                       {"arguments", job.argv},
                       {"output", job.outputs.front().string()}});
  }
  return entries.dump(2) + "\n";
}

}  // namespace kbuild::usecase
