#include "kbuild/usecase/build.hpp"

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <set>

#include "kbuild/cache/compile_cache.hpp"
#include "kbuild/cache/usage.hpp"
#include "kbuild/exec/build_state.hpp"
#include "kbuild/exec/memory_budget.hpp"
#include "kbuild/hub/remote_cache.hpp"
#include "kbuild/plan/cuda_archs.hpp"
#include "kbuild/plan/planner.hpp"
#include "kbuild/toolchain/gpu.hpp"
#include "kbuild/toolchain/host_toolchain.hpp"
#include "kbuild/toolchain/probe.hpp"
#include "kbuild/toolchain/stdcxx_compat.hpp"
#include "kbuild/usecase/actions.hpp"
#include "kbuild/usecase/build_records.hpp"
#include "kbuild/usecase/freshness.hpp"
#include "kbuild/usecase/kernel_source.hpp"
#include "kbuild/usecase/local_variants.hpp"
#include "kbuild/usecase/matrix_session.hpp"
#include "kbuild/usecase/ops_check.hpp"
#include "kbuild/util/cache_layout.hpp"
#include "kbuild/util/log.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::usecase {

namespace {

// The variants of a matrix build, with their toolchains provisioned into `toolchains`. New pins are
// written to kbuild.lock even when a later download fails, so a retry fetches the same files.
toolchain::ProvisionOptions provision_options(const BuildRequest& request, Services& services,
                                              const toolchain::Toolchain& local) {
  toolchain::ProvisionOptions provision;
  provision.cache = util::CacheLayout::from_environment(services.env);
  provision.python = request.python;
  provision.locked = request.locked;
  provision.progress = request.download_progress;
  provision.host = local.cxx;
  provision.download_url = url_downloader(services.http);
  provision.download_simple_index = url_downloader(services.http, "application/vnd.pypi.simple.v1+json");
  provision.cutlass_mirror_url = toolchain::cutlass_mirror_url(services.env);
  provision.debian_mirror_url = toolchain::debian_mirror_url(services.env);
  return provision;
}

// The host compiler of every variant is the pinned one (host_toolchain.hpp), which replaces `local`'s.
Result<std::vector<plan::VariantBuild>> matrix_variants(const BuildRequest& request, Services& services,
                                                        MatrixSession& session, toolchain::Toolchain& local,
                                                        std::deque<toolchain::Toolchain>& toolchains) {
  KB_TRY_ASSIGN(auto user_cuda, parse_cuda_toolkits(request.cuda_toolkits));
  toolchain::ProvisionOptions provision = provision_options(request, services, local);
  provision.user_cuda = user_cuda;
  KB_TRY(apply_provenance_settings(provision, services.fs, services.env, request.allowed_origins));
  toolchain::Provisioner provisioner(services.launcher, services.fs, provision, session.lock,
                                     [&](const std::string& line) { services.reporter.info("kbuild: " + line); });
  auto provisioned = provision_variants(session.selected, provisioner, local, toolchains);
  if (provisioner.lock_changed()) {
    KB_TRY(services.fs.write_file_atomic(session.lock_path, session.lock.serialize()));
    services.reporter.info("kbuild: pinned new toolchains in " + session.lock_path.string());
  }
  return provisioned;
}

// The header libraries (CUTLASS) that the components of `variants` depend on, and tvm-ffi for a
// tvm-ffi kernel, fetched and pinned in kbuild.lock like the toolchains (a local build opens the lock
// for them too). Fills the plan request's header_libraries and tvm_ffi.
Result<void> provide_dependencies(const BuildRequest& request, Services& services, const config::KernelConfig& config,
                                  const std::vector<plan::VariantBuild>& variants,
                                  std::optional<MatrixSession>& session, const toolchain::Toolchain& local,
                                  plan::PlanRequest& plan_request) {
  std::set<std::string> needed;
  bool tvm_ffi = false;
  for (const auto& build : variants) {
    tvm_ffi = tvm_ffi || build.variant.traits().tvm_ffi_toolchain;
    if (!build.variant.compiled()) continue;
    for (const auto* component : config.components_for(build.variant.backend))
      for (const auto& dep : component->depends)
        if (dep != "torch" && toolchain::provided_dependency(dep)) needed.insert(dep);
  }
  if (needed.empty() && !tvm_ffi) return {};
  const auto lock_path = request.kernel_dir / "kbuild.lock";
  toolchain::LockFile local_lock;
  if (!session && services.fs.stat(lock_path).exists) {
    KB_TRY_ASSIGN(std::string text, util::read_input_file(services.fs, lock_path, 16u << 20));
    KB_TRY_ASSIGN(local_lock, toolchain::LockFile::parse(text, lock_path.string()));
  }
  toolchain::LockFile& lock = session ? session->lock : local_lock;
  toolchain::Provisioner provisioner(services.launcher, services.fs, provision_options(request, services, local), lock,
                                     [&](const std::string& line) { services.reporter.info("kbuild: " + line); });
  for (const auto& dep : needed) {
    KB_TRY_ASSIGN(plan_request.header_libraries[dep], provisioner.header_library(dep));
  }
  if (tvm_ffi) {
    KB_TRY_ASSIGN(plan_request.tvm_ffi, provisioner.tvm_ffi(toolchain::k_tvm_ffi_series));
    needed.insert("tvm-ffi " + toolchain::k_tvm_ffi_series.major_minor());
  }
  if (provisioner.lock_changed()) {
    KB_TRY(services.fs.write_file_atomic(lock_path, lock.serialize()));
    services.reporter.info("kbuild: pinned " +
                           util::join(std::vector<std::string>(needed.begin(), needed.end()), ", ") + " in " +
                           lock_path.string());
  }
  return {};
}

// A Torch kernel's backend without [kernel.*] components is built as a noarch variant, as kernel-builder
// does (nix-builder/lib/build.nix: "No compiled kernel files? Treat it as a noarch package."). The
// loader then serves that backend's machines the Python code alone, which is rarely what the author
// meant, so the build says so.
std::vector<std::string> component_less_backend_warnings(const config::KernelConfig& config,
                                                         const std::vector<plan::VariantBuild>& variants) {
  std::vector<std::string> warnings;
  if (config.framework != config::Framework::torch) return warnings;
  std::set<std::string> named;
  for (const auto& build : variants) {
    if (build.variant.compiled() || !named.insert(build.variant.name()).second) continue;
    const std::string backend = config::to_string(build.variant.backend);
    warnings.push_back("the " + backend + " backend has no [kernel.*] component: built as the noarch variant " +
                       build.variant.name() + ", as kernel-builder does; on " + backend +
                       " machines the loader picks it and only torch-ext's Python code runs (no compiled op). "
                       "Add a component for " +
                       backend + ", or drop it from general.backends");
  }
  return warnings;
}

// Capabilities of cuda-capabilities that a variant's CUDA version does not build (dropped), once per
// component and CUDA version.
std::vector<std::string> unsupported_capability_warnings(const config::KernelConfig& config,
                                                         const std::vector<plan::VariantBuild>& variants) {
  std::vector<std::string> warnings;
  std::set<std::string> seen;
  for (const auto& build : variants) {
    if (build.variant.backend != config::Backend::cuda || !build.variant.cuda) continue;
    for (const auto* component : config.components_for(config::Backend::cuda)) {
      auto dropped = plan::unsupported_cuda_capabilities(component->cuda_capabilities, *build.variant.cuda);
      if (dropped.empty() || !seen.insert(component->name + build.variant.cuda->major_minor()).second) continue;
      warnings.push_back("kernel." + component->name + ": cuda-capabilities " + util::join(dropped, ", ") +
                         (dropped.size() == 1 ? " is" : " are") + " not built by CUDA " +
                         build.variant.cuda->major_minor() + " (dropped, as kernel-builder does)");
    }
  }
  return warnings;
}

// The capabilities --cuda-archs restricts CUDA variants to (nullopt: every declared one), and why.
Result<std::optional<std::vector<std::string>>> cuda_archs_only(const BuildRequest& request, Services& services,
                                                                const std::filesystem::path& work_dir,
                                                                std::string& reason) {
  if (request.cuda_archs == "all") return std::optional<std::vector<std::string>>();
  if (request.cuda_archs == "native") {
    auto gpus = toolchain::detect_gpu_capabilities(services.launcher, services.fs, work_dir / "gpus");
    if (gpus.empty()) return std::optional<std::vector<std::string>>();
    reason = "the GPU" + std::string(gpus.size() == 1 ? "" : "s") + " of this machine";
    return std::optional<std::vector<std::string>>(gpus);
  }
  auto list = plan::parse_arch_list(request.cuda_archs);
  if (!list)
    return fail("--cuda-archs \"" + request.cuda_archs + "\" is not native, all, or a list of capabilities",
                "e.g. --cuda-archs native, --cuda-archs all, --cuda-archs 8.0,9.0", ExitCode::usage);
  reason = "--cuda-archs";
  return std::optional<std::vector<std::string>>(*list);
}

Result<exec::ExecSummary> execute(const BuildRequest& request, Services& services, const plan::JobGraph& graph,
                                  const std::filesystem::path& work_dir, bool read_only, bool cache_read_only,
                                  const std::optional<cache::RemoteSettings>& remote_settings) {
  const auto state_file = work_dir / "state";
  exec::BuildState state = exec::BuildState::load(services.fs, state_file);
  std::optional<cache::CompileCache> compile_cache;
  if (request.use_cache) {
    KB_TRY_ASSIGN(std::uint64_t cap, cache::max_cache_bytes(services.env));
    compile_cache.emplace(services.fs, util::CacheLayout::from_environment(services.env).root, cap,
                          [&](const std::string& message) { services.reporter.warning(message); });
    if (cache_read_only) compile_cache->set_read_only();
  }
  // The shared tier of the compile cache (KBUILD_REMOTE_CACHE*, validated before anything was built).
  std::optional<hub::HttpRemoteStore> remote;
  if (compile_cache && remote_settings) {
    remote.emplace(services.http, *remote_settings);
    compile_cache->set_remote(&*remote, remote_settings->writable);
  }
  LayoutActions actions(services.fs);
  exec::ExecutorServices exec_services{services.fs,
                                       services.runner,
                                       actions,
                                       state,
                                       services.reporter,
                                       services.clock,
                                       compile_cache ? &*compile_cache : nullptr};
  KB_TRY_ASSIGN(exec::MemoryBudget memory, exec::memory_budget(request.memory, services.env, services.fs));
  exec::Executor executor(graph, exec_services,
                          {request.jobs, request.keep_going, request.launcher, read_only, memory.kib});
  exec::ExecSummary summary = executor.run();
  if (summary.memory_holds > 0)
    services.reporter.info(
        fmt::format("memory: jobs waited {} time(s) so that those running stay within {} ({}{})", summary.memory_holds,
                    exec::format_kib(memory.kib), memory.source,
                    request.memory || services.env.get("KBUILD_MEMORY") ? "" : "; --memory or KBUILD_MEMORY sets it"));
  if (read_only) return summary;
  if (auto saved = state.save(services.fs, state_file); !saved)
    services.reporter.warning("could not save the build state: " + saved.error().message);
  if (compile_cache && summary.stale > 0) compile_cache->finish();
  return summary;
}

// The build's result as an error, when it is one: read-only with work to do, interrupted, reading
// outside the kernel, or failed jobs.
Result<void> summary_verdict(const exec::ExecSummary& summary, const std::filesystem::path& kernel_dir,
                             bool keep_going) {
  if (summary.blocked_read_only)
    return fail(fmt::format("{} is read-only and {} job{} out of date", kernel_dir.string(), summary.stale,
                            summary.stale == 1 ? " is" : "s are"),
                "make the kernel directory writable (kbuild writes .kbuild/ and build/ only), or build a copy of it");
  if (summary.interrupted)
    return fail("interrupted; finished jobs are kept, unfinished outputs removed", "run kbuild build again to continue",
                ExitCode::interrupted);
  if (!summary.escaping_inputs.empty())
    return fail("the build read files from outside the kernel directory through names inside it:\n  " +
                    util::join(summary.escaping_inputs, "\n  "),
                "only the kernel directory's own files are built: replace each link by the file it names",
                ExitCode::usage);
  if (summary.failed > 0)
    return fail(fmt::format("build failed: {} job{} failed{}", summary.failed, summary.failed == 1 ? "" : "s",
                            summary.not_run ? fmt::format(", {} not run", summary.not_run) : ""),
                summary.killed ? "jobs were killed: if memory ran out, --memory SIZE (or KBUILD_MEMORY) below what the "
                                 "machine has keeps fewer of them running at once"
                : keep_going   ? "fix the errors above; every job that did not depend on a failed one was built"
                               : "fix the first error; --keep-going builds what does not depend on it");
  return {};
}

}  // namespace

