// kbuild whoami: which Hub account the token belongs to.

#include <fmt/core.h>

#include "kbuild/cli/command.hpp"
#include "kbuild/usecase/inspect.hpp"

namespace kbuild::cli {

namespace {
struct WhoamiOptions {
  std::optional<std::string> endpoint;
  bool verbose = false;
};

Result<ExitCode> run_whoami(const WhoamiOptions& options, Services& services) {
  log_requests(options.verbose);
  LogReporter reporter(false);
  auto use_case_services = services.with(reporter);
  KB_TRY_ASSIGN(auto outcome, usecase::whoami({options.endpoint}, use_case_services));
  fmt::print("{} (token from {}, endpoint {})\n", outcome.name, outcome.token_origin, outcome.endpoint);
  return ExitCode::ok;
}
}  // namespace

void register_whoami(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<WhoamiOptions>();
  CLI::App* cmd =
      app.add_subcommand("whoami", "Show the Hub account of the token (HF_TOKEN or the huggingface-cli token file)");
  cmd->add_option("--endpoint", options->endpoint, "Hub URL (default: $HF_ENDPOINT or https://huggingface.co)");
  cmd->add_flag("-v,--verbose", options->verbose, "Print every request (the token is never printed)");
  cmd->callback([options, &action] { action = [options](Services& s) { return run_whoami(*options, s); }; });
}

}  // namespace kbuild::cli
