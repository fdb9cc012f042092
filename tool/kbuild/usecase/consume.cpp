#include "kbuild/usecase/consume.hpp"

#include "kbuild/lock/hf_cache.hpp"
#include "kbuild/lock/index.hpp"
#include "kbuild/usecase/hub_access.hpp"

namespace kbuild::usecase {

Result<LockKernelsOutcome> lock_kernels(const LockKernelsRequest& request, Services& services) {
  lock::LockRequest lock_request;
  lock_request.project_dir = request.project_dir;
  lock_request.mode = request.mode;
  lock_request.options.upgrade_all = request.upgrade_all;
  lock_request.options.upgrade = request.upgrade;
  lock_request.options.trusted = request.trusted;
  lock_request.options.progress = [&](const std::string& line) { services.reporter.info("kbuild: " + line); };
  lock_request.options.warn = [&](const std::string& line) { services.reporter.warning(line); };
  lock_request.diagnostics = diagnostics_to(services.reporter);
  HubAccess hub = open_hub(services, request.endpoint);
  lock::HubKernelIndex index(*hub.client);
  KB_TRY_ASSIGN(auto outcome, lock::lock_project(lock_request, index, services.fs));
  for (const auto& repo : request.upgrade) {
    bool known = std::any_of(outcome.lock.dependencies.begin(), outcome.lock.dependencies.end(),
                             [&](const auto& d) { return d.entry.dependency.repo_id == repo; });
    if (!known) services.reporter.warning("--upgrade=" + repo + " names no locked dependency");
  }
  return outcome;
}

Result<DownloadOutcome> download(const DownloadRequest& request, Services& services) {
  KB_TRY_ASSIGN(auto entries, lock::read_lockfile(services.fs, request.project_dir));
  lock::DownloadOptions options;
  options.all_variants = request.all_variants;
  auto cache = lock::resolve_hf_cache(services.env.all());
  options.cache_root = cache.root;
  if (!request.all_variants) {
    auto facts = probe_system_facts(services, request.python);
    if (!facts) {
      Error error = facts.error();
      error.hint += "; or pass --all-variants to download every variant";
      return fail(error);
    }
    options.system = *facts;
  }
  options.progress = [&](const std::string& line) { services.reporter.info("kbuild: " + line); };
  HubAccess hub = open_hub(services, request.endpoint);
  lock::HubKernelIndex index(*hub.client);
  KB_TRY_ASSIGN(auto installed, lock::download_locked(entries, options, index, services.fs));
  return DownloadOutcome{std::move(installed.variants), cache.root, cache.origin, hub.client->stats().bytes_downloaded,
                         request.all_variants ? std::string() : options.system.describe()};
}

}  // namespace kbuild::usecase