Result<std::unique_ptr<util::FileLock>> lock_kernel_dir(util::FileSystem& fs, const std::filesystem::path& work_dir,
                                                        bool wait,
                                                        const std::function<void(const std::string&)>& waiting) {
  const auto path = work_dir / "lock";
  KB_TRY_ASSIGN(auto lock, fs.lock_file(path, false));
  if (!lock) {
    std::string holder(util::trim(fs.read_file(path).value_or("")));
    std::string who = holder.empty() ? "another kbuild" : holder;
    if (!wait)
      return fail(who + " is building " + work_dir.parent_path().string() + " right now",
                  "wait for it to finish, or run without --no-wait to wait automatically");
    if (waiting) waiting("waiting for the build in " + who + " to finish (" + path.string() + ")");
    KB_TRY_ASSIGN(lock, fs.lock_file(path, true));
  }
  lock->set_owner("kbuild pid " + std::to_string(::getpid()) + "\n");
  return lock;
}

namespace {

// What a build works on: the matrix session (a matrix build), the local toolchain, and the variants
// with their toolchains (stable addresses in `toolchains`).
struct Selection {
  std::optional<MatrixSession> session;
  toolchain::Toolchain local;
  std::deque<toolchain::Toolchain> toolchains;
  std::vector<plan::VariantBuild> variants;
};

// --variant names that a local build makes (the names `kbuild build` prints) but the matrix does not
// list are built locally with the --python Torch; other names come from the matrix. Nullopt: not
// such a request.
bool names_variants_only(const BuildRequest& request) {
  return request.matrix && !request.filter.variants.empty() && request.filter.torch.empty() &&
         request.filter.cuda.empty();
}

std::optional<std::vector<std::string>> local_variant_names(const BuildRequest& request,
                                                            const config::KernelConfig& config,
                                                            const toolchain::Toolchain& local,
                                                            const util::FileSystem& fs) {
  // A name the matrix lists is the matrix's (its pinned toolchains), as is everything with --locked.
  if (request.locked) return std::nullopt;
  if (auto matrix = matrix_variant_names(fs, config, request.kernel_dir)) {
    bool all_in_matrix = std::all_of(
        request.filter.variants.begin(), request.filter.variants.end(),
        [&](const std::string& name) { return std::find(matrix->begin(), matrix->end(), name) != matrix->end(); });
    if (all_in_matrix) return std::nullopt;
  }
  auto variants = select_local_variants(config, local, {}, [](const std::string&) {});
  if (!variants) return std::nullopt;
  std::set<std::string> names;
  for (const auto& build : *variants) names.insert(build.variant.name());
  for (const auto& wanted : request.filter.variants)
    if (!names.count(wanted)) return std::nullopt;
  return request.filter.variants;
}

// A --variant name that neither build/, a local build here nor the matrix has: said with every name
// that is, not with the matrix's alone.
Result<void> check_variant_names(const BuildRequest& request, const config::KernelConfig& config,
                                 const toolchain::Toolchain& local, const util::FileSystem& fs) {
  VariantNameGroups known;
  if (auto built = built_variant_names(fs, request.kernel_dir)) known.emplace_back("built in build/", *built);
  std::vector<std::string> names;
  if (auto variants = select_local_variants(config, local, {}, [](const std::string&) {}))
    for (const auto& build : *variants) names.push_back(build.variant.name());
  known.emplace_back("a local build here", names);
  if (auto matrix = matrix_variant_names(fs, config, request.kernel_dir)) known.emplace_back("the matrix", *matrix);
  if (auto error = unknown_variant_error(request.filter.variants, known)) return fail(*error);
  return {};
}

Result<Selection> select_variants(const BuildRequest& request, Services& services, const config::KernelConfig& config,
                                  const std::filesystem::path& work_dir) {
  Selection selection;
  toolchain::ProbeOptions probe;
  probe.python = request.python;
  probe.cuda_home = services.env.get("CUDA_HOME");
  probe.cxx = services.env.get_or("CXX", "g++");
  // A tvm-ffi kernel is compiled without Torch; a matrix build takes Torch from its pins.
  probe.need_torch = config.framework != config::Framework::tvm_ffi;
  probe.memo_file = work_dir / "toolchain.json";
  std::optional<std::vector<std::string>> local_names;
  if (names_variants_only(request) && probe.need_torch && !request.locked) {
    if (auto local = toolchain::probe_local_toolchain(services.launcher, services.fs, probe)) {
      local_names = local_variant_names(request, config, *local, services.fs);
      if (!local_names) KB_TRY(check_variant_names(request, config, *local, services.fs));
      selection.local = *local;
    }
  }
  if (request.matrix && !local_names) {
    probe.need_torch = false;
    probe.need_cxx = false;  // the pinned host toolchain compiles matrix variants
    probe.memo_file = work_dir / "toolchain-matrix.json";
  }
  if (!local_names) {
    KB_TRY_ASSIGN(selection.local, toolchain::probe_local_toolchain(services.launcher, services.fs, probe));
  }
  if (request.matrix && !local_names) {
    if (!request.backends.empty())
      return fail("--backend does not apply to matrix builds", "use --cuda cpu or --variant", ExitCode::usage);
    KB_TRY_ASSIGN(selection.session, open_matrix(services.fs, config, request.kernel_dir, request.filter,
                                                 request.locked, diagnostics_to(services.reporter)));
    KB_TRY_ASSIGN(selection.variants,
                  matrix_variants(request, services, *selection.session, selection.local, selection.toolchains));
    return selection;
  }
  selection.toolchains.push_back(selection.local);
  KB_TRY_ASSIGN(selection.variants, select_local_variants(config, selection.toolchains.back(), request.backends,
                                                          [&](const std::string& w) { services.reporter.warning(w); }));
  if (local_names)
    std::erase_if(selection.variants, [&](const plan::VariantBuild& b) {
      return std::find(local_names->begin(), local_names->end(), b.variant.name()) == local_names->end();
    });
  return selection;
}

// Links newer libstdc++ symbols privately (toolchain/stdcxx_compat.hpp); without it the build still
// works, and the ABI gate refuses libraries that need them.
void add_stdcxx_compat(const BuildRequest& request, Services& services, const Selection& selection,
                       plan::PlanRequest& plan_request) {
  bool any_compiled = std::any_of(selection.variants.begin(), selection.variants.end(),
                                  [](const auto& b) { return b.variant.compiled(); });
  if (!request.gate_libraries || !any_compiled) return;
  auto compat = toolchain::prepare_stdcxx_compat(services.launcher, services.fs,
                                                 util::CacheLayout::from_environment(services.env), selection.local.cxx,
                                                 request.kernel_dir / ".kbuild" / "stdcxx-compat.memo");
  if (compat)
    plan_request.stdcxx_compat = *compat;
  else
    services.reporter.warning("cannot link newer libstdc++ symbols privately (" + compat.error().message +
                              "); libraries that need them will fail the ABI check");
}

Result<plan::PlanRequest> plan_request_for(const BuildRequest& request, Services& services,
                                           const config::KernelConfig& config, Selection& selection,
                                           const std::filesystem::path& work_dir, std::string& archs_reason) {
  const auto& kernel_dir = request.kernel_dir;
  KB_TRY_ASSIGN(BuildIdentity identity,
                build_identity(services.fs, services.launcher, kernel_dir, config, request.unique_id));
  plan::PlanRequest plan_request;
  plan_request.config = &config;
  plan_request.kernel_dir = kernel_dir;
  plan_request.work_dir = work_dir;
  plan_request.output_dir = request.output_dir.value_or(kernel_dir / "build");
  plan_request.unique_id = identity.unique_id;
  plan_request.kernel_git = identity.kernel_git;
  // Rewritten only when the sources change: the install jobs' records then tell which sources built them.
  const auto manifest_file = work_dir / "sources";
  const std::string manifest = identity.sources.render();
  if (services.fs.read_file(manifest_file).value_or("") != manifest) {
    warn_reproducibility_hazards(services.fs, services.reporter, kernel_dir, identity.sources);
    auto written = services.fs.write_file_atomic(manifest_file, manifest);
    // In a read-only kernel directory the build stops before running anything (the sources changed,
    // so jobs are stale) with a message of its own.
    if (!written && written.error().os_errno != EROFS && written.error().os_errno != EACCES)
      return fail(written.error());
  }
  plan_request.source_manifest = manifest_file;
  plan_request.builder_version = request.builder_version;
  plan_request.variants = selection.variants;
  plan_request.nvcc_threads = static_cast<int>(std::max<size_t>(1, request.jobs));
  plan_request.manylinux = request.manylinux;
  bool any_cuda = std::any_of(selection.variants.begin(), selection.variants.end(), [](const auto& b) {
    return b.variant.compiled() && b.variant.backend == config::Backend::cuda;
  });
  if (any_cuda) {
    KB_TRY_ASSIGN(plan_request.cuda_archs_only, cuda_archs_only(request, services, work_dir, archs_reason));
  }
  KB_TRY(provide_dependencies(request, services, config, selection.variants, selection.session, selection.local,
                              plan_request));
  plan_request.gate_libraries = request.gate_libraries;
  add_stdcxx_compat(request, services, selection, plan_request);
  KB_TRY_ASSIGN(plan_request.package_files, package_files(services.fs, kernel_dir, config.package_dir()));
  return plan_request;
}

}  // namespace

