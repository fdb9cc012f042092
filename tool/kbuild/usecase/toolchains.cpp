#include "kbuild/usecase/toolchains.hpp"

#include <algorithm>

#include "kbuild/toolchain/host_toolchain.hpp"

#include "kbuild/toolchain/probe.hpp"
#include "kbuild/usecase/kernel_source.hpp"
#include "kbuild/usecase/matrix_session.hpp"
#include "kbuild/util/cache_layout.hpp"

namespace kbuild::usecase {

namespace {

toolchain::ProvisionOptions provision_options(const std::string& python, Services& services) {
  toolchain::ProvisionOptions provision;
  provision.cache = util::CacheLayout::from_environment(services.env);
  provision.python = python;
  provision.download_url = url_downloader(services.http);
  provision.download_simple_index = url_downloader(services.http, "application/vnd.pypi.simple.v1+json");
  provision.cutlass_mirror_url = toolchain::cutlass_mirror_url(services.env);
  provision.debian_mirror_url = toolchain::debian_mirror_url(services.env);
  return provision;
}

}  // namespace

Result<ToolchainsLockOutcome> lock_toolchains(const ToolchainsLockRequest& request, Services& services) {
  auto diagnostics = diagnostics_to(services.reporter);
  KB_TRY_ASSIGN(config::KernelConfig config, load_kernel(services.fs, request.kernel_dir, diagnostics));
  KB_TRY_ASSIGN(MatrixSession session, open_matrix(services.fs, config, request.kernel_dir, {}, false, diagnostics));
  toolchain::LockFile previous = session.lock;
  if (request.update) session.lock = pins_kept_by_update(session.lock);
  toolchain::Provisioner provisioner(services.launcher, services.fs, provision_options(request.python, services),
                                     session.lock,
                                     [&](const std::string& line) { services.reporter.info("kbuild: " + line); });
  KB_TRY(
      pin_matrix_toolchains(session.all, provided_header_dependencies(config, session.all), provisioner, session.lock));
  ToolchainsLockOutcome outcome;
  outcome.lock_path = session.lock_path;
  outcome.up_to_date = session.lock_existed && session.lock == previous;
  if (outcome.up_to_date) return outcome;
  KB_TRY(services.fs.write_file_atomic(session.lock_path, session.lock.serialize()));
  for (const auto& [name, artifacts] : session.lock.toolchains)
    outcome.pins.emplace_back(name, artifacts.front().package + " " + artifacts.front().version);
  return outcome;
}

Result<ToolchainsFetchOutcome> fetch_toolchains(const ToolchainsFetchRequest& request, Services& services) {
  auto diagnostics = diagnostics_to(services.reporter);
  KB_TRY_ASSIGN(config::KernelConfig config, load_kernel(services.fs, request.kernel_dir, diagnostics));
  KB_TRY_ASSIGN(MatrixSession session,
                open_matrix(services.fs, config, request.kernel_dir, {}, request.locked, diagnostics));
  toolchain::ProbeOptions probe;
  probe.python = request.python;
  probe.need_torch = false;
  probe.cuda_home = services.env.get("CUDA_HOME");
  probe.need_cxx = false;
  KB_TRY_ASSIGN(toolchain::Toolchain local, toolchain::probe_local_toolchain(services.launcher, services.fs, probe));
  KB_TRY_ASSIGN(auto user_cuda, parse_cuda_toolkits(request.cuda_toolkits));
  toolchain::ProvisionOptions provision = provision_options(request.python, services);
  provision.locked = request.locked;
  provision.progress = request.download_progress;
  provision.user_cuda = user_cuda;
  KB_TRY(apply_provenance_settings(provision, services.fs, services.env, request.allowed_origins));
  toolchain::Provisioner provisioner(services.launcher, services.fs, provision, session.lock,
                                     [&](const std::string& line) { services.reporter.info("kbuild: " + line); });
  ToolchainsFetchOutcome outcome;
  outcome.cache = provision.cache.toolchains();
  auto builds = provision_variants(session.all, provisioner, local, outcome.toolchains);
  if (builds && needs_tvm_ffi(session.all)) {
    auto provided = provisioner.tvm_ffi(toolchain::k_tvm_ffi_series);
    if (!provided)
      builds = fail(provided.error());
    else
      outcome.tvm_ffi = *provided;
  }
  for (const auto& dependency : provided_header_dependencies(config, session.all)) {
    if (!builds) break;
    auto provided = provisioner.header_library(dependency);
    if (!provided)
      builds = fail(provided.error());
    else
      outcome.headers.push_back(*provided);
  }
  if (provisioner.lock_changed()) KB_TRY(services.fs.write_file_atomic(session.lock_path, session.lock.serialize()));
  if (!builds) return fail(builds.error());
  outcome.variants = builds->size();
  return outcome;
}

bool ToolchainsVerifyOutcome::all_proven() const {
  return std::all_of(verdicts.begin(), verdicts.end(), [](const PinVerdict& verdict) { return !verdict.problem; });
}

Result<ToolchainsVerifyOutcome> verify_toolchains(const ToolchainsVerifyRequest& request, Services& services) {
  auto diagnostics = diagnostics_to(services.reporter);
  KB_TRY_ASSIGN(config::KernelConfig config, load_kernel(services.fs, request.kernel_dir, diagnostics));
  KB_TRY_ASSIGN(MatrixSession session, open_matrix(services.fs, config, request.kernel_dir, {}, true, diagnostics));
  toolchain::ProvisionOptions provision = provision_options("python3", services);
  provision.locked = true;
  KB_TRY(apply_provenance_settings(provision, services.fs, services.env, request.allowed_origins));
  toolchain::Provisioner provisioner(services.launcher, services.fs, provision, session.lock,
                                     [&](const std::string& line) { services.reporter.info("kbuild: " + line); });
  ToolchainsVerifyOutcome outcome;
  outcome.lock_path = session.lock_path;
  for (const auto& [name, artifacts] : session.lock.toolchains) {
    PinVerdict verdict{name, artifacts.size()};
    auto proof = provisioner.verify_pins(artifacts);
    if (proof)
      verdict.proof = *proof;
    else
      verdict.problem = proof.error();
    outcome.verdicts.push_back(std::move(verdict));
  }
  return outcome;
}

}  // namespace kbuild::usecase
