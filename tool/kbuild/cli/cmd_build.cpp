// kbuild build [KERNEL_DIR]: build the kernel's variants for the local toolchain.

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <deque>

#include "kbuild/cache/compile_cache.hpp"
#include "kbuild/cli/build_session.hpp"
#include "kbuild/cli/command.hpp"
#include "kbuild/cli/matrix_session.hpp"
#include "kbuild/exec/executor.hpp"
#include "kbuild/exec/interrupt.hpp"
#include "kbuild/plan/planner.hpp"
#include "kbuild/toolchain/probe.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::cli {

namespace {

struct BuildOptions {
  std::string kernel_dir = ".";
  size_t jobs = 0;
  bool verbose = false;
  bool quiet = false;
  bool keep_going = false;
  bool explain = false;
  std::string python;
  std::vector<std::string> backends;
  std::optional<std::string> unique_id;
  std::string launcher;
  bool matrix = false;
  plan::MatrixFilter filter;
  bool locked = false;
  std::vector<std::string> cuda_toolkits;
  bool no_cache = false;

  bool matrix_mode() const {
    return matrix || !filter.variants.empty() || !filter.torch.empty() || !filter.cuda.empty();
  }
};

// One variant per backend of general.backends that the local toolchain can build.
Result<std::vector<plan::VariantBuild>> local_variants(const config::KernelConfig& config,
                                                       const toolchain::Toolchain& tc,
                                                       const std::vector<std::string>& wanted,
                                                       exec::Reporter& reporter) {
  std::vector<plan::VariantBuild> builds;
  for (const auto& name : wanted) {
    auto backend = config::parse_backend(name);
    bool listed = backend && std::find(config.general.backends.begin(), config.general.backends.end(), *backend) !=
                                 config.general.backends.end();
    if (!listed)
      return fail(
          "--backend " + name + " is not one of the kernel's backends (" +
              [&] {
                std::vector<std::string> names;
                for (auto b : config.general.backends) names.push_back(config::to_string(b));
                return util::join(names, ", ");
              }() +
              ")",
          "", ExitCode::usage);
  }
  for (config::Backend backend : config.general.backends) {
    std::string name = config::to_string(backend);
    bool requested = std::find(wanted.begin(), wanted.end(), name) != wanted.end();
    if (!wanted.empty() && !requested) continue;
    plan::Variant variant;
    variant.torch = util::Version({tc.torch.version.major(), tc.torch.version.minor()});
    variant.backend = backend;
    variant.cxx11_abi = tc.torch.cxx11_abi;
    variant.cpu = plan::normalize_cpu(util::split(tc.cxx.machine, '-').front());
    bool noarch = config.framework == config::Framework::torch_noarch || config.components_for(backend).empty();
    if (noarch) {
      variant.kind = plan::Variant::Kind::noarch;
      builds.push_back({variant, nullptr});
      continue;
    }
    if (config.framework == config::Framework::tvm_ffi)
      return fail("tvm-ffi kernels are not built by kbuild yet", "see docs/build-toml.md", ExitCode::usage);
    if (backend == config::Backend::cuda) {
      if (!tc.cuda) {
        if (requested)
          return fail("no CUDA toolkit found for --backend cuda", "put nvcc on PATH or set CUDA_HOME",
                      ExitCode::toolchain);
        reporter.warning("no CUDA toolkit found (nvcc not on PATH, CUDA_HOME unset): skipping the cuda backend");
        continue;
      }
      if (!tc.torch.cuda)
        return fail("the Torch at " + tc.torch.root.string() + " is a CPU-only build; it cannot build cuda variants",
                    "install a CUDA build of torch, or use --backend cpu", ExitCode::toolchain);
      if (tc.torch.cuda->major() != tc.cuda->version.major())
        return fail(fmt::format("Torch was built with CUDA {} but nvcc is CUDA {}", tc.torch.cuda->major_minor(),
                                tc.cuda->version.major_minor()),
                    "use a CUDA toolkit of the same major version as torch (CUDA_HOME)", ExitCode::toolchain);
      if (tc.cuda->version.minor() > tc.torch.cuda->minor())
        reporter.warning(fmt::format(
            "nvcc is CUDA {} but Torch was built with CUDA {}: the kernels loader will "
            "not pick a cu{} variant for this Torch",
            tc.cuda->version.major_minor(), tc.torch.cuda->major_minor(), plan::flatten_version(tc.cuda->version)));
      variant.cuda = util::Version({tc.cuda->version.major(), tc.cuda->version.minor()});
    } else if (backend != config::Backend::cpu) {
      reporter.warning("kbuild does not build " + name + " variants; skipping the " + name + " backend");
      continue;
    }
    if (config.torch.minver && tc.torch.version < *config.torch.minver)
      return fail(
          fmt::format("Torch {} is older than torch.minver {}", tc.torch.version.str(), config.torch.minver->str()),
          "use a newer torch (--python)", ExitCode::toolchain);
    if (config.torch.maxver &&
        util::Version({tc.torch.version.major(), tc.torch.version.minor()}) > *config.torch.maxver)
      return fail(
          fmt::format("Torch {} is newer than torch.maxver {}", tc.torch.version.str(), config.torch.maxver->str()),
          "use an older torch (--python)", ExitCode::toolchain);
    builds.push_back({variant, &tc});
  }
  if (builds.empty())
    return fail("nothing to build: none of the kernel's backends can be built here",
                "kbuild builds cpu and cuda variants", ExitCode::toolchain);
  return builds;
}

// What each variant was built with, for provenance (.kbuild/toolchains-used.json).
std::string toolchains_record(const std::vector<plan::VariantBuild>& builds) {
  nlohmann::ordered_json record;
  record["variants"] = nlohmann::ordered_json::object();
  for (const auto& build : builds) {
    if (!build.toolchain) continue;
    const auto& tc = *build.toolchain;
    nlohmann::ordered_json entry = {{"torch", tc.torch.version_string},
                                    {"torch-origin", tc.torch.origin},
                                    {"cxx", tc.cxx.cxx.string() + " " + tc.cxx.version},
                                    {"python-headers", tc.python.version}};
    if (tc.cuda) {
      entry["cuda"] = tc.cuda->version.str();
      entry["cuda-origin"] = tc.cuda->origin + ":" + tc.cuda->root.string();
    }
    record["variants"][build.variant.name()] = entry;
  }
  return record.dump(2) + "\n";
}

Result<ExitCode> run_build(const BuildOptions& options, Services& services) {
  auto start = std::chrono::steady_clock::now();
  exec::install_interrupt_handlers();
  const auto kernel_dir = absolute_dir(options.kernel_dir);
  const auto work_dir = kernel_dir / ".kbuild";
  KB_TRY_ASSIGN(config::KernelConfig config, load_config_reporting(services.fs, kernel_dir));
  const bool matrix = options.matrix_mode();
  std::optional<MatrixSession> session;
  if (matrix) {
    if (!options.backends.empty())
      return fail("--backend does not apply to matrix builds", "use --cuda cpu or --variant", ExitCode::usage);
    KB_TRY_ASSIGN(session, open_matrix(services.fs, config, kernel_dir, options.filter, options.locked));
  }

  const bool terminal = is_smart_terminal(stdout) && !options.quiet;
  exec::TerminalReporter reporter({options.verbose, options.quiet, options.explain, terminal, stdout});
  toolchain::ProbeOptions probe;
  probe.python = options.python.empty() ? "python3" : options.python;
  if (const char* home = std::getenv("CUDA_HOME")) probe.cuda_home = home;
  if (const char* cxx = std::getenv("CXX"); cxx && *cxx) probe.cxx = cxx;
  probe.need_torch = !matrix;
  probe.memo_file = work_dir / (matrix ? "toolchain-matrix.json" : "toolchain.json");
  KB_TRY(services.fs.make_dirs(work_dir));
  (void)services.fs.write_file_atomic(work_dir / ".gitignore", "# kbuild intermediates, never shipped\n*\n");
  KB_TRY_ASSIGN(toolchain::Toolchain local, toolchain::probe_local_toolchain(services.launcher, services.fs, probe));

  const auto cache_dir = toolchain::default_cache_dir();
  std::deque<toolchain::Toolchain> toolchains;
  std::vector<plan::VariantBuild> variants;
  if (matrix) {
    KB_TRY_ASSIGN(auto user_cuda, parse_cuda_toolkits(options.cuda_toolkits));
    toolchain::ProvisionOptions provision;
    provision.cache_dir = cache_dir;
    provision.python = probe.python;
    provision.locked = options.locked;
    provision.progress = terminal;
    provision.user_cuda = user_cuda;
    provision.host_cxx = local.cxx.cxx.string();
    toolchain::Provisioner provisioner(services.launcher, services.fs, provision, session->lock,
                                       [&](const std::string& line) { reporter.info("kbuild: " + line); });
    auto provisioned = provision_variants(session->selected, provisioner, local, toolchains);
    if (provisioner.lock_changed()) {
      // Pins are recorded even when a later download fails, so a retry fetches the same files.
      KB_TRY(services.fs.write_file_atomic(session->lock_path, session->lock.serialize()));
      reporter.info("kbuild: pinned new toolchains in " + session->lock_path.string());
    }
    if (!provisioned) return fail(provisioned.error());
    variants = std::move(*provisioned);
  } else {
    toolchains.push_back(local);
    KB_TRY_ASSIGN(variants, local_variants(config, toolchains.back(), options.backends, reporter));
  }
  KB_TRY_ASSIGN(BuildIdentity identity,
                build_identity(services.fs, services.launcher, kernel_dir, work_dir, options.unique_id));

  plan::PlanRequest request;
  request.config = &config;
  request.kernel_dir = kernel_dir;
  request.work_dir = work_dir;
  request.output_dir = kernel_dir / "build";
  request.unique_id = identity.unique_id;
  request.kernel_git = identity.kernel_git;
  request.builder_version = builder_id();
  request.variants = variants;
  size_t jobs = options.jobs > 0 ? options.jobs : available_cpus();
  request.nvcc_threads = static_cast<int>(std::max<size_t>(1, jobs));
  KB_TRY_ASSIGN(request.package_files,
                util::list_files_recursive(services.fs, kernel_dir / "torch-ext" / config.general.python_name()));
  KB_TRY_ASSIGN(plan::JobGraph graph, plan::plan_build(request));
  (void)services.fs.write_file_atomic(work_dir / "toolchains-used.json", toolchains_record(variants));

  const auto state_file = work_dir / "state";
  exec::BuildState state = exec::BuildState::load(services.fs, state_file);
  exec::SubprocessRunner runner;
  exec::ExecutorOptions exec_options{jobs, options.keep_going, {}};
  if (!options.launcher.empty()) exec_options.launcher = util::split(options.launcher, ' ');
  std::optional<cache::CompileCache> compile_cache;
  if (!options.no_cache)
    compile_cache.emplace(services.fs, cache_dir, cache::default_max_cache_bytes(),
                          [&](const std::string& message) { reporter.warning(message); });
  exec::Executor executor(graph, runner, services.fs, state, reporter, exec_options,
                          compile_cache ? &*compile_cache : nullptr);
  exec::ExecSummary summary = executor.run();
  if (auto saved = state.save(services.fs, state_file); !saved)
    reporter.warning("could not save the build state: " + saved.error().message);
  if (compile_cache && summary.stale > 0) compile_cache->finish();

  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<std::string> names;
  for (const auto& build : variants) names.push_back(build.variant.name());
  if (summary.interrupted) {
    return fail("interrupted; finished jobs are kept, unfinished outputs removed", "run kbuild build again to continue",
                ExitCode::interrupted);
  }
  if (summary.failed > 0) {
    return fail(fmt::format("build failed: {} job{} failed{}", summary.failed, summary.failed == 1 ? "" : "s",
                            summary.not_run ? fmt::format(", {} not run", summary.not_run) : ""),
                options.keep_going ? "" : "fix the first error; --keep-going builds what does not depend on it");
  }
  if (!options.quiet) {
    if (summary.stale == 0)
      fmt::print("kbuild: no work to do ({} up to date)\n", util::join(names, ", "));
    else
      fmt::print("kbuild: built {} in {:.1f} s ({} jobs run, {} from cache)\n", util::join(names, ", "), seconds,
                 summary.ran, summary.cache_hits);
  }
  return ExitCode::ok;
}

}  // namespace

