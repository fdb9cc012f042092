// kbuild cache stats|verify|prune|clean: inspect, check, trim and empty the cache.

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "kbuild/cli/command.hpp"
#include "kbuild/usecase/cache_admin.hpp"

namespace kbuild::cli {

namespace {

std::string human(std::uint64_t bytes) {
  if (bytes >= (1ull << 30)) return fmt::format("{:.1f} GiB", bytes / double(1ull << 30));
  if (bytes >= (1ull << 20)) return fmt::format("{:.1f} MiB", bytes / double(1ull << 20));
  return fmt::format("{:.1f} KiB", bytes / 1024.0);
}

Result<ExitCode> run_stats(bool json, Services& services) {
  LogReporter reporter(false);
  auto use_case_services = services.with(reporter);
  KB_TRY_ASSIGN(auto stats, usecase::cache_stats({}, use_case_services));
  const auto& dir = stats.directory;
  const auto& usage = stats.usage;
  const auto& remote = stats.remote;
  const auto cap = stats.cap_bytes;
  const auto& c = stats.summary.counters;
  if (json) {
    nlohmann::ordered_json parts = nlohmann::ordered_json::object();
    for (const auto& part : usage.parts) parts[part.name] = {{"entries", part.entries}, {"bytes", part.bytes}};
    nlohmann::ordered_json out = {{"directory", dir.string()},
                                  {"total_bytes", usage.total_bytes()},
                                  {"compile_cache_cap_bytes", cap},
                                  {"parts", parts},
                                  {"counters",
                                   {{"hits", c.hits},
                                    {"misses", c.misses},
                                    {"stores", c.stores},
                                    {"errors", c.errors},
                                    {"corrupt", c.corrupt},
                                    {"remote_hits", c.remote_hits},
                                    {"remote_stores", c.remote_stores},
                                    {"remote_errors", c.remote_errors}}},
                                  {"remote", remote ? nlohmann::ordered_json(remote->url) : nlohmann::ordered_json()}};
    print_json_document(out.dump(2));
    return ExitCode::ok;
  }
  std::uint64_t lookups = c.hits + c.misses;
  fmt::print("cache directory   {} ({} in all)\n", dir.string(), human(usage.total_bytes()));
  for (const auto& part : usage.parts)
    fmt::print("  {:<15} {:>8} {} ({})\n", part.name, part.entries, part.entries == 1 ? "entry  " : "entries",
               human(part.bytes));
  std::uint64_t compile_bytes = 0;
  for (const auto& part : usage.parts)
    if (part.name == "objects" || part.name == "manifests") compile_bytes += part.bytes;
  fmt::print("compile cache     {} of {} cap (KBUILD_CACHE_MAX_SIZE; kept after each build)\n", human(compile_bytes),
             human(cap));
  fmt::print("hits / misses     {} / {} ({:.0f}% hit rate)\n", c.hits, c.misses,
             lookups ? 100.0 * c.hits / lookups : 0.0);
  fmt::print("stores            {}\n", c.stores);
  fmt::print("errors            {}\n", c.errors);
  fmt::print("damaged entries   {} (found and removed; each was a miss)\n", c.corrupt);
  fmt::print("remote            {}\n", remote ? remote->url + (remote->writable ? " (read-write)" : " (read-only)")
                                              : "none (KBUILD_REMOTE_CACHE)");
  fmt::print("remote hits       {} (objects fetched and verified)\n", c.remote_hits);
  fmt::print("remote stores     {}\n", c.remote_stores);
  fmt::print("remote errors     {} (each a miss)\n", c.remote_errors);
  return ExitCode::ok;
}

struct PruneOptions {
  std::string max_size;
  bool dry_run = false;
  bool no_wait = false;
};

Result<ExitCode> run_prune(const PruneOptions& options, Services& services) {
  usecase::CachePruneRequest request;
  if (!options.max_size.empty()) request.max_size = options.max_size;
  request.dry_run = options.dry_run;
  request.wait = !options.no_wait;
  LogReporter reporter(false);
  auto use_case_services = services.with(reporter);
  KB_TRY_ASSIGN(auto outcome, usecase::cache_prune(request, use_case_services));
  const auto& report = outcome.report;
  const auto target = outcome.target_bytes;
  for (const auto& entry : report.removed)
    fmt::print("{} {} ({})\n", options.dry_run ? "would remove" : "removed", entry.path.string(), human(entry.bytes));
  fmt::print("{} {} in {} entr{}: {} -> {} (target {})\n", options.dry_run ? "would free" : "freed",
             human(report.freed), report.removed.size(), report.removed.size() == 1 ? "y" : "ies",
             human(report.total_before), human(report.total_after), human(target));
  return ExitCode::ok;
}

Result<ExitCode> run_clean_cache(const usecase::CacheCleanRequest& request, Services& services) {
  LogReporter reporter(true);  // says when it waits for a running build
  auto use_case_services = services.with(reporter);
  KB_TRY_ASSIGN(auto outcome, usecase::cache_clean(request, use_case_services));
  fmt::print("emptied the compile cache{} in {}\n",
             request.toolchains ? ", the toolchains and the test environments" : "", outcome.directory.string());
  return ExitCode::ok;
}

Result<ExitCode> run_verify(Services& services) {
  LogReporter reporter(false);
  auto use_case_services = services.with(reporter);
  KB_TRY_ASSIGN(auto outcome, usecase::cache_verify({}, use_case_services));
  const auto& report = outcome.report;
  for (const auto& problem : report.problems) fmt::print("  {}\n", problem);
  fmt::print("checked {} objects and {} manifests in {}: {} damaged, removed; {} leftover temporary file(s) removed\n",
             report.objects, report.manifests, outcome.directory.string(), report.removed, report.leftovers);
  return ExitCode::ok;
}

}  // namespace

void register_cache(CLI::App& app, CommandAction& action) {
  CLI::App* group = app.add_subcommand("cache", "Inspect or empty the compile cache ($KBUILD_CACHE, ~/.cache/kbuild)");
  group->require_subcommand(1);
  auto json = std::make_shared<bool>(false);
  CLI::App* stats = group->add_subcommand(
      "stats",
      "Size of every part of the cache (objects, manifests, toolchains, downloads, test environments, tmp) "
      "and the compile cache's hit rate");
  stats->add_flag("--json", *json, "Print as JSON");
  stats->callback([json, &action] { action = [json](Services& s) { return run_stats(*json, s); }; });
  auto prune = std::make_shared<PruneOptions>();
  CLI::App* prune_cmd = group->add_subcommand(
      "prune", "Remove least recently used entries of the whole cache until it fits a size (waits for running builds)");
  prune_cmd->add_option("--max-size", prune->max_size, "Target size, e.g. 20G (default: KBUILD_CACHE_MAX_SIZE, 10G)");
  prune_cmd->add_flag("-n,--dry-run", prune->dry_run, "Only list what would be removed");
  prune_cmd->add_flag("--no-wait", prune->no_wait, "Fail at once when a build or test is using the cache");
  prune_cmd->callback([prune, &action] { action = [prune](Services& s) { return run_prune(*prune, s); }; });
  CLI::App* verify = group->add_subcommand(
      "verify", "Check every cached object against its checksum and every manifest's shape; remove damaged ones");
  verify->callback([&action] { action = [](Services& s) { return run_verify(s); }; });
  auto clean_request = std::make_shared<usecase::CacheCleanRequest>();
  auto clean_no_wait = std::make_shared<bool>(false);
  CLI::App* clean = group->add_subcommand(
      "clean", "Remove every cached object (and with --toolchains the toolchains); waits for running builds");
  clean->add_flag("--toolchains", clean_request->toolchains,
                  "Also remove downloaded and unpacked toolchains and the test environments of kbuild test");
  clean->add_flag("--no-wait", *clean_no_wait, "Fail at once when a build or test is using the cache");
  clean->callback([clean_request, clean_no_wait, &action] {
    action = [clean_request, clean_no_wait](Services& s) {
      usecase::CacheCleanRequest request = *clean_request;
      request.wait = !*clean_no_wait;
      return run_clean_cache(request, s);
    };
  });
}

}  // namespace kbuild::cli
