// kbuild ci github [KERNEL_DIR] [--output PATH] [--force] [--stdout]: write the CI fan-out workflow.

#include <fmt/core.h>

#include "kbuild/cli/command.hpp"
#include "kbuild/usecase/ci_workflow.hpp"
#include "kbuild/usecase/kernel_source.hpp"

namespace kbuild::cli {

namespace {

struct CiOptions {
  std::string kernel_dir = ".";
  std::string output;
  bool force = false;
  bool to_stdout = false;
};

Result<ExitCode> run_ci_github(const CiOptions& options, Services& services) {
  usecase::CiRequest request;
  request.kernel_dir = absolute_dir(options.kernel_dir);
  if (!options.output.empty()) request.output = std::filesystem::absolute(options.output);
  request.write = !options.to_stdout;
  request.force = options.force;
  LogReporter reporter(false);
  auto use_case_services = services.with(reporter);
  KB_TRY_ASSIGN(auto outcome, usecase::ci_workflow(request, use_case_services));
  if (!request.write)
    fmt::print("{}", outcome.workflow.text);
  else if (outcome.up_to_date)
    fmt::print("{} is already there and up to date (kbuild init writes it)\n", outcome.written.string());
  else
    fmt::print("wrote {}\nit needs these repository settings:\n{}", outcome.written.string(),
               usecase::k_workflow_settings);
  return ExitCode::ok;
}

}  // namespace

void register_ci(CLI::App& app, CommandAction& action) {
  CLI::App* group = app.add_subcommand("ci", "Continuous integration: generate the matrix fan-out workflow");
  group->require_subcommand(1);
  auto options = std::make_shared<CiOptions>();
  CLI::App* github = group->add_subcommand(
      "github", "Write a GitHub Actions workflow: a build job per variant, a shared compile cache, publish on tags");
  github->add_option("kernel_dir", options->kernel_dir, "Kernel directory (contains build.toml)")
      ->capture_default_str();
  github->add_option("-o,--output", options->output,
                     "Where to write it (default: <repository root>/.github/workflows/kbuild-<name>.yml)");
  github->add_flag("--force", options->force, "Replace an existing file");
  github->add_flag("--stdout", options->to_stdout, "Print the workflow instead of writing it");
  github->callback([options, &action] { action = [options](Services& s) { return run_ci_github(*options, s); }; });
}

}  // namespace kbuild::cli
