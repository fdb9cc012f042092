#include "kbuild/cli/hub_session.hpp"

#include <fmt/core.h>

#include "kbuild/util/process.hpp"

namespace kbuild::cli {

HubSession open_hub(const util::FileSystem& fs, const std::optional<std::string>& endpoint, bool verbose) {
  auto env = util::current_environment();
  HubSession session;
  session.token = hub::resolve_token(env, fs);
  session.transport = std::make_unique<hub::CurlTransport>();
  hub::HubClient::Logger logger;
  if (verbose) logger = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
  session.client =
      std::make_unique<hub::HubClient>(*session.transport, hub::resolve_endpoint(endpoint, env), session.token,
                                       hub::RetryPolicy{}, hub::HubClient::Sleeper{}, logger);
  return session;
}

}  // namespace kbuild::cli
