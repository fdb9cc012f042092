// kbuild variants [KERNEL_DIR] [--json] [--python P]: the kernel's build matrix, or a local build's variants.

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "kbuild/cli/command.hpp"
#include "kbuild/toolchain/probe.hpp"
#include "kbuild/usecase/kernel_source.hpp"
#include "kbuild/usecase/local_variants.hpp"
#include "kbuild/usecase/matrix_session.hpp"

namespace kbuild::cli {

namespace {

struct VariantsOptions {
  std::string kernel_dir = ".";
  bool json = false;
  std::optional<std::string> python;  ///< local mode: what `kbuild build --python P` builds
  plan::MatrixFilter filter;
  std::vector<std::string> cuda_toolkits;
};

using Json = nlohmann::ordered_json;

Json variant_json(const config::Variant& v, std::optional<util::Version> torch, std::optional<util::Version> cuda,
                  bool present) {
  bool noarch = v.kind == config::Variant::Kind::noarch;
  bool no_torch = noarch || v.kind == config::Variant::Kind::tvm_ffi;
  std::string compute = v.backend == config::Backend::cuda && v.cuda ? "cu" + config::flatten_version(*v.cuda)
                                                                     : config::to_string(v.backend);
  return {{"name", v.name()},
          {"torch", no_torch || !torch ? Json() : Json(torch->major_minor())},
          {"backend", config::to_string(v.backend)},
          {"compute", noarch ? "noarch" : compute},
          {"cuda", cuda ? Json(cuda->major_minor()) : Json()},
          {"stable_abi", v.kind == config::Variant::Kind::stable_abi ? Json(v.torch.major_minor()) : Json()},
          {"toolchain", present ? "present" : "fetch"}};
}

// The matrix of kbuild.toml (or the default one), after the filters.
Result<std::string> list_matrix(const VariantsOptions& options, const config::KernelConfig& config,
                                const std::filesystem::path& kernel_dir, Services& services, Json& list,
                                std::vector<std::string>& left_out) {
  KB_TRY_ASSIGN(usecase::MatrixSession session,
                usecase::open_matrix(services.fs, config, kernel_dir, options.filter, false, print_diagnostics, true));
  KB_TRY_ASSIGN(auto user_cuda, usecase::parse_cuda_toolkits(options.cuda_toolkits));
  auto system = toolchain::probe_cuda(services.launcher, services.fs, services.env.get("CUDA_HOME"));
  std::optional<toolchain::CudaToolkit> system_cuda = system ? *system : std::nullopt;
  auto cache = util::CacheLayout::from_environment(services.env);
  left_out = session.notes;
  for (const auto& entry : session.selected) {
    if (auto reason = plan::unbuildable_reason(config, entry.variant.backend)) {
      left_out.push_back(entry.variant.name() + ": " + *reason);
      continue;
    }
    bool present = usecase::toolchains_present(entry, session.lock, cache, system_cuda, user_cuda, services.fs);
    list.push_back(variant_json(entry.variant, entry.torch, entry.cuda, present));
  }
  return session.spec.origin;
}

// The variants a local build with this interpreter's Torch and the system toolkit would make.
Result<std::string> list_local(const VariantsOptions& options, const config::KernelConfig& config, Services& services,
                               Json& list, std::vector<std::string>& left_out) {
  toolchain::ProbeOptions probe;
  probe.python = *options.python;
  probe.cuda_home = services.env.get("CUDA_HOME");
  probe.cxx = services.env.get_or("CXX", "g++");
  probe.need_torch = config.framework != config::Framework::tvm_ffi;
  KB_TRY_ASSIGN(toolchain::Toolchain local, toolchain::probe_local_toolchain(services.launcher, services.fs, probe));
  auto variants =
      usecase::select_local_variants(config, local, {}, [&](const std::string& why) { left_out.push_back(why); });
  // Nothing buildable here is an empty list with the reasons (docs/cli.md: --json is always JSON).
  const std::string origin = "local (" + *options.python + ", torch " + local.torch.version_string + ")";
  if (!variants && variants.error().code == ExitCode::toolchain && !left_out.empty()) return origin;
  if (!variants) return fail(variants.error());
  for (const auto& build : *variants) {
    if (auto reason = plan::unbuildable_reason(config, build.variant.backend)) {
      left_out.push_back(build.variant.name() + ": " + *reason);
      continue;
    }
    std::optional<util::Version> cuda;
    if (build.variant.backend == config::Backend::cuda && local.cuda) cuda = local.cuda->version;
    list.push_back(variant_json(build.variant, local.torch.version, cuda, true));
  }
  return origin;
}

Result<ExitCode> run_variants(const VariantsOptions& options, Services& services) {
  auto kernel_dir = absolute_dir(options.kernel_dir);
  if (options.python && (!options.filter.variants.empty() || !options.filter.torch.empty() ||
                         !options.filter.cuda.empty() || !options.cuda_toolkits.empty()))
    return fail("--python lists a local build; --variant, --torch, --cuda and --cuda-toolkit filter the matrix",
                "use one or the other", ExitCode::usage);
  KB_TRY_ASSIGN(config::KernelConfig config, usecase::load_kernel(services.fs, kernel_dir, print_diagnostics));
  Json list = Json::array();
  std::vector<std::string> left_out;
  KB_TRY_ASSIGN(std::string origin, options.python
                                        ? list_local(options, config, services, list, left_out)
                                        : list_matrix(options, config, kernel_dir, services, list, left_out));
  if (options.json) {
    print_json_document(
        Json{{"kernel", config.general.name}, {"matrix", origin}, {"variants", list}, {"left_out", left_out}}.dump(2));
    return ExitCode::ok;
  }
  fmt::print("{} variant{} of {} (matrix: {})\n", list.size(), list.size() == 1 ? "" : "s", config.general.name,
             origin);
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
  cmd->add_option("--python", options->python,
                  "List what `kbuild build --python PYTHON` builds (the local Torch and CUDA) instead of the matrix");
  cmd->add_option("--variant", options->filter.variants, "Only this variant (repeatable)");
  cmd->add_option("--torch", options->filter.torch, "Only these Torch versions (repeatable)");
  cmd->add_option("--cuda", options->filter.cuda, "Only these CUDA versions, or cpu (repeatable)");
  cmd->add_option("--cuda-toolkit", options->cuda_toolkits, "A local CUDA toolkit, VERSION=PATH");
  cmd->callback([options, &action] { action = [options](Services& s) { return run_variants(*options, s); }; });
}

}  // namespace kbuild::cli
