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
  auto kernel_dir = absolute_dir(options.kernel_dir);
  KB_TRY_ASSIGN(config::KernelConfig config, usecase::load_kernel(services.fs, kernel_dir, print_diagnostics));
  KB_TRY_ASSIGN(usecase::CiWorkflow workflow,
                usecase::github_workflow(services.launcher, services.fs, config, kernel_dir));
  if (options.to_stdout) {
    fmt::print("{}", workflow.text);
    return ExitCode::ok;
  }
  auto path = options.output.empty() ? workflow.path : std::filesystem::absolute(options.output);
  if (services.fs.stat(path).exists && !options.force) {
    // `kbuild init` writes the same workflow: right after it, there is nothing to do.
    if (services.fs.read_file(path).value_or("") == workflow.text) {
      fmt::print("{} is already there and up to date (kbuild init writes it)\n", path.string());
      return ExitCode::ok;
    }
    return fail(path.string() +
                    " exists and differs from what kbuild would write now (edited, or written by "
                    "an older kbuild); nothing was written",
                "pass --force to regenerate it (your edits to it are lost), or --stdout to compare", ExitCode::usage);
  }
  KB_TRY(services.fs.write_file_atomic(path, workflow.text));
  fmt::print("wrote {}\nit needs these repository settings:\n{}", path.string(), usecase::k_workflow_settings);
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
