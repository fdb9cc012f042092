// kbuild build [KERNEL_DIR]: build the kernel's variants for the local toolchain.

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "kbuild/cli/command.hpp"
#include "kbuild/config/user_config.hpp"
#include "kbuild/exec/memory_budget.hpp"
#include "kbuild/layout/check.hpp"
#include "kbuild/usecase/build.hpp"
#include "kbuild/util/interrupt.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::cli {

namespace {

struct BuildOptions {
  std::string kernel_dir = ".";
  size_t jobs = 0;
  std::optional<std::string> memory;
  bool verbose = false;
  bool quiet = false;
  bool json = false;
  bool keep_going = false;
  bool explain = false;
  bool timings = false;
  std::string python;
  std::vector<std::string> backends;
  std::optional<std::string> unique_id;
  std::string launcher;
  bool matrix = false;
  plan::MatrixFilter filter;
  bool locked = false;
  std::vector<std::string> cuda_toolkits;
  std::vector<std::string> allowed_origins;
  bool no_cache = false;
  bool no_wait = false;
  std::string manylinux = "manylinux_2_28";
  std::string cuda_archs;

  bool matrix_mode() const {
    return matrix || !filter.variants.empty() || !filter.torch.empty() || !filter.cuda.empty();
  }
};

std::string milliseconds(double seconds) { return fmt::format("{:.1f} ms", seconds * 1e3); }

std::string job_seconds(double seconds) {
  return seconds >= 1 ? fmt::format("{:.1f} s", seconds) : milliseconds(seconds);
}

// --timings: the phases of this build, the slowest jobs it ran, and where the trace is.
void print_timings(exec::Reporter& reporter, const usecase::BuildOutcome& outcome) {
  std::vector<std::string> phases;
  for (const auto& phase : outcome.phases) phases.push_back(phase.name + " " + milliseconds(phase.seconds));
  reporter.info(fmt::format("kbuild: timings: {}; {} in all (deciding what is stale: {} over {} files)",
                            util::join(phases, ", "), milliseconds(outcome.seconds),
                            milliseconds(outcome.summary.staleness_seconds), outcome.summary.files_checked));
  for (const auto& job : outcome.slowest_jobs)
    reporter.info(
        fmt::format("  {:>9}  {:>9}  {}{}", job_seconds(job.seconds),
                    job.peak_rss_kib ? fmt::format("{:.0f} MiB", static_cast<double>(job.peak_rss_kib) / 1024.0) : "-",
                    job.description, job.cache_hit ? "  (from cache)" : ""));
  const exec::ExecSummary& summary = outcome.summary;
  if (summary.memory_budget_kib > 0)
    reporter.info(
        fmt::format("kbuild: memory: jobs expected to need at most {} at once, of a budget of {}; {} "
                    "start(s) waited for memory",
                    exec::format_kib(summary.peak_expected_kib), exec::format_kib(summary.memory_budget_kib),
                    summary.memory_holds));
  if (!outcome.trace.empty())
    reporter.info("kbuild: trace of this build: " + outcome.trace.string() +
                  " (open it in ui.perfetto.dev or chrome://tracing)");
}

nlohmann::ordered_json timings_json(const usecase::BuildOutcome& outcome) {
  nlohmann::ordered_json phases = nlohmann::ordered_json::array();
  for (const auto& phase : outcome.phases) phases.push_back({{"name", phase.name}, {"seconds", phase.seconds}});
  nlohmann::ordered_json slowest = nlohmann::ordered_json::array();
  for (const auto& job : outcome.slowest_jobs)
    slowest.push_back({{"job", job.description},
                       {"seconds", job.seconds},
                       {"cache_hit", job.cache_hit},
                       {"peak_rss_mib", static_cast<double>(job.peak_rss_kib) / 1024.0}});
  return {{"phases", phases},
          {"slowest_jobs", slowest},
          {"staleness_seconds", outcome.summary.staleness_seconds},
          {"files_checked", outcome.summary.files_checked},
          {"memory",
           {{"budget_mib", static_cast<double>(outcome.summary.memory_budget_kib) / 1024.0},
            {"peak_expected_mib", static_cast<double>(outcome.summary.peak_expected_kib) / 1024.0},
            {"starts_that_waited", outcome.summary.memory_holds}}},
          {"trace", outcome.trace.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(outcome.trace.string())}};
}

Result<ExitCode> run_build(const BuildOptions& options, Services& services) {
  util::install_interrupt_handlers();
  // --json: stdout carries the JSON summary only; progress is left out (as with -q).
  const bool quiet = options.quiet || options.json;
  const bool terminal = is_smart_terminal(stdout, services.env) && !quiet;
  exec::TerminalReporter reporter(
      {options.verbose && !options.json, quiet, options.explain && !options.json, terminal, stdout});
  usecase::BuildRequest request;
  if (!layout::is_known_manylinux_policy(options.manylinux))
    return fail("unknown --manylinux policy " + options.manylinux, "use manylinux_2_28 or none", ExitCode::usage);
  request.kernel_dir = absolute_dir(options.kernel_dir);
  request.manylinux = options.manylinux;
  request.jobs = options.jobs > 0 ? options.jobs : available_cpus();
  request.memory = options.memory;
  request.keep_going = options.keep_going;
  KB_TRY_ASSIGN(request.python, python_setting(options.python, services));
  request.backends = options.backends;
  request.unique_id = options.unique_id;
  if (!options.launcher.empty()) request.launcher = util::split(options.launcher, ' ');
  request.matrix = options.matrix_mode();
  request.filter = options.filter;
  request.locked = options.locked;
  request.cuda_toolkits = options.cuda_toolkits;
  request.allowed_origins = options.allowed_origins;
  request.use_cache = !options.no_cache;
  request.wait_for_lock = !options.no_wait;
  request.download_progress = terminal;
  request.builder_version = builder_id();
  // A release (--matrix) compiles every declared capability; a local build, the GPU here.
  KB_TRY_ASSIGN(auto archs, config::choose_cuda_archs(options.cuda_archs, request.matrix ? "all" : "native",
                                                      services.fs, services.env));
  request.cuda_archs = archs.value;
  usecase::Services use_case_services = services.with(reporter);
  KB_TRY_ASSIGN(usecase::BuildOutcome outcome, usecase::build(request, use_case_services));
  const auto& summary = outcome.summary;
  if (options.json) {
    nlohmann::ordered_json j = {{"variants", outcome.variants},     {"up_to_date", summary.stale == 0},
                                {"seconds", outcome.seconds},       {"jobs_run", summary.ran},
                                {"from_cache", summary.cache_hits}, {"output", (request.kernel_dir / "build").string()},
                                {"cuda_archs", outcome.cuda_archs}};
    if (options.timings) j["timings"] = timings_json(outcome);
    print_json_document(j.dump(2));
    return ExitCode::ok;
  }
  // Through the reporter, which first ends a live progress line: the summary gets a line of its own.
  if (summary.stale == 0)
    reporter.info(fmt::format("kbuild: no work to do ({} up to date)", util::join(outcome.variants, ", ")));
  else
    reporter.info(fmt::format(
        "kbuild: built {} in {:.1f} s ({} run, {} from cache){}", util::join(outcome.variants, ", "), outcome.seconds,
        util::count_of(summary.ran, "job"), summary.cache_hits,
        outcome.cuda_archs.empty() ? ""
                                   : fmt::format("; CUDA for {} only ({}; --cuda-archs all for every one)",
                                                 util::join(outcome.cuda_archs, ", "), outcome.cuda_archs_reason)));
  if (options.timings) print_timings(reporter, outcome);
  return ExitCode::ok;
}

}  // namespace

