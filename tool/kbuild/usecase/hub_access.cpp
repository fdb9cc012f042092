#include "kbuild/usecase/hub_access.hpp"

#include <cstdlib>

#include "kbuild/hub/token.hpp"
#include "kbuild/net/names.hpp"
#include "kbuild/toolchain/probe.hpp"
#include "kbuild/util/log.hpp"

namespace kbuild::usecase {

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

HubAccess make_access(Services& services, const std::optional<std::string>& endpoint, hub::RetryPolicy retry) {
  auto env = services.env.all();
  HubAccess access;
  access.token = hub::resolve_token(env, services.fs);
  if (access.token) util::log::add_secret(access.token->value);  // never in a log line
  access.client = std::make_unique<hub::HubClient>(services.http, hub::resolve_endpoint(endpoint, env), access.token,
                                                   retry, hub::HubClient::Sleeper{},
                                                   [](const std::string& line) { util::log::debug(line); });
  access.client->set_clock(services.clock);
  return access;
}

}  // namespace

HubAccess open_hub(Services& services, const std::optional<std::string>& endpoint) {
  HubAccess access = make_access(services, endpoint, policy_from_environment(services.env));
  if (!util::log::enabled(util::log::Level::debug))  // (the debug log has every retry already)
    access.client->set_retry_notice([](const std::string& line) { util::log::info(line); });
  return access;
}

std::optional<std::string> token_owner_quickly(Services& services) {
  auto offline = services.env.get("HF_HUB_OFFLINE");
  if (offline && !offline->empty() && *offline != "0") return std::nullopt;
  hub::RetryPolicy quick;
  quick.max_retries = 0;
  quick.max_connect_retries = 0;
  quick.max_timeout_retries = 0;
  quick.request_timeout_seconds = 3;
  HubAccess access = make_access(services, std::nullopt, quick);
  if (!access.token) return std::nullopt;
  auto name = access.client->whoami();
  if (!name || !net::is_valid_namespace(*name)) {
    util::log::debug("the token's owner is unknown: " +
                     (name ? "\"" + *name + "\" is no namespace" : name.error().message));
    return std::nullopt;
  }
  return *name;
}

Result<lock::SystemFacts> probe_system_facts(Services& services, const std::string& python) {
  toolchain::PythonHeaders headers;
  KB_TRY_ASSIGN(auto torch, toolchain::probe_torch_from_python(services.launcher, services.fs, python, headers));
  return lock::linux_system_facts(torch, util::current_machine());
}

}  // namespace kbuild::usecase
