#include "kbuild/usecase/cache_admin.hpp"

#include "kbuild/util/cache_layout.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::usecase {

namespace {
std::filesystem::path cache_dir(const Services& services) {
  return util::CacheLayout::from_environment(services.env).root;
}

// The in-use lock, exclusively: builds and tests hold it shared while they use the cache.
Result<std::unique_ptr<util::FileLock>> exclusive_use(Services& services, const std::filesystem::path& directory,
                                                      bool wait, const std::string& command) {
  if (wait && !services.fs.lock_file(directory / ".in-use", false).value_or(nullptr))
    services.reporter.info("kbuild: waiting for the builds and tests using " + directory.string() + " to finish");
  KB_TRY_ASSIGN(auto lock, cache::lock_cache_exclusive(services.fs, directory, wait));
  if (!lock)
    return fail("a kbuild build or test is using the cache in " + directory.string(),
                "run " + command + " when it is done, or without --no-wait to wait for it");
  return lock;
}
}  // namespace

Result<CacheStatsOutcome> cache_stats(const CacheStatsRequest&, Services& services) {
  CacheStatsOutcome outcome;
  outcome.directory = cache_dir(services);
  KB_TRY_ASSIGN(outcome.summary, cache::CompileCache::summarize(services.fs, outcome.directory));
  KB_TRY_ASSIGN(outcome.usage, cache::cache_usage(services.fs, outcome.directory));
  KB_TRY_ASSIGN(outcome.cap_bytes, cache::max_cache_bytes(services.env));
  KB_TRY_ASSIGN(outcome.remote, cache::remote_settings(services.env));
  return outcome;
}

Result<CachePruneOutcome> cache_prune(const CachePruneRequest& request, Services& services) {
  CachePruneOutcome outcome;
  outcome.directory = cache_dir(services);
  if (!request.max_size) {
    KB_TRY_ASSIGN(outcome.target_bytes, cache::max_cache_bytes(services.env));
  } else {
    auto parsed = util::parse_byte_size(*request.max_size);
    if (!parsed)
      return fail("--max-size " + *request.max_size + " is not a size", "e.g. --max-size 20G (binary units)",
                  ExitCode::usage);
    outcome.target_bytes = *parsed;
  }
  KB_TRY_ASSIGN(auto lock, exclusive_use(services, outcome.directory, request.wait, "prune"));
  KB_TRY_ASSIGN(outcome.report,
                cache::prune_cache(services.fs, outcome.directory, outcome.target_bytes, request.dry_run));
  return outcome;
}

Result<CacheCleanOutcome> cache_clean(const CacheCleanRequest& request, Services& services) {
  CacheCleanOutcome outcome{cache_dir(services), request.toolchains};
  KB_TRY_ASSIGN(auto lock, exclusive_use(services, outcome.directory, request.wait, "clean"));
  std::vector<std::string> parts;
  for (auto part = util::CacheLayout::compile_cache_parts(); *part; ++part) parts.push_back(*part);
  if (request.toolchains) parts.insert(parts.end(), {"toolchains", "downloads", "test-envs"});
  for (const auto& part : parts) KB_TRY(services.fs.remove_all(outcome.directory / part));
  return outcome;
}

Result<CacheVerifyOutcome> cache_verify(const CacheVerifyRequest&, Services& services) {
  CacheVerifyOutcome outcome;
  outcome.directory = cache_dir(services);
  KB_TRY_ASSIGN(outcome.report, cache::CompileCache::verify(services.fs, outcome.directory));
  return outcome;
}

}  // namespace kbuild::usecase
