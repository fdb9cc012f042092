// kbuild download [PROJECT_DIR]: install the kernels of kernels.lock into the Hugging Face cache.

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "kbuild/cli/command.hpp"
#include "kbuild/lock/download.hpp"
#include "kbuild/lock/hf_cache.hpp"
#include "kbuild/lock/project.hpp"
#include "kbuild/usecase/consume.hpp"
#include "kbuild/util/log.hpp"

namespace kbuild::cli {

namespace {

struct DownloadCliOptions {
  std::string project_dir = ".";
  std::string python;
  std::optional<std::string> endpoint;
  bool all_variants = false;
  bool offline = false;
  bool json = false;
  bool verbose = false;
  bool quiet = false;
};

Result<ExitCode> run_download(const DownloadCliOptions& options, Services& services) {
  util::log::set_level(util::log::level_for(options.verbose, options.quiet, services.env.get("KBUILD_LOG")));
  log_requests(options.verbose);
  usecase::DownloadRequest request;
  request.project_dir = absolute_dir(options.project_dir);
  request.all_variants = options.all_variants;
  if (!options.all_variants) {
    KB_TRY_ASSIGN(request.python, python_setting(options.python, services));
  }
  request.endpoint = options.endpoint;
  request.offline = options.offline;
  LogReporter reporter(!options.json && !options.quiet && (options.verbose || is_smart_terminal(stderr, services.env)));
  auto use_case_services = services.with(reporter);
  KB_TRY_ASSIGN(auto outcome, usecase::download(request, use_case_services));

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
    nlohmann::ordered_json j = {{"cache", outcome.cache.string()},
                                {"cache_origin", outcome.cache_origin},
                                {"variants", variants},
                                {"bytes_downloaded", outcome.bytes_downloaded},
                                {"offline", outcome.offline},
                                {"repaired", outcome.repaired}};
    if (!options.all_variants) j["system"] = outcome.system;
    print_json_document(j.dump(2));
    return ExitCode::ok;
  }
  if (options.quiet) return ExitCode::ok;
  for (const auto& v : outcome.variants)
    fmt::print("  {}@{} {}  ({} files verified, {} downloaded)\n", v.repo_id, v.commit.substr(0, 12), v.variant,
               v.files, v.downloaded);
  if (outcome.offline)
    fmt::print("verified {} variant{} in {} (offline: nothing was downloaded)\n", outcome.variants.size(),
               outcome.variants.size() == 1 ? "" : "s", outcome.cache.string());
  else
    fmt::print(
        "installed {} variant{} into {} ({:.1f} MB downloaded{})\n", outcome.variants.size(),
        outcome.variants.size() == 1 ? "" : "s", outcome.cache.string(), outcome.bytes_downloaded / 1e6,
        outcome.repaired.empty() ? "" : fmt::format("; {} damaged cached file(s) replaced", outcome.repaired.size()));
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
  cmd->add_flag(
      "--offline", options->offline,
      "Use only kernels.lock and the Hugging Face cache: verify what is cached, fetch nothing (also HF_HUB_OFFLINE=1)");
  cmd->add_flag("-v,--verbose", options->verbose, "Print every step and request (the token is never printed)");
  cmd->add_flag("-q,--quiet", options->quiet, "Print only errors");
  cmd->callback([options, &action] { action = [options](Services& s) { return run_download(*options, s); }; });
}

}  // namespace kbuild::cli
