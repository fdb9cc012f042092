// kbuild config [KERNEL_DIR]: validate build.toml and print what kbuild understood, as JSON.

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "kbuild/cli/command.hpp"
#include "kbuild/config/build_toml.hpp"
#include "kbuild/plan/cuda_archs.hpp"
#include "kbuild/usecase/kernel_source.hpp"

namespace kbuild::cli {

namespace {

struct ConfigOptions {
  std::string kernel_dir = ".";
  bool syntax_only = false;
  std::string cuda = "13.0";
};

nlohmann::ordered_json to_json(const config::KernelConfig& c, const util::Version& cuda) {
  using nlohmann::ordered_json;
  auto versions = [](const std::optional<util::Version>& v) { return v ? ordered_json(v->str()) : ordered_json(); };
  ordered_json j;
  std::vector<std::string> backends;
  for (auto b : c.general.backends) backends.push_back(config::to_string(b));
  j["general"] = {{"name", c.general.name},
                  {"python-name", c.general.python_name()},
                  {"version", c.general.version},
                  {"license", c.general.license},
                  {"backends", backends},
                  {"python-depends", c.general.python_depends},
                  {"hub-repo-id", c.general.hub_repo_id ? ordered_json(*c.general.hub_repo_id) : ordered_json()},
                  {"cuda-minver", versions(c.general.cuda_minver)},
                  {"cuda-maxver", versions(c.general.cuda_maxver)}};
  j["source-edition"] = c.source_edition;
  j["framework"] = c.framework == config::Framework::torch          ? "torch"
                   : c.framework == config::Framework::torch_noarch ? "torch-noarch"
                                                                    : "tvm-ffi";
  j["torch"] = {{"src", c.torch.src},
                {"include", c.torch.include},
                {"pyext", c.torch.pyext},
                {"minver", versions(c.torch.minver)},
                {"maxver", versions(c.torch.maxver)}};
  j["kernels"] = ordered_json::array();
  for (const auto& k : c.kernels) {
    ordered_json component = {
        {"name", k.name}, {"backend", config::to_string(k.backend)}, {"src", k.src}, {"depends", k.depends}};
    if (k.backend == config::Backend::cuda)
      component["effective-cuda-capabilities"] = plan::effective_cuda_capabilities(k.cuda_capabilities, cuda);
    j["kernels"].push_back(component);
  }
  return j;
}

Result<ExitCode> run_config(const ConfigOptions& options, Services& services) {
  auto kernel_dir = absolute_dir(options.kernel_dir);
  auto cuda = util::Version::parse(options.cuda);
  if (!cuda) return fail("--cuda " + options.cuda + " is not a version", "", ExitCode::usage);
  KB_TRY(usecase::require_kernel_dir(services.fs, kernel_dir));
  config::ParseOutcome outcome;
  if (options.syntax_only) {
    KB_TRY_ASSIGN(std::string text, util::read_input_file(services.fs, kernel_dir / "build.toml", 1u << 20));
    outcome = config::parse_build_toml(text, (kernel_dir / "build.toml").string());
  } else {
    outcome = config::load_kernel_config(services.fs, kernel_dir);
  }
  print_diagnostics(outcome.diagnostics);
  if (!outcome.config)
    return fail((kernel_dir / "build.toml").string() + " is invalid", "fix the problems listed above", ExitCode::usage);
  print_json_document(to_json(*outcome.config, *cuda).dump(2));
  return ExitCode::ok;
}

}  // namespace

void register_config(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<ConfigOptions>();
  CLI::App* cmd = app.add_subcommand("config", "Validate build.toml and print kbuild's reading of it as JSON");
  cmd->add_option("kernel_dir", options->kernel_dir, "Kernel directory (contains build.toml)")->capture_default_str();
  cmd->add_flag("--syntax-only", options->syntax_only, "Check the file alone, not the sources it names");
  cmd->add_option("--cuda", options->cuda, "CUDA version for effective capabilities")->capture_default_str();
  cmd->callback([options, &action] { action = [options](Services& s) { return run_config(*options, s); }; });
}

}  // namespace kbuild::cli