void register_build(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<BuildOptions>();
  CLI::App* cmd = app.add_subcommand("build", "Build the kernel's variants into KERNEL_DIR/build/<variant>/");
  cmd->add_option("kernel_dir", options->kernel_dir, "Kernel directory (contains build.toml)")->capture_default_str();
  cmd->add_option("-j,--jobs,--max-jobs", options->jobs,
                  "Parallel jobs (default: number of CPUs; --max-jobs: kernel-builder's name)");
  cmd->add_option("--memory", options->memory,
                  "Memory the running jobs may need at once, by their last measured peaks: a size (12G), auto "
                  "(default: what the machine or its cgroup has available) or unlimited; also KBUILD_MEMORY");
  cmd->add_flag("-v,--verbose,-L,--print-build-logs", options->verbose,
                "Print every command (-L, --print-build-logs: kernel-builder's names)");
  cmd->add_flag("-q,--quiet", options->quiet, "Print only warnings and errors");
  cmd->add_flag("--json", options->json,
                "Print the outcome as JSON on stdout (variants, up_to_date, seconds, jobs_run, from_cache, output)");
  cmd->add_flag("-k,--keep-going", options->keep_going, "Keep building what does not depend on a failed job");
  cmd->add_flag("--explain", options->explain, "Say why each job is rebuilt");
  cmd->add_flag("--timings", options->timings,
                "Say where the time went: each phase, deciding what is stale, the 10 slowest jobs (every build that "
                "runs a job also writes .kbuild/trace.json for ui.perfetto.dev)");
  cmd->add_option("--python", options->python,
                  std::string("Python interpreter whose torch is used") + k_python_help_suffix);
  cmd->add_option("--backend", options->backends, "Only build these backends (cpu, cuda); repeatable");
  cmd->add_option("--unique-id", options->unique_id, "Ops id suffix (default: from the git tree of the kernel)");
  cmd->add_option("--launcher", options->launcher,
                  "Compiler launcher prepended to compile commands, e.g. ccache or sccache");
  cmd->add_flag("--matrix", options->matrix,
                "Build every variant of the kernel's matrix (kbuild.toml or kbuild's table)");
  cmd->add_option("--variant", options->filter.variants, "Only this variant of the matrix (repeatable)");
  cmd->add_option("--torch", options->filter.torch, "Only these Torch versions of the matrix, e.g. 2.15 (repeatable)");
  cmd->add_option("--cuda", options->filter.cuda, "Only these CUDA versions of the matrix, or cpu (repeatable)");
  cmd->add_flag("--locked", options->locked, "Fail instead of adding toolchains to kbuild.lock");
  cmd->add_option("--allow-toolchain-origin", options->allowed_origins,
                  "Trust toolchain pins from this URL prefix as they are, without checking them against Debian's "
                  "signed indices or PyPI (repeatable; also toolchain-origins in the user config)");
  cmd->add_option("--cuda-toolkit", options->cuda_toolkits,
                  "A local CUDA toolkit for a matrix CUDA version, VERSION=PATH (e.g. 12.6=/usr/local/cuda-12.6)");
  cmd->add_option("--manylinux", options->manylinux,
                  "ABI policy every library must meet before it is installed: manylinux_2_28 or none")
      ->capture_default_str();
  cmd->add_option("--cuda-archs", options->cuda_archs,
                  "CUDA capabilities to compile: native (this machine's GPUs; all when it has none), all (what "
                  "build.toml declares), or a list such as 8.0,9.0 (default: $KBUILD_CUDA_ARCHS, the user config's "
                  "cuda-archs, native; all with --matrix)");
  cmd->add_flag("--no-cache", options->no_cache, "Do not use the compile cache ($KBUILD_CACHE/objects)");
  cmd->add_flag("--no-wait", options->no_wait,
                "Fail at once when another build of this kernel directory is running (default: wait for it)");
  cmd->callback([options, &action] { action = [options](Services& s) { return run_build(*options, s); }; });
}

}  // namespace kbuild::cli
