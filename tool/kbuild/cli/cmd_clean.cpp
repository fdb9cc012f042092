// kbuild clean [KERNEL_DIR] [--all]: remove development artifacts.

#include <fmt/core.h>

#include "kbuild/cli/command.hpp"

namespace kbuild::cli {

namespace {

struct CleanOptions {
  std::string kernel_dir = ".";
  bool all = false;
  bool dry_run = false;
};

Result<ExitCode> run_clean(const CleanOptions& options, Services& services) {
  auto kernel_dir = absolute_dir(options.kernel_dir);
  if (!services.fs.stat(kernel_dir / "build.toml").is_file)
    return fail(kernel_dir.string() + " is not a kernel directory (no build.toml); nothing removed",
                "run kbuild clean inside the kernel directory or pass it as an argument", ExitCode::usage);
  std::vector<std::filesystem::path> targets = {kernel_dir / ".kbuild"};
  if (options.all) targets.push_back(kernel_dir / "build");
  bool found = false;
  for (const auto& target : targets) {
    if (!services.fs.stat(target).exists) continue;
    found = true;
    if (options.dry_run) {
      fmt::print("would remove {}\n", target.string());
      continue;
    }
    KB_TRY(services.fs.remove_all(target));
    fmt::print("removed {}\n", target.string());
  }
  if (!found) fmt::print("nothing to remove in {}\n", kernel_dir.string());
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
