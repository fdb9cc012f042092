// kbuild whoami: which Hub account the token belongs to.

#include <fmt/core.h>

#include "kbuild/cli/command.hpp"
#include "kbuild/cli/hub_session.hpp"

namespace kbuild::cli {

namespace {
struct WhoamiOptions {
  std::optional<std::string> endpoint;
  bool verbose = false;
};

Result<ExitCode> run_whoami(const WhoamiOptions& options, Services& services) {
  HubSession hub = open_hub(services, options.endpoint, options.verbose);
  KB_TRY_ASSIGN(std::string name, hub.client->whoami());
  fmt::print("{} (token from {}, endpoint {})\n", name, hub.token->origin, hub.client->endpoint());
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
