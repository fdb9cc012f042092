// kbuild check [KERNEL_DIR]: verify the layout, metadata and ABI of the built variants.

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "kbuild/cli/command.hpp"
#include "kbuild/usecase/check_variants.hpp"

namespace kbuild::cli {

namespace {

struct CheckOptions {
  std::string kernel_dir = ".";
  std::string manylinux = "manylinux_2_28";
  bool json = false;
  bool allow_stale = false;
};

Result<ExitCode> run_check(const CheckOptions& options, Services& services) {
  LogReporter reporter(false);
  auto use_case_services = services.with(reporter);
  KB_TRY_ASSIGN(auto outcome,
                usecase::check_variants({absolute_dir(options.kernel_dir), options.manylinux, options.allow_stale},
                                        use_case_services));
  nlohmann::ordered_json report = nlohmann::ordered_json::object();
  for (const auto& variant : outcome.variants) {
    auto& entry = report[variant.name] = nlohmann::ordered_json::array();
    for (const auto& issue : variant.issues) {
      entry.push_back(
          {{"severity", issue.error ? "error" : "warning"}, {"where", issue.where}, {"message", issue.message}});
      if (!options.json) fmt::print("{}: {}: {}\n", issue.where, issue.error ? "error" : "warning", issue.message);
    }
    // The signature's state, as information (an invalid bundle is an error issue above).
    if (variant.signature != "invalid")
      entry.push_back({{"severity", "info"}, {"where", variant.name}, {"message", variant.signature}});
    if (!options.json && variant.issues.empty()) fmt::print("{}: ok ({})\n", variant.name, variant.signature);
  }
  if (options.json) print_json_document(report.dump(2));
  if (outcome.errors > 0)
    return fail(
        fmt::format("{} problem{} in {}", outcome.errors, outcome.errors == 1 ? "" : "s", outcome.build_dir.string()),
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
  cmd->add_flag("--allow-stale", options->allow_stale,
                "Report a variant older than its sources as a warning, not an error");
  cmd->callback([options, &action] { action = [options](Services& s) { return run_check(*options, s); }; });
}

}  // namespace kbuild::cli
