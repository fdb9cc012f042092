// kbuild test [KERNEL_DIR] [--variant NAME]... [--python PY] [--torch X.Y] [--json]: the kernel's tests against each
// built variant, with the Torch it was built for (usecase/test_variants.hpp).

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstdio>
#include <functional>
#include <iostream>

#include "kbuild/cli/command.hpp"
#include "kbuild/config/user_config.hpp"
#include "kbuild/usecase/kernel_source.hpp"
#include "kbuild/usecase/matrix_session.hpp"
#include "kbuild/usecase/test_variants.hpp"
#include "kbuild/util/interrupt.hpp"
#include "kbuild/util/log.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::cli {

namespace {

struct TestOptions {
  std::string kernel_dir = ".";
  std::vector<std::string> variants;
  std::string python;
  std::string torch;
  bool matrix = false;
  bool json = false;
  bool allow_stale = false;
  bool online = false;
  bool create_env = false;
  bool best_effort = false;
  std::string torch_index;
  std::string report;
};

// The results as the --json document and the --report file carry them (docs/cli.md, kbuild test).
nlohmann::ordered_json results_json(const std::vector<usecase::VariantTestResult>& results) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& r : results)
    out.push_back({{"variant", r.variant},
                   {"status", usecase::to_string(r.status)},
                   {"reason", r.reason},
                   {"torch", r.torch},
                   {"python", r.python.string()},
                   {"tests", r.tests},
                   {"failures", r.failures},
                   {"errors", r.errors},
                   {"skipped", r.skipped},
                   {"seconds", r.seconds}});
  return out;
}

void print_text(const std::vector<usecase::VariantTestResult>& results) {
  for (const auto& r : results) {
    if (r.status == usecase::VariantTestResult::Status::not_tested ||
        r.status == usecase::VariantTestResult::Status::loaded) {
      fmt::print("{}  {}: {}\n", r.variant, usecase::to_string(r.status), r.reason);
      continue;
    }
    fmt::print("{}  {}  {} tests, {} failed, {} errors, {} skipped  (torch {}, {:.1f} s){}\n", r.variant,
               usecase::to_string(r.status), r.tests, r.failures, r.errors, r.skipped, r.torch, r.seconds,
               r.reason.empty() ? "" : ": " + r.reason);
    if (r.status == usecase::VariantTestResult::Status::failed) fmt::print("{}\n", r.output);
  }
}