Result<BuildOutcome> build(const BuildRequest& request, Services& services) {
  PhaseTimer timer(services.clock);
  KB_TRY_ASSIGN(auto remote_settings, cache::remote_settings(services.env));
  const auto& kernel_dir = request.kernel_dir;
  const auto work_dir = request.work_dir.value_or(kernel_dir / ".kbuild");
  KB_TRY_ASSIGN(config::KernelConfig config, load_kernel(services.fs, kernel_dir, diagnostics_to(services.reporter)));
  timer.mark("config");
  KB_TRY_ASSIGN(std::string ops_check_stamp, check_registration_prefix(services.launcher, services.fs, request.python,
                                                                       kernel_dir, work_dir / "ops-check.stamp"));
  timer.mark("ops check");
  KB_TRY(services.fs.make_dirs(work_dir));
  auto lock = lock_kernel_dir(services.fs, work_dir, request.wait_for_lock,
                              [](const std::string& line) { util::log::info(line); });  // stderr, even with -q
  // A kernel directory that cannot be written (a read-only mount, another user's checkout) can still
  // be checked: a build that finds everything up to date succeeds without writing anything.
  const bool read_only =
      !lock && (lock.error().os_errno == EROFS || lock.error().os_errno == EACCES || lock.error().os_errno == EPERM);
  if (!lock && !read_only) return fail(lock.error());
  // Toolchains and objects are used in place: `kbuild cache prune` waits while a build runs.
  const auto cache_root = util::CacheLayout::from_environment(services.env).root;
  KB_TRY_ASSIGN(cache::CacheHold in_use, cache::hold_cache_in_use(services.fs, cache_root));
  if (in_use.read_only)
    services.reporter.warning("the cache " + cache_root.string() +
                              " is read-only: what it holds is used as it is, and nothing is stored in it (no "
                              "compiled objects, statistics or toolchains)");
  if (!read_only) {
    (void)services.fs.write_file_if_changed(work_dir / ".gitignore", "# kbuild intermediates, never shipped\n*\n");
    (void)services.fs.write_file_if_changed(work_dir / "ops-check.stamp", ops_check_stamp + "\n");
  }
  timer.mark("lock");
  KB_TRY_ASSIGN(Selection selection, select_variants(request, services, config, work_dir));
  timer.mark("variants");
  for (const auto& warning : component_less_backend_warnings(config, selection.variants))
    services.reporter.warning(warning);
  for (const auto& warning : unsupported_capability_warnings(config, selection.variants))
    services.reporter.warning(warning);
  std::string archs_reason;
  KB_TRY_ASSIGN(plan::PlanRequest plan_request,
                plan_request_for(request, services, config, selection, work_dir, archs_reason));
  KB_TRY_ASSIGN(plan::JobGraph graph, plan::plan_build(plan_request));
  if (!read_only) {
    (void)services.fs.write_file_if_changed(work_dir / "toolchains-used.json", toolchains_record(selection.variants));
    (void)services.fs.write_file_if_changed(work_dir / "compile_commands.json", compile_commands(graph, kernel_dir));
  }

  timer.mark("plan");
  const double jobs_start = timer.elapsed();
  KB_TRY_ASSIGN(exec::ExecSummary summary,
                execute(request, services, graph, work_dir, read_only, in_use.read_only, remote_settings));
  timer.mark("execute");
  std::filesystem::path trace = work_dir / "trace.json";
  if (summary.timings.empty() || read_only ||
      !services.fs.write_file_atomic(trace, chrome_trace(graph, summary, timer.phases(), jobs_start)))
    trace.clear();
  KB_TRY(summary_verdict(summary, kernel_dir, request.keep_going));
  BuildOutcome outcome;
  for (const auto& variant : selection.variants) outcome.variants.push_back(variant.variant.name());
  outcome.summary = summary;
  outcome.seconds = timer.elapsed();
  outcome.phases = timer.phases();
  outcome.slowest_jobs = slowest_jobs(graph, summary, 10);
  outcome.trace = trace;
  if (plan_request.cuda_archs_only) {
    outcome.cuda_archs = *plan_request.cuda_archs_only;
    outcome.cuda_archs_reason = archs_reason;
  }
  return outcome;
}

}  // namespace kbuild::usecase
