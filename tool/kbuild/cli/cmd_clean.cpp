// kbuild clean [KERNEL_DIR] [--all]: remove development artifacts.

#include <fmt/core.h>

#include "kbuild/cli/command.hpp"
#include "kbuild/usecase/clean.hpp"

namespace kbuild::cli {

namespace {

struct CleanOptions {
  std::string kernel_dir = ".";
  bool all = false;
  bool dry_run = false;
};

Result<ExitCode> run_clean(const CleanOptions& options, Services& services) {
  auto kernel_dir = absolute_dir(options.kernel_dir);
  exec::TerminalOptions voice;
  voice.out = stderr;  // "waiting for the build in ..." (stdout lists what was removed)
  exec::TerminalReporter reporter(voice);
  auto use_case_services = services.with(reporter);
  KB_TRY_ASSIGN(auto outcome, usecase::clean({kernel_dir, options.all, options.dry_run}, use_case_services));
  for (const auto& path : outcome.removed)
    fmt::print("{} {}\n", options.dry_run ? "would remove" : "removed", path.string());
  if (outcome.removed.empty()) fmt::print("nothing to remove in {}\n", kernel_dir.string());
  return ExitCode::ok;
}

}  // namespace

void register_clean(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<CleanOptions>();
  CLI::App* cmd = app.add_subcommand(
      "clean", "Remove intermediates (KERNEL_DIR/.kbuild); with --all also the built variants (build/)");
  cmd->add_option("kernel_dir", options->kernel_dir, "Kernel directory (contains build.toml)")->capture_default_str();
  cmd->add_flag("--all", options->all, "Also remove build/ (the variants)");
  cmd->add_flag("-n,--dry-run", options->dry_run, "Only print what would be removed");
  cmd->callback([options, &action] { action = [options](Services& s) { return run_clean(*options, s); }; });
}

}  // namespace kbuild::cli
