// kbuild variants [KERNEL_DIR] [--json|--names] [--python P]: the kernel's build matrix, or a local build's
// variants; --names also the variants built in build/ (for shell completion).

#include <fmt/core.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "kbuild/cli/command.hpp"
#include "kbuild/usecase/freshness.hpp"
#include "kbuild/usecase/list_variants.hpp"

namespace kbuild::cli {

namespace {

struct VariantsOptions {
  std::string kernel_dir = ".";
  bool json = false;
  bool names = false;
  std::optional<std::string> python;  ///< local mode: what `kbuild build --python P` builds
  plan::MatrixFilter filter;
  std::vector<std::string> cuda_toolkits;
};

using Json = nlohmann::ordered_json;

Json variant_json(const config::Variant& v, std::optional<util::Version> torch, std::optional<util::Version> cuda,
                  bool present) {
  bool noarch = !v.compiled();
  bool no_torch = !v.traits().torch_toolchain;
  std::string compute = v.backend == config::Backend::cuda && v.cuda ? "cu" + config::flatten_version(*v.cuda)
                                                                     : config::to_string(v.backend);
  return {{"name", v.name()},
          {"torch", no_torch || !torch ? Json() : Json(torch->major_minor())},
          {"backend", config::to_string(v.backend)},
          {"compute", noarch ? "noarch" : compute},
          {"cuda", cuda ? Json(cuda->major_minor()) : Json()},
          {"stable_abi", v.traits().torch_target_version ? Json(v.torch.major_minor()) : Json()},
          {"toolchain", present ? "present" : "fetch"}};
}

// One name a line: the variants built in build/ (what test, check and publish take), then the list's
// others (what build makes); either part that cannot be read is left out, so completion offers the rest.
ExitCode print_names(const std::string& kernel_dir, const Result<usecase::ListVariantsOutcome>& listed,
                     Services& services) {
  std::vector<std::string> names;
  if (auto built = usecase::built_variant_names(services.fs, kernel_dir)) names = *built;
  if (listed)
    for (const auto& item : listed->variants)
      if (std::find(names.begin(), names.end(), item.variant.name()) == names.end())
        names.push_back(item.variant.name());
  for (const auto& name : names) fmt::print("{}\n", name);
  return ExitCode::ok;
}

Result<ExitCode> run_variants(const VariantsOptions& options, Services& services) {
  LogReporter reporter(false);
  if (options.names) {
    auto use_case_services = services.with(reporter);
    const std::string dir = absolute_dir(options.kernel_dir);
    return print_names(
        dir, usecase::list_variants({dir, options.python, options.filter, options.cuda_toolkits}, use_case_services),
        services);
  }
  auto use_case_services = services.with(reporter);
  KB_TRY_ASSIGN(auto outcome, usecase::list_variants({absolute_dir(options.kernel_dir), options.python, options.filter,
                                                      options.cuda_toolkits},
                                                     use_case_services));
  Json list = Json::array();
  for (const auto& listed : outcome.variants)
    list.push_back(variant_json(listed.variant, listed.torch, listed.cuda, listed.toolchain_present));
  const auto& left_out = outcome.left_out;
  const auto& origin = outcome.origin;
  if (options.json) {
    print_json_document(
        Json{{"kernel", outcome.kernel}, {"matrix", origin}, {"variants", list}, {"left_out", left_out}}.dump(2));
    return ExitCode::ok;
  }
  fmt::print("{} variant{} of {} (matrix: {})\n", list.size(), list.size() == 1 ? "" : "s", outcome.kernel, origin);
  if (!list.empty()) fmt::print("  {:40} {:11} {:7} {}\n", "VARIANT", "TORCH", "COMPUTE", "TOOLCHAIN");
  for (const auto& item : list)
    fmt::print("  {:40} torch {:5} {:7} toolchain {}\n", item["name"].get<std::string>(),
               item["torch"].is_null() ? "-" : item["torch"].get<std::string>(), item["compute"].get<std::string>(),
               item["toolchain"].get<std::string>());
  for (const auto& note : left_out) fmt::print("  (left out: {})\n", note);
  return ExitCode::ok;
}

}  // namespace

void register_variants(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<VariantsOptions>();
  CLI::App* cmd =
      app.add_subcommand("variants", "List the kernel's build matrix (for humans, or --json for CI fan-out)");
  cmd->add_option("kernel_dir", options->kernel_dir, "Kernel directory (contains build.toml)")->capture_default_str();
  cmd->add_flag("--json", options->json,
                "Print JSON (always, also for an empty list): kernel, matrix, variants [name, torch, backend, "
                "compute, cuda, stable_abi, toolchain (present|fetch)], left_out [reasons]");
  cmd->add_flag("--names", options->names,
                "Print one name a line, for shell completion: the variants built in build/, then the list's others")
      ->excludes("--json");
  cmd->add_option("--python", options->python,
                  "List what `kbuild build --python PYTHON` builds (the local Torch and CUDA) instead of the matrix");
  cmd->add_option("--variant", options->filter.variants, "Only this variant (repeatable)");
  cmd->add_option("--torch", options->filter.torch, "Only these Torch versions (repeatable)");
  cmd->add_option("--cuda", options->filter.cuda, "Only these CUDA versions, or cpu (repeatable)");
  cmd->add_option("--cuda-toolkit", options->cuda_toolkits, "A local CUDA toolkit, VERSION=PATH");
  cmd->callback([options, &action] { action = [options](Services& s) { return run_variants(*options, s); }; });
}

}  // namespace kbuild::cli
