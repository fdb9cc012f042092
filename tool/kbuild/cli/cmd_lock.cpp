// kbuild lock [PROJECT_DIR]: [tool.kernels.dependencies] of pyproject.toml -> kernels.lock.

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "kbuild/cli/command.hpp"
#include "kbuild/lock/project.hpp"
#include "kbuild/usecase/consume.hpp"
#include "kbuild/util/log.hpp"

namespace kbuild::cli {

namespace {

struct LockCliOptions {
  std::string project_dir = ".";
  std::vector<std::string> upgrade;  ///< "*" for all, else repository ids
  std::vector<std::string> trust;
  std::optional<std::string> endpoint;
  bool check = false;
  bool offline = false;
  bool dry_run = false;
  bool json = false;
  bool verbose = false;
  bool quiet = false;
};

std::string short_commit(const std::string& commit) { return commit.substr(0, 12); }

std::string kernels_count(size_t n) { return std::to_string(n) + (n == 1 ? " kernel" : " kernels"); }

std::string dependency_json_name(const lock::Dependency& dep) { return dep.str(); }

nlohmann::ordered_json outcome_json(const lock::LockProjectOutcome& outcome, bool check) {
  nlohmann::ordered_json deps = nlohmann::ordered_json::array();
  for (const auto& d : outcome.lock.dependencies) {
    nlohmann::ordered_json dependency = {{"repo-id", d.entry.dependency.repo_id}};
    if (d.entry.dependency.is_major())
      dependency["version"] = d.entry.dependency.major();
    else
      dependency["revision"] = d.entry.dependency.revision();
    deps.push_back({{"dependency", dependency},
                    {"commit", d.entry.commit},
                    {"requested", d.requested},
                    {"source", d.source},
                    {"kept", d.kept},
                    {"required_by", d.required_by},
                    {"variants", d.variants}});
  }
  nlohmann::ordered_json changes = nlohmann::ordered_json::array();
  for (const auto& c : outcome.changes) {
    const char* kind = c.kind == lock::LockChange::Kind::added     ? "added"
                       : c.kind == lock::LockChange::Kind::removed ? "removed"
                                                                   : "moved";
    changes.push_back({{"kind", kind},
                       {"dependency", dependency_json_name(c.dependency)},
                       {"old_commit", c.old_commit},
                       {"new_commit", c.new_commit}});
  }
  nlohmann::ordered_json j = {{"lockfile", outcome.lockfile.string()},
                              {"up_to_date", outcome.up_to_date},
                              {"written", outcome.written},
                              {"dependencies", deps},
                              {"changes", changes}};
  if (check) j["check"] = outcome.up_to_date ? "passed" : "failed";
  return j;
}

void print_changes(const lock::LockProjectOutcome& outcome, std::FILE* stream) {
  for (const auto& c : outcome.changes) {
    switch (c.kind) {
      case lock::LockChange::Kind::added:
        fmt::print(stream, "  + {} {}\n", c.dependency.str(), short_commit(c.new_commit));
        break;
      case lock::LockChange::Kind::removed:
        fmt::print(stream, "  - {} {} (no longer required)\n", c.dependency.str(), short_commit(c.old_commit));
        break;
      case lock::LockChange::Kind::moved:
        fmt::print(stream, "  ~ {} {} -> {}\n", c.dependency.str(), short_commit(c.old_commit),
                   short_commit(c.new_commit));
        break;
    }
  }
}

Result<ExitCode> run_lock(const LockCliOptions& options, Services& services) {
  util::log::set_level(util::log::level_for(options.verbose, options.quiet, services.env.get("KBUILD_LOG")));
  log_requests(options.verbose);
  usecase::LockKernelsRequest request;
  request.project_dir = absolute_dir(options.project_dir);
  request.mode = options.check     ? lock::LockMode::check
                 : options.dry_run ? lock::LockMode::dry_run
                                   : lock::LockMode::write;
  for (const auto& repo : options.upgrade) {
    if (repo == "*")
      request.upgrade_all = true;
    else
      request.upgrade.insert(repo);
  }
  request.trusted.insert(options.trust.begin(), options.trust.end());
  request.endpoint = options.endpoint;
  request.offline = options.offline;
  LogReporter reporter(!options.json && !options.quiet && (options.verbose || is_smart_terminal(stderr, services.env)));
  auto use_case_services = services.with(reporter);
  KB_TRY_ASSIGN(auto outcome, usecase::lock_kernels(request, use_case_services));

  if (options.json) {
    print_json_document(outcome_json(outcome, options.check).dump(2));
    return options.check && !outcome.up_to_date ? ExitCode::failure : ExitCode::ok;
  }
  if (options.check) {
    if (outcome.up_to_date) {
      if (!options.quiet)
        fmt::print("{} is up to date ({})\n", outcome.lockfile.string(),
                   kernels_count(outcome.lock.dependencies.size()));
      return ExitCode::ok;
    }
    fmt::print(stderr, "kbuild: error: {} is {}\n", outcome.lockfile.string(),
               outcome.existed ? "out of date" : "missing");
    print_changes(outcome, stderr);
    if (outcome.changes.empty() && outcome.existed) fmt::print(stderr, "  (same entries, different formatting)\n");
    fmt::print(stderr, "  hint: run `kbuild lock {}` and commit the result\n", options.project_dir);
    return ExitCode::failure;
  }
  if (options.quiet) return ExitCode::ok;
  for (const auto& d : outcome.lock.dependencies) {
    std::string how = d.kept ? "kept from kernels.lock" : d.source;
    fmt::print(
        "  {:<40} {:<12} {}  ({}, {} variant{})\n", d.entry.dependency.repo_id,
        d.entry.dependency.is_major() ? std::to_string(d.entry.dependency.major()) : d.entry.dependency.revision(),
        short_commit(d.entry.commit), how, d.variants.size(), d.variants.size() == 1 ? "" : "s");
  }
  if (options.dry_run) {
    fmt::print("dry run: {} {}\n", outcome.lockfile.string(),
               outcome.up_to_date ? "is up to date"
               : outcome.existed  ? "would change:"
                                  : "would be created");
    print_changes(outcome, stdout);
  } else if (outcome.written) {
    fmt::print("{} {} ({})\n", outcome.existed ? "updated" : "wrote", outcome.lockfile.string(),
               kernels_count(outcome.lock.dependencies.size()));
    print_changes(outcome, stdout);
  } else {
    fmt::print("{} is up to date ({})\n", outcome.lockfile.string(), kernels_count(outcome.lock.dependencies.size()));
  }
  return ExitCode::ok;
}

}  // namespace

void register_lock(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<LockCliOptions>();
  CLI::App* cmd =
      app.add_subcommand("lock", "Lock the kernels of [tool.kernels.dependencies] in pyproject.toml into kernels.lock");
  cmd->add_option("project_dir", options->project_dir, "Project directory (contains pyproject.toml)")
      ->capture_default_str();
  cmd->add_flag("--check", options->check,
                "Write nothing; exit 1 when kernels.lock is missing or not what `kbuild lock` would write (for CI)");
  cmd->add_flag("--dry-run", options->dry_run, "Resolve and show the changes; write nothing");
  cmd->add_flag("--upgrade{*}", options->upgrade,
                "Resolve again instead of keeping locked commits: --upgrade for all, --upgrade=ORG/NAME for one "
                "(repeatable)");
  cmd->add_option("--trust", options->trust,
                  "Lock kernels of this namespace (or ORG/NAME) even if it is not a trusted kernel publisher; "
                  "repeatable");
  cmd->add_option("--endpoint", options->endpoint, "Hub URL (default: $HF_ENDPOINT or https://huggingface.co)");
  cmd->add_flag("--json", options->json, "Print what was resolved, and from what, as JSON");
  cmd->add_flag("--offline", options->offline,
                "Use only kernels.lock and the Hugging Face cache, never the Hub (also HF_HUB_OFFLINE=1); with "
                "--check, an offline CI gate");
  cmd->add_flag("-v,--verbose", options->verbose, "Print every step and request (the token is never printed)");
  cmd->add_flag("-q,--quiet", options->quiet, "Print only errors");
  cmd->callback([options, &action] { action = [options](Services& s) { return run_lock(*options, s); }; });
}

}  // namespace kbuild::cli
