// kbuild publish [KERNEL_DIR] [--tag vX.Y.Z]: upload build/ to a kernel repository on the Hub.

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "kbuild/cli/command.hpp"
#include "kbuild/usecase/publish.hpp"
#include "kbuild/util/log.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::cli {

namespace {

struct PublishCliOptions {
  std::string kernel_dir = ".";
  std::string tag;
  std::optional<std::string> repo_id;
  std::optional<std::string> endpoint;
  bool private_repo = false;
  bool create_pr = false;
  bool dry_run = false;
  bool force = false;
  bool json = false;
  bool verbose = false;
  bool quiet = false;
  std::vector<std::string> from;
  bool require_all = false;
  bool allow_stale = false;
  bool allow_partial_archs = false;
  bool allow_other_commit = false;
  bool require_signed = false;
};

void print_plan(const usecase::PublishOutcome& outcome) {
  for (const auto& planned : outcome.plans) {
    fmt::print("branch {}{}: {} to add, {} to delete, {} unchanged\n", planned.branch, planned.exists ? "" : " (new)",
               planned.plan.adds.size(), planned.plan.deletes.size(), planned.plan.unchanged.size());
    for (const auto& file : planned.plan.adds) fmt::print("  + {} ({})\n", file.path, util::human_size(file.size));
    for (const auto& path : planned.plan.deletes) fmt::print("  - {}\n", path);
  }
}

// The outcome as one JSON document on stdout (docs/cli.md, "publish --json").
void print_json(const usecase::PublishOutcome& outcome) {
  nlohmann::ordered_json j = {{"status", hub::to_string(outcome.status)},
                              {"repo_id", outcome.repo_id},
                              {"branch", outcome.branch},
                              {"tag", outcome.tag.empty() ? nlohmann::json() : nlohmann::json(outcome.tag)},
                              {"commit", outcome.commit},
                              {"url", outcome.url},
                              {"variants", outcome.variants},
                              {"requests", outcome.traffic.requests},
                              {"lfs_objects_uploaded", outcome.traffic.lfs_objects_uploaded},
                              {"lfs_bytes_uploaded", outcome.traffic.lfs_bytes_uploaded},
                              {"inline_bytes", outcome.traffic.inline_bytes}};
  j["missing"] = outcome.missing;
  j["signed"] = outcome.signed_variants;
  if (outcome.pull_request_url) j["pull_request_url"] = *outcome.pull_request_url;
  j["plan"] = nlohmann::ordered_json::array();
  for (const auto& planned : outcome.plans) {
    nlohmann::ordered_json p = {{"branch", planned.branch},
                                {"add", nlohmann::ordered_json::array()},
                                {"delete", planned.plan.deletes},
                                {"unchanged", planned.plan.unchanged.size()}};
    for (const auto& file : planned.plan.adds) p["add"].push_back({{"path", file.path}, {"size", file.size}});
    j["plan"].push_back(p);
  }
  print_json_document(j.dump(2));
}

Result<ExitCode> run_publish(const PublishCliOptions& options, Services& services) {
  if (options.quiet && options.verbose) return fail("-q and -v contradict each other", "choose one", ExitCode::usage);
  if (options.quiet) util::log::set_level(util::log::Level::warn);  // no retry notices either
  log_requests(options.verbose);
  usecase::PublishRequest request;
  request.kernel_dir = absolute_dir(options.kernel_dir);
  request.tag = options.tag;
  request.repo_id = options.repo_id;
  request.endpoint = options.endpoint;
  request.private_repo = options.private_repo;
  request.create_pr = options.create_pr;
  request.dry_run = options.dry_run;
  request.force = options.force;
  for (const auto& dir : options.from) request.sources.push_back(absolute_dir(dir));
  request.require_all = options.require_all;
  request.allow_stale = options.allow_stale;
  request.allow_partial_archs = options.allow_partial_archs;
  request.allow_other_commit = options.allow_other_commit;
  request.require_signed = options.require_signed;
  // Progress on stderr (stdout has the result line or the --json document); a live upload line on
  // a terminal.
  exec::TerminalOptions voice;
  voice.out = stderr;
  voice.quiet = options.json || options.quiet;
  voice.smart_terminal = is_smart_terminal(stderr, services.env) && !voice.quiet;
  exec::TerminalReporter reporter(voice);
  auto use_case_services = services.with(reporter);
  auto published = usecase::publish(request, use_case_services);
  reporter.finish();
  KB_TRY_ASSIGN(auto outcome, std::move(published));

  if (options.json) {
    print_json(outcome);
    return ExitCode::ok;
  }
  if (outcome.status == hub::PublishStatus::dry_run) {
    fmt::print("dry run: would publish {} of {} to {} (branch {}{})\n",
               util::count_of(outcome.variants.size(), "variant"), outcome.kernel, outcome.repo_id, outcome.branch,
               outcome.tag.empty() ? ", no tag" : ", tag " + outcome.tag);
    print_plan(outcome);
    return ExitCode::ok;
  }
  if (outcome.status == hub::PublishStatus::pull_request_created) {
    fmt::print("opened a pull request: {}\n", *outcome.pull_request_url);
    return ExitCode::ok;
  }
  fmt::print("{} {} to {} (branch {}{} at {}): {} LFS object(s), {} uploaded\n{}\n",
             outcome.status == hub::PublishStatus::no_changes
                 ? (outcome.tag.empty() ? "no changes to" : "no changes; tagged")
                 : "published",
             outcome.kernel, outcome.repo_id, outcome.branch, outcome.tag.empty() ? "" : ", tag " + outcome.tag,
             outcome.commit.substr(0, 12), outcome.traffic.lfs_objects_uploaded,
             util::human_size(outcome.traffic.lfs_bytes_uploaded), outcome.url);
  return ExitCode::ok;
}

}  // namespace