Result<ExitCode> run_test(const TestOptions& options, Services& services) {
  util::install_interrupt_handlers();  // so that an interrupted environment creation cleans up
  usecase::TestRequest request;
  request.kernel_dir = absolute_dir(options.kernel_dir);
  request.variants = options.variants;
  if (options.matrix) {
    if (!options.variants.empty())
      return fail("--matrix and --variant contradict each other", "choose one", ExitCode::usage);
    KB_TRY_ASSIGN(config::KernelConfig config,
                  usecase::load_kernel(services.fs, request.kernel_dir, print_diagnostics));
    KB_TRY_ASSIGN(request.variants, usecase::matrix_variant_names(services.fs, config, request.kernel_dir));
  }
  KB_TRY_ASSIGN(request.python, python_setting(options.python, services));
  if (!options.torch.empty()) {
    auto torch = util::Version::parse(options.torch);
    if (!torch || torch->components().size() != 2)
      return fail("--torch " + options.torch + " is not a Torch major.minor version", "e.g. --torch 2.15",
                  ExitCode::usage);
    request.torch = torch->major_minor();
  }
  request.pip_progress = !options.json && is_smart_terminal(stderr, services.env);
  request.pytest_progress = request.pip_progress && is_smart_terminal(stdout, services.env);
  request.pytest_args = arguments_after_dashes();
  request.allow_stale = options.allow_stale;
  request.online = options.online;
  request.create_env = options.create_env;
  request.best_effort = options.best_effort;
  KB_TRY_ASSIGN(config::Setting index, config::choose_torch_index(options.torch_index, services.fs, services.env));
  request.torch_index = index.value;
  // Progress and warnings on stderr (stdout has the results, or the --json document); a missing
  // test environment is asked about on a terminal.
  exec::TerminalOptions voice;
  voice.out = stderr;
  voice.interactive = !options.json;
  exec::TerminalReporter reporter(voice);
  auto test_services = services.with(reporter);
  KB_TRY_ASSIGN(auto results, usecase::test_variants(request, test_services));
  if (!options.report.empty())
    KB_TRY(services.fs.write_file_atomic(absolute_dir(options.report), results_json(results).dump(2) + "\n"));
  options.json ? print_json_document(results_json(results).dump(2)) : print_text(results);
  size_t failed = 0, untested = 0, loaded = 0;
  for (const auto& r : results) {
    failed += r.status == usecase::VariantTestResult::Status::failed;
    untested += r.status == usecase::VariantTestResult::Status::not_tested;
    loaded += r.status == usecase::VariantTestResult::Status::loaded;
  }
  if (failed > 0)
    return fail(fmt::format("{} of {} failed their tests", failed, util::count_of(results.size(), "variant")),
                "the output of each failed run is above", ExitCode::failure);
  // Variants asked for by name (or by --matrix) must be tested; the default run only reports them.
  if (untested + loaded > 0 && (!options.variants.empty() || options.matrix) && !options.best_effort)
    return fail(fmt::format("{} of the {} asked for could not be tested here", untested + loaded,
                            util::count_of(results.size(), "variant")),
                "see the reasons above; test them where a matching Torch (and GPU) is available, or pass "
                "--best-effort to test only what this machine can",
                ExitCode::failure);
  if (!options.json)
    fmt::print("kbuild: {} passed{}{}\n", util::count_of(results.size() - untested - loaded, "variant"),
               loaded ? fmt::format(", {} loaded without a GPU (tests not run)", loaded) : "",
               untested ? fmt::format(", {} not tested (see above)", untested) : "");
  return ExitCode::ok;
}

}  // namespace

void register_test(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<TestOptions>();
  CLI::App* cmd = app.add_subcommand(
      "test",
      "Run the kernel's tests (tests/, pytest) against each built variant with the Torch it was built for; "
      "arguments after -- go to pytest (kbuild test . -- -k relu -x)");
  cmd->add_option("kernel_dir", options->kernel_dir, "Kernel directory (contains build/ and tests/)")
      ->capture_default_str();
  cmd->add_option("--variant", options->variants, "Only this variant (repeatable; default: every variant in build/)");
  cmd->add_option("--python", options->python,
                  std::string("Python whose Torch serves variants of its version, and that creates the other test "
                              "environments") +
                      k_python_help_suffix);
  cmd->add_option("--torch", options->torch,
                  "Test every variant with this Torch version (X.Y) instead of its own, e.g. a stable-ABI variant "
                  "with a newer Torch; variants it cannot load are not tested");
  cmd->add_flag("--matrix", options->matrix,
                "Every variant of the kernel's matrix (kbuild variants), each of which must be built");
  cmd->add_flag("--json", options->json, "Print the results as JSON");
  cmd->add_flag("--allow-stale", options->allow_stale, "Test variants older than their sources too");
  cmd->add_flag("--online", options->online,
                "Let the tests reach the Hub (default: HF_HUB_OFFLINE=1; LOCAL_KERNELS serves the kernel itself)");
  cmd->add_flag("--create-env", options->create_env,
                "Create missing Torch test environments (pip downloads Torch: up to several GB) without asking");
  cmd->add_option("--torch-index", options->torch_index,
                  "Where new test environments get Torch: an index URL whose {compute} becomes cpu, cu130, ... "
                  "(default: $KBUILD_TORCH_INDEX, the user config's torch-index, or "
                  "https://download.pytorch.org/whl/{compute}), or pypi for PyPI's own builds");
  cmd->add_flag("--best-effort", options->best_effort,
                "Test what this machine can (CI runners): a CUDA variant without a GPU is loaded and its ops "
                "checked instead, and variants that cannot be tested here do not fail the run");
  cmd->add_option("--report", options->report, "Also write the results as JSON (the --json document) to FILE");
  cmd->callback([options, &action] { action = [options](Services& s) { return run_test(*options, s); }; });
}

}  // namespace kbuild::cli
