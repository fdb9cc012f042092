// kbuild cache stats|clean: inspect and empty the compile cache.

#include <fmt/core.h>

#include "kbuild/cache/compile_cache.hpp"
#include "kbuild/cli/command.hpp"
#include "kbuild/util/cache_layout.hpp"

namespace kbuild::cli {

namespace {

std::string human(std::uint64_t bytes) {
  if (bytes >= (1ull << 30)) return fmt::format("{:.1f} GiB", bytes / double(1ull << 30));
  if (bytes >= (1ull << 20)) return fmt::format("{:.1f} MiB", bytes / double(1ull << 20));
  return fmt::format("{:.1f} KiB", bytes / 1024.0);
}

Result<ExitCode> run_stats(Services& services) {
  auto dir = util::CacheLayout::from_environment(services.env).root;
  KB_TRY_ASSIGN(auto summary, cache::CompileCache::summarize(services.fs, dir));
  KB_TRY_ASSIGN(std::uint64_t cap, cache::max_cache_bytes(services.env));
  const auto& c = summary.counters;
  std::uint64_t lookups = c.hits + c.misses;
  fmt::print("cache directory   {}\n", dir.string());
  fmt::print("objects           {} ({} of {} cap)\n", summary.entries, human(summary.bytes), human(cap));
  fmt::print("hits / misses     {} / {} ({:.0f}% hit rate)\n", c.hits, c.misses,
             lookups ? 100.0 * c.hits / lookups : 0.0);
  fmt::print("stores            {}\n", c.stores);
  fmt::print("errors            {}\n", c.errors);
  fmt::print("damaged entries   {} (found and removed; each was a miss)\n", c.corrupt);
  KB_TRY_ASSIGN(auto remote, cache::remote_settings(services.env));
  fmt::print("remote            {}\n", remote ? remote->url + (remote->writable ? " (read-write)" : " (read-only)")
                                              : "none (KBUILD_REMOTE_CACHE)");
  fmt::print("remote hits       {} (objects fetched and verified)\n", c.remote_hits);
  fmt::print("remote stores     {}\n", c.remote_stores);
  fmt::print("remote errors     {} (each a miss)\n", c.remote_errors);
  return ExitCode::ok;
}

Result<ExitCode> run_clean_cache(bool toolchains, Services& services) {
  auto dir = util::CacheLayout::from_environment(services.env).root;
  std::vector<std::string> parts;
  for (auto part = util::CacheLayout::compile_cache_parts(); *part; ++part) parts.push_back(*part);
  if (toolchains) {
    parts.push_back("toolchains");
    parts.push_back("downloads");
    parts.push_back("test-envs");
  }
  for (const auto& part : parts) KB_TRY(services.fs.remove_all(dir / part));
  fmt::print("emptied the compile cache{} in {}\n", toolchains ? ", the toolchains and the test environments" : "",
             dir.string());
  return ExitCode::ok;
}

Result<ExitCode> run_verify(Services& services) {
  auto dir = util::CacheLayout::from_environment(services.env).root;
  KB_TRY_ASSIGN(auto report, cache::CompileCache::verify(services.fs, dir));
  fmt::print("checked {} objects and {} manifests in {}: {} damaged, removed\n", report.objects, report.manifests,
             dir.string(), report.removed);
  return ExitCode::ok;
}

}  // namespace

void register_cache(CLI::App& app, CommandAction& action) {
  CLI::App* group = app.add_subcommand("cache", "Inspect or empty the compile cache ($KBUILD_CACHE, ~/.cache/kbuild)");
  group->require_subcommand(1);
  CLI::App* stats = group->add_subcommand("stats", "Entries, size and hit rate of the compile cache");
  stats->callback([&action] { action = [](Services& s) { return run_stats(s); }; });
  CLI::App* verify = group->add_subcommand(
      "verify", "Check every cached object against its checksum and every manifest's shape; remove damaged ones");
  verify->callback([&action] { action = [](Services& s) { return run_verify(s); }; });
  auto toolchains = std::make_shared<bool>(false);
  CLI::App* clean = group->add_subcommand("clean", "Remove every cached object (and with --toolchains the toolchains)");
  clean->add_flag("--toolchains", *toolchains,
                  "Also remove downloaded and unpacked toolchains and the test environments of kbuild test");
  clean->callback(
      [toolchains, &action] { action = [toolchains](Services& s) { return run_clean_cache(*toolchains, s); }; });
}

}  // namespace kbuild::cli
