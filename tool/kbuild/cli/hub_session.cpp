#include "kbuild/cli/hub_session.hpp"

#include <fmt/core.h>

#include "kbuild/toolchain/probe.hpp"
#include "kbuild/util/process.hpp"

namespace kbuild::cli {

HubSession open_hub(const util::FileSystem& fs, const util::Environment& environment,
                    const std::optional<std::string>& endpoint, bool verbose) {
  auto env = environment.all();
  HubSession session;
  session.token = hub::resolve_token(env, fs);
  session.transport = std::make_unique<hub::CurlTransport>();
  hub::HubClient::Logger logger;
  if (verbose) logger = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
  session.client =
      std::make_unique<hub::HubClient>(*session.transport, hub::resolve_endpoint(endpoint, env), session.token,
                                       hub::RetryPolicy{}, hub::HubClient::Sleeper{}, logger);
  if (!verbose)
    session.client->set_retry_notice([](const std::string& line) { fmt::print(stderr, "kbuild: {}\n", line); });
  return session;
}

Result<lock::SystemFacts> probe_system_facts(util::ProcessLauncher& launcher, const util::FileSystem& fs,
                                             const std::string& python) {
  toolchain::PythonHeaders headers;
  KB_TRY_ASSIGN(auto torch, toolchain::probe_torch_from_python(launcher, fs, python, headers));
  return lock::linux_system_facts(torch, util::current_machine());
}

}  // namespace kbuild::cli