void register_build(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<BuildOptions>();
  CLI::App* cmd = app.add_subcommand("build", "Build the kernel's variants into KERNEL_DIR/build/<variant>/");
  cmd->add_option("kernel_dir", options->kernel_dir, "Kernel directory (contains build.toml)")->capture_default_str();
  cmd->add_option("-j,--jobs", options->jobs, "Parallel jobs (default: number of CPUs)");
  cmd->add_flag("-v,--verbose", options->verbose, "Print every command");
  cmd->add_flag("-q,--quiet", options->quiet, "Print only warnings and errors");
  cmd->add_flag("-k,--keep-going", options->keep_going, "Keep building what does not depend on a failed job");
  cmd->add_flag("--explain", options->explain, "Say why each job is rebuilt");
  cmd->add_option("--python", options->python, "Python interpreter whose torch is used (default: python3 on PATH)");
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
  cmd->add_option("--cuda-toolkit", options->cuda_toolkits,
                  "A local CUDA toolkit for a matrix CUDA version, VERSION=PATH (e.g. 12.6=/usr/local/cuda-12.6)");
  cmd->add_flag("--no-cache", options->no_cache, "Do not use the compile cache ($KBUILD_CACHE/objects)");
  cmd->callback([options, &action] { action = [options](Services& s) { return run_build(*options, s); }; });
}

}  // namespace kbuild::cli
