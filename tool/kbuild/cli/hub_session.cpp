#include "kbuild/cli/hub_session.hpp"

#include <fmt/core.h>

#include <cstdlib>

#include "kbuild/hub/url_download.hpp"
#include "kbuild/net/names.hpp"
#include "kbuild/toolchain/probe.hpp"
#include "kbuild/util/interrupt.hpp"
#include "kbuild/util/log.hpp"
#include "kbuild/util/process.hpp"

namespace kbuild::cli {

namespace {

/// The default policy, with $KBUILD_HUB_TIMEOUT as the deadline of API requests when it is valid.
hub::RetryPolicy policy_from_environment(const util::Environment& env) {
  hub::RetryPolicy retry;
  if (auto text = env.get("KBUILD_HUB_TIMEOUT"); text && !text->empty()) {
    char* end = nullptr;
    double seconds = std::strtod(text->c_str(), &end);
    if (end && *end == '\0' && seconds > 0 && seconds <= 3600)
      retry.request_timeout_seconds = seconds;
    else
      util::log::warn("KBUILD_HUB_TIMEOUT=\"" + *text + "\" is not a number of seconds (0 < s <= 3600); using " +
                      std::to_string(static_cast<int>(retry.request_timeout_seconds)));
  }
  return retry;
}

/// Token (kept out of logs), transport and client, requests timed by the services' clock and logged
/// at debug level.
HubSession make_session(Services& services, const std::optional<std::string>& endpoint, hub::RetryPolicy retry) {
  auto env = services.env.all();
  HubSession session;
  session.token = hub::resolve_token(env, services.fs);
  session.transport = std::make_unique<hub::CurlTransport>();
  if (session.token) util::log::add_secret(session.token->value);
  session.client = std::make_unique<hub::HubClient>(*session.transport, hub::resolve_endpoint(endpoint, env),
                                                    session.token, retry, hub::HubClient::Sleeper{},
                                                    [](const std::string& line) { util::log::debug(line); });
  session.client->set_clock(services.clock);
  return session;
}

}  // namespace

HubSession open_hub(Services& services, const std::optional<std::string>& endpoint, bool verbose) {
  if (verbose && !util::log::enabled(util::log::Level::debug)) util::log::set_level(util::log::Level::debug);
  HubSession session = make_session(services, endpoint, policy_from_environment(services.env));
  if (!util::log::enabled(util::log::Level::debug))  // (the debug log has every retry already)
    session.client->set_retry_notice([](const std::string& line) { util::log::info(line); });
  return session;
}

std::optional<std::string> token_owner_quickly(Services& services) {
  auto offline = services.env.get("HF_HUB_OFFLINE");
  if (offline && !offline->empty() && *offline != "0") return std::nullopt;
  hub::RetryPolicy quick;
  quick.max_retries = 0;
  quick.max_connect_retries = 0;
  quick.max_timeout_retries = 0;
  quick.request_timeout_seconds = 3;
  HubSession session = make_session(services, std::nullopt, quick);
  if (!session.token) return std::nullopt;
  auto name = session.client->whoami();
  if (!name || !net::is_valid_namespace(*name)) {
    util::log::debug("the token's owner is unknown: " +
                     (name ? "\"" + *name + "\" is no namespace" : name.error().message));
    return std::nullopt;
  }
  return *name;
}

Result<lock::SystemFacts> probe_system_facts(util::ProcessLauncher& launcher, const util::FileSystem& fs,
                                             const std::string& python) {
  toolchain::PythonHeaders headers;
  KB_TRY_ASSIGN(auto torch, toolchain::probe_torch_from_python(launcher, fs, python, headers));
  return lock::linux_system_facts(torch, util::current_machine());
}

toolchain::UrlDownloader url_downloader(net::HttpTransport& transport) {
  return [&transport](const std::string& url, const std::filesystem::path& destination) -> Result<void> {
    auto downloaded = hub::download_url(transport, url, destination);
    if (!downloaded && util::interrupted()) return util::interrupted_failure("while downloading " + url);
    KB_TRY(downloaded);
    return {};
  };
}

}  // namespace kbuild::cli
