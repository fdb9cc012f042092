// kbuild check [KERNEL_DIR]: verify the layout, metadata and ABI of the built variants.

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "kbuild/cli/command.hpp"
#include "kbuild/layout/check.hpp"
#include "kbuild/layout/signature.hpp"
#include "kbuild/usecase/freshness.hpp"
#include "kbuild/usecase/kernel_source.hpp"

namespace kbuild::cli {

namespace {

struct CheckOptions {
  std::string kernel_dir = ".";
  std::string manylinux = "manylinux_2_28";
  bool json = false;
  bool allow_stale = false;
};

// Whether each variant is what a build of the current sources would install (usecase/freshness.hpp):
// a stale one is an error (a warning with --allow-stale), one built elsewhere a warning. Without a
// readable build.toml (a downloaded kernel) nothing is compared.
std::map<std::string, std::vector<layout::CheckIssue>> variant_freshness_issues(
    Services& services, const std::filesystem::path& kernel_dir, const std::vector<std::filesystem::path>& variants,
    bool allow_stale) {
  std::map<std::string, std::vector<layout::CheckIssue>> out;
  if (!services.fs.stat(kernel_dir / "build.toml").exists) return out;
  auto config = usecase::load_kernel(services.fs, kernel_dir, {});
  if (!config) return out;
  std::vector<std::string> names;
  for (const auto& variant : variants) names.push_back(variant.filename().string());
  auto freshness = usecase::variant_freshness(services.fs, kernel_dir, *config, names);
  if (!freshness) return out;
  for (const auto& entry : *freshness) {
    if (entry.state == usecase::VariantFreshness::State::current) continue;
    bool stale = entry.state == usecase::VariantFreshness::State::stale;
    layout::CheckIssue issue;
    issue.error = stale && !allow_stale;
    issue.where = entry.variant;
    issue.message = (stale ? "older than the sources: " : "not compared with the sources: ") + entry.reason +
                    (stale ? "; run kbuild build" : "");
    out[entry.variant].push_back(std::move(issue));
  }
  return out;
}

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
  auto freshness = variant_freshness_issues(services, kernel_dir, variants, options.allow_stale);
  for (const auto& variant : variants) {
    auto issues = layout::check_variant(services.fs, variant, check_options);
    auto& stale = freshness[variant.filename().string()];
    issues.insert(issues.begin(), stale.begin(), stale.end());
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
  if (options.json) print_json_document(report.dump(2));
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
  cmd->add_flag("--allow-stale", options->allow_stale,
                "Report a variant older than its sources as a warning, not an error");
  cmd->callback([options, &action] { action = [options](Services& s) { return run_check(*options, s); }; });
}

}  // namespace kbuild::cli
