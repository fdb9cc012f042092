// kbuild variants [KERNEL_DIR] [--json]: the kernel's build matrix.

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "kbuild/build/kernel_source.hpp"
#include "kbuild/build/matrix_session.hpp"
#include "kbuild/cli/command.hpp"
#include "kbuild/toolchain/probe.hpp"

namespace kbuild::cli {

namespace {

struct VariantsOptions {
  std::string kernel_dir = ".";
  bool json = false;
  plan::MatrixFilter filter;
  std::vector<std::string> cuda_toolkits;
};

Result<ExitCode> run_variants(const VariantsOptions& options, Services& services) {
  auto kernel_dir = absolute_dir(options.kernel_dir);
  KB_TRY_ASSIGN(config::KernelConfig config, build::load_kernel(services.fs, kernel_dir, print_diagnostics));
  KB_TRY_ASSIGN(build::MatrixSession session,
                build::open_matrix(services.fs, config, kernel_dir, options.filter, false, print_diagnostics));
  KB_TRY_ASSIGN(auto user_cuda, build::parse_cuda_toolkits(options.cuda_toolkits));
  auto system = toolchain::probe_cuda(services.launcher, services.fs, services.env.get("CUDA_HOME"));
  std::optional<toolchain::CudaToolkit> system_cuda = system ? *system : std::nullopt;
  auto cache = util::CacheLayout::from_environment(services.env);

  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& entry : session.selected) {
    const auto& v = entry.variant;
    bool noarch = v.kind == config::Variant::Kind::noarch;
    std::string compute = v.backend == config::Backend::cuda && v.cuda ? "cu" + config::flatten_version(*v.cuda)
                                                                       : config::to_string(v.backend);
    bool present = build::toolchains_present(entry, session.lock, cache, system_cuda, user_cuda, services.fs);
    nlohmann::ordered_json item = {
        {"name", v.name()},
        {"torch", noarch ? nlohmann::ordered_json() : nlohmann::ordered_json(entry.torch.major_minor())},
        {"backend", config::to_string(v.backend)},
        {"compute", noarch ? "noarch" : compute},
        {"cuda", entry.cuda ? nlohmann::ordered_json(entry.cuda->major_minor()) : nlohmann::ordered_json()},
        {"toolchain", present ? "present" : "fetch"}};
    list.push_back(item);
  }
  if (options.json) {
    fmt::print(
        "{}\n",
        nlohmann::ordered_json{{"kernel", config.general.name}, {"matrix", session.spec.origin}, {"variants", list}}
            .dump(2));
    return ExitCode::ok;
  }
  fmt::print("{} variants of {} (matrix: {})\n", list.size(), config.general.name, session.spec.origin);
  for (const auto& item : list)
    fmt::print("  {:40} torch {:5} {:7} toolchain {}\n", item["name"].get<std::string>(),
               item["torch"].is_null() ? "-" : item["torch"].get<std::string>(), item["compute"].get<std::string>(),
               item["toolchain"].get<std::string>());
  for (const auto& note : session.notes) fmt::print("  (left out: {})\n", note);
  return ExitCode::ok;
}

}  // namespace

void register_variants(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<VariantsOptions>();
  CLI::App* cmd =
      app.add_subcommand("variants", "List the kernel's build matrix (for humans, or --json for CI fan-out)");
  cmd->add_option("kernel_dir", options->kernel_dir, "Kernel directory (contains build.toml)")->capture_default_str();
  cmd->add_flag("--json", options->json, "Print JSON: name, torch, backend, compute, cuda, toolchain (present|fetch)");
  cmd->add_option("--variant", options->filter.variants, "Only this variant (repeatable)");
  cmd->add_option("--torch", options->filter.torch, "Only these Torch versions (repeatable)");
  cmd->add_option("--cuda", options->filter.cuda, "Only these CUDA versions, or cpu (repeatable)");
  cmd->add_option("--cuda-toolkit", options->cuda_toolkits, "A local CUDA toolkit, VERSION=PATH");
  cmd->callback([options, &action] { action = [options](Services& s) { return run_variants(*options, s); }; });
}

}  // namespace kbuild::cli
