// kbuild download [PROJECT_DIR]: install the kernels of kernels.lock into the Hugging Face cache.

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "kbuild/cli/command.hpp"
#include "kbuild/cli/hub_session.hpp"
#include "kbuild/lock/download.hpp"
#include "kbuild/lock/hf_cache.hpp"
#include "kbuild/lock/project.hpp"
#include "kbuild/util/log.hpp"

namespace kbuild::cli {

namespace {

struct DownloadCliOptions {
  std::string project_dir = ".";
  std::string python;
  std::optional<std::string> endpoint;
  bool all_variants = false;
  bool json = false;
  bool verbose = false;
  bool quiet = false;
};

Result<ExitCode> run_download(const DownloadCliOptions& options, Services& services) {
  util::log::set_level(util::log::level_for(options.verbose, options.quiet, services.env.get("KBUILD_LOG")));
  auto project_dir = absolute_dir(options.project_dir);
  KB_TRY_ASSIGN(auto entries, lock::read_lockfile(services.fs, project_dir));
  lock::DownloadOptions download;
  download.all_variants = options.all_variants;
  auto cache = lock::resolve_hf_cache(services.env.all());
  download.cache_root = cache.root;
  if (!options.all_variants) {
    KB_TRY_ASSIGN(std::string python, python_setting(options.python, services));
    auto facts = probe_system_facts(services.launcher, services.fs, python);
    if (!facts) {
      Error error = facts.error();
      error.hint += "; or pass --all-variants to download every variant";
      return fail(error);
    }
    download.system = *facts;
  }
  if (!options.json && !options.quiet && (options.verbose || is_smart_terminal(stderr, services.env)))
    download.progress = [](const std::string& line) { util::log::info(line); };

  HubSession hub = open_hub(services, options.endpoint, options.verbose);
  lock::HubKernelIndex index(*hub.client);
  KB_TRY_ASSIGN(auto outcome, lock::download_locked(entries, download, index, services.fs));

  if (options.json) {
    nlohmann::ordered_json variants = nlohmann::ordered_json::array();
    for (const auto& v : outcome.variants)
      variants.push_back({{"repo_id", v.repo_id},
                          {"commit", v.commit},
                          {"variant", v.variant},
                          {"path", v.path.string()},
                          {"files", v.files},
                          {"downloaded", v.downloaded},
                          {"bytes", v.bytes}});
    nlohmann::ordered_json j = {{"cache", cache.root.string()},
                                {"cache_origin", cache.origin},
                                {"variants", variants},
                                {"bytes_downloaded", hub.client->stats().bytes_downloaded}};
    if (!options.all_variants) j["system"] = download.system.describe();
    print_json_document(j.dump(2));
    return ExitCode::ok;
  }
  if (options.quiet) return ExitCode::ok;
  for (const auto& v : outcome.variants)
    fmt::print("  {}@{} {}  ({} files verified, {} downloaded)\n", v.repo_id, v.commit.substr(0, 12), v.variant,
               v.files, v.downloaded);
  fmt::print("installed {} variant{} into {} ({:.1f} MB downloaded)\n", outcome.variants.size(),
             outcome.variants.size() == 1 ? "" : "s", cache.root.string(), hub.client->stats().bytes_downloaded / 1e6);
  return ExitCode::ok;
}

}  // namespace

void register_download(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<DownloadCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "download", "Install the kernels of kernels.lock for this machine into the Hugging Face cache, verified");
  cmd->add_option("project_dir", options->project_dir, "Project directory (contains kernels.lock)")
      ->capture_default_str();
  cmd->add_flag("--all-variants", options->all_variants, "Every variant, not only the one this machine loads");
  cmd->add_option("--python", options->python,
                  std::string("The interpreter whose Torch decides the variant") + k_python_help_suffix);
  cmd->add_option("--endpoint", options->endpoint, "Hub URL (default: $HF_ENDPOINT or https://huggingface.co)");
  cmd->add_flag("--json", options->json, "Print what was installed as JSON");
  cmd->add_flag("-v,--verbose", options->verbose, "Print every step and request (the token is never printed)");
  cmd->add_flag("-q,--quiet", options->quiet, "Print only errors");
  cmd->callback([options, &action] { action = [options](Services& s) { return run_download(*options, s); }; });
}

}  // namespace kbuild::cli