void register_publish(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<PublishCliOptions>();
  CLI::App* cmd =
      app.add_subcommand("publish", "Upload build/ to a kernel repository on the Hub (branch vN, tag vN.x.y)");
  cmd->add_option("kernel_dir", options->kernel_dir, "Kernel directory (contains build.toml and build/)")
      ->capture_default_str();
  cmd->add_option("--tag", options->tag,
                  "Release tag vMAJOR.MINOR.PATCH; MAJOR must be general.version (without: branch vN only)");
  cmd->add_option("--repo-id", options->repo_id, "Repository (default: [general.hub] repo-id)");
  cmd->add_option("--endpoint", options->endpoint, "Hub URL (default: $HF_ENDPOINT or https://huggingface.co)");
  cmd->add_flag("--private", options->private_repo, "Create the repository as private");
  cmd->add_flag("--create-pr", options->create_pr,
                "Open a pull request against the version branch instead of committing");
  cmd->add_flag("--dry-run", options->dry_run, "Only print the plan: files to add and delete per branch");
  cmd->add_flag("--force", options->force, "Move an existing tag");
  cmd->add_option("--from", options->from,
                  "Publish the variants of DIR instead of build/: a variant directory or a directory of them "
                  "(artifacts built elsewhere); repeatable")
      ->type_name("DIR");
  cmd->add_flag("--require-all", options->require_all,
                "Refuse to publish unless every variant of the kernel's matrix is there");
  cmd->add_flag("--allow-stale", options->allow_stale,
                "Publish build/ even where it is older than the sources or was not built here");
  cmd->add_flag("--allow-partial-archs", options->allow_partial_archs,
                "Publish CUDA variants built for fewer capabilities than build.toml declares");
  cmd->add_flag("--allow-other-commit", options->allow_other_commit,
                "Publish variants whose metadata.json records another commit than the checkout's HEAD (refused "
                "by default: CI artifacts of an older run)");
  cmd->add_flag("--require-signed", options->require_signed,
                "Refuse variants without a metadata.json.sigstore that signs their metadata.json");
  cmd->add_flag("--json", options->json, "Print the outcome as JSON");
  cmd->add_flag("-v,--verbose", options->verbose, "Print every request (the token is never printed)");
  cmd->add_flag("-q,--quiet", options->quiet, "Print only the result line, warnings and errors (no progress)");
  cmd->callback([options, &action] { action = [options](Services& s) { return run_publish(*options, s); }; });
}

}  // namespace kbuild::cli
