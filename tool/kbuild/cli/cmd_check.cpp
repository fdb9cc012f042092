// kbuild check [KERNEL_DIR]: verify the layout, metadata and ABI of the built variants.

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "kbuild/cli/command.hpp"
#include "kbuild/layout/check.hpp"
#include "kbuild/layout/signature.hpp"

namespace kbuild::cli {

namespace {

struct CheckOptions {
  std::string kernel_dir = ".";
  std::string manylinux = "manylinux_2_28";
  bool json = false;
};

Result<ExitCode> run_check(const CheckOptions& options, Services& services) {
  auto kernel_dir = absolute_dir(options.kernel_dir);
  if (!layout::is_known_manylinux_policy(options.manylinux))
    return fail("unknown --manylinux policy " + options.manylinux, "use manylinux_2_28 or none", ExitCode::usage);
  auto build_dir = kernel_dir / "build";
  auto entries = services.fs.list_dir(build_dir);
  if (!entries) return fail("no build/ in " + kernel_dir.string(), "run kbuild build first", ExitCode::usage);
  std::vector<std::filesystem::path> variants;
  for (const auto& entry : *entries)
    if (entry.is_dir && !entry.name.starts_with(".")) variants.push_back(build_dir / entry.name);
  if (variants.empty()) return fail("build/ holds no variants", "run kbuild build first", ExitCode::usage);

  size_t errors = 0, warnings = 0;
  nlohmann::ordered_json report = nlohmann::ordered_json::object();
  layout::CheckOptions check_options;
  check_options.manylinux = options.manylinux;
  for (const auto& variant : variants) {
    auto issues = layout::check_variant(services.fs, variant, check_options);
    auto& entry = report[variant.filename().string()] = nlohmann::ordered_json::array();
    for (const auto& issue : issues) {
      (issue.error ? errors : warnings)++;
      entry.push_back(
          {{"severity", issue.error ? "error" : "warning"}, {"where", issue.where}, {"message", issue.message}});
      if (!options.json) fmt::print("{}: {}: {}\n", issue.where, issue.error ? "error" : "warning", issue.message);
    }
    // The signature's state, as information (an invalid bundle is an error issue above).
    std::string signature = layout::to_string(layout::signature_status(services.fs, variant).state);
    if (signature != "invalid")
      entry.push_back({{"severity", "info"}, {"where", variant.filename().string()}, {"message", signature}});
    if (!options.json && issues.empty()) fmt::print("{}: ok ({})\n", variant.filename().string(), signature);
  }
  if (options.json) fmt::print("{}\n", report.dump(2));
  if (errors > 0)
    return fail(fmt::format("{} problem{} in {}", errors, errors == 1 ? "" : "s", build_dir.string()),
                "rebuild with kbuild build; see docs/cli.md for what each check means");
  return ExitCode::ok;
}

}  // namespace

void register_check(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<CheckOptions>();
  CLI::App* cmd = app.add_subcommand("check", "Verify the layout, metadata, digests and ABI of KERNEL_DIR/build/*");
  cmd->add_option("kernel_dir", options->kernel_dir, "Kernel directory (contains build/)")->capture_default_str();
  cmd->add_option("--manylinux", options->manylinux, "Symbol-version policy: manylinux_2_28 or none")
      ->capture_default_str();
  cmd->add_flag("--json", options->json, "Print the findings as JSON");
  cmd->callback([options, &action] { action = [options](Services& s) { return run_check(*options, s); }; });
}

}  // namespace kbuild::cli
