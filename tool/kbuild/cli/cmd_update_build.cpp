// kbuild update-build [KERNEL_DIR] [--dry-run]: bring build.toml to edition 5 in place.

#include <fmt/core.h>

#include "kbuild/cli/command.hpp"
#include "kbuild/config/update_build.hpp"
#include "kbuild/usecase/kernel_source.hpp"

namespace kbuild::cli {

namespace {

struct UpdateBuildOptions {
  std::string kernel_dir = ".";
  bool dry_run = false;
};

Result<ExitCode> run_update_build(const UpdateBuildOptions& options, Services& services) {
  auto kernel_dir = absolute_dir(options.kernel_dir);
  KB_TRY(usecase::require_kernel_dir(services.fs, kernel_dir));
  const auto path = kernel_dir / "build.toml";
  KB_TRY_ASSIGN(std::string text, util::read_input_file(services.fs, path, 1u << 20));
  KB_TRY_ASSIGN(auto updated, config::update_build_toml(text, path.string()));
  if (!updated) {
    fmt::print("{} is edition 5 already; nothing to do\n", path.string());
    return ExitCode::ok;
  }
  if (options.dry_run) {
    fmt::print("{}", *updated);
    return ExitCode::ok;
  }
  KB_TRY(services.fs.write_file_atomic(path, *updated));
  fmt::print("updated {}: added edition = 5 to [general] (comments and order kept)\n", path.string());
  return ExitCode::ok;
}

}  // namespace

void register_update_build(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<UpdateBuildOptions>();
  CLI::App* cmd =
      app.add_subcommand("update-build", "Update an edition-less (v4) or v3 build.toml to edition 5 in place");
  cmd->add_option("kernel_dir", options->kernel_dir, "Kernel directory (contains build.toml)")->capture_default_str();
  cmd->add_flag("-n,--dry-run", options->dry_run, "Print the updated file instead of writing it");
  cmd->callback([options, &action] { action = [options](Services& s) { return run_update_build(*options, s); }; });
}

}  // namespace kbuild::cli
