#include "kbuild/usecase/consume.hpp"

#include <algorithm>

#include "kbuild/lock/cache_index.hpp"
#include "kbuild/lock/hf_cache.hpp"
#include "kbuild/lock/index.hpp"
#include "kbuild/usecase/hub_access.hpp"

namespace kbuild::usecase {

namespace {

// The registry these use cases read: the Hub, or offline the Hugging Face cache, whose trusted
// publishers are those of the repositories `entries` (kernels.lock) holds.
struct ConsumerIndex {
  HubAccess hub;
  std::unique_ptr<lock::KernelIndex> index;
  bool offline = false;
};

ConsumerIndex open_index(Services& services, const std::optional<std::string>& endpoint, bool offline,
                         const std::vector<lock::LockEntry>& entries) {
  ConsumerIndex out;
  out.offline = offline || lock::offline_requested(services.env.all());
  if (out.offline) {
    std::set<std::string> locked;
    for (const auto& entry : entries) locked.insert(entry.dependency.repo_id);
    out.index = std::make_unique<lock::CacheKernelIndex>(services.fs, lock::resolve_hf_cache(services.env.all()).root,
                                                         std::move(locked));
  } else {
    out.hub = open_hub(services, endpoint);
    out.index = std::make_unique<lock::HubKernelIndex>(*out.hub.client);
  }
  return out;
}

}  // namespace

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
  auto entries = lock::read_lockfile(services.fs, request.project_dir);
  ConsumerIndex consumer =
      open_index(services, request.endpoint, request.offline, entries.value_or(std::vector<lock::LockEntry>{}));
  KB_TRY_ASSIGN(auto outcome, lock::lock_project(lock_request, *consumer.index, services.fs));
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
  DownloadOutcome outcome;
  options.repaired = [&](const std::string& what) {
    outcome.repaired.push_back(what);
    services.reporter.warning("the cached copy of " + what +
                              " was damaged (its bytes did not match the Hub's id); "
                              "it was downloaded again");
  };
  ConsumerIndex consumer = open_index(services, request.endpoint, request.offline, entries);
  KB_TRY_ASSIGN(auto installed, lock::download_locked(entries, options, *consumer.index, services.fs));
  outcome.variants = std::move(installed.variants);
  outcome.cache = cache.root;
  outcome.cache_origin = cache.origin;
  outcome.bytes_downloaded = consumer.offline ? 0 : consumer.hub.client->stats().bytes_downloaded;
  outcome.system = request.all_variants ? std::string() : options.system.describe();
  outcome.offline = consumer.offline;
  return outcome;
}

}  // namespace kbuild::usecase
