// kbuild check [KERNEL_DIR]: verify the layout, metadata and ABI of the built variants.

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "kbuild/cli/command.hpp"
#include "kbuild/usecase/check_variants.hpp"
#include "kbuild/usecase/rebuild_check.hpp"

namespace kbuild::cli {

namespace {

struct CheckOptions {
  std::string kernel_dir = ".";
  std::string manylinux = "manylinux_2_28";
  bool json = false;
  bool allow_stale = false;
  bool rebuild = false;
  std::vector<std::string> variants;
  std::string python;
  size_t jobs = 0;
};

// --rebuild: each variant built again apart and compared byte for byte (usecase/rebuild_check.hpp).
Result<ExitCode> run_rebuild_check(const CheckOptions& options, Services& services) {
  LogReporter reporter(false);
  auto use_case_services = services.with(reporter);
  usecase::RebuildCheckRequest request;
  request.kernel_dir = absolute_dir(options.kernel_dir);
  request.variants = options.variants;
  KB_TRY_ASSIGN(request.python, python_setting(options.python, services));
  request.jobs = options.jobs > 0 ? options.jobs : available_cpus();
  request.builder_version = builder_id();
  request.manylinux = options.manylinux;
  KB_TRY_ASSIGN(auto outcome, usecase::check_rebuild(request, use_case_services));
  for (const auto& variant : outcome.variants) {
    if (variant.difference.empty())
      fmt::print("{}: identical to a rebuild\n", variant.name);
    else
      fmt::print("{}: differs from a rebuild: {}\n", variant.name, variant.difference);
  }
  if (outcome.differing > 0)
    return fail(fmt::format("{} of {} variants differ from a rebuild of their sources", outcome.differing,
                            outcome.variants.size()),
                "the variant is stale, was built with other toolchains, or the kernel is not reproducible "
                "(docs/matrix.md, \"Reproducibility\")");
  return ExitCode::ok;
}

Result<ExitCode> run_check(const CheckOptions& options, Services& services) {
  if (options.rebuild) return run_rebuild_check(options, services);
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
  cmd->add_flag("--rebuild", options->rebuild,
                "Build each variant again apart (pinned toolchains for matrix variants, no compile cache) and "
                "report the first file that differs");
  cmd->add_option("--variant", options->variants, "With --rebuild: only this variant (repeatable)");
  cmd->add_option("--python", options->python, "With --rebuild: the Python whose headers (and Torch) builds use");
  cmd->add_option("-j,--jobs", options->jobs, "With --rebuild: parallel jobs (default: number of CPUs)");
  cmd->callback([options, &action] { action = [options](Services& s) { return run_check(*options, s); }; });
}

}  // namespace kbuild::cli
