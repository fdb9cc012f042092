#pragma once
// The Hub as use cases reach it: endpoint and token resolved as the official clients do
// (hub/token.hpp: --endpoint, HF_ENDPOINT; HF_TOKEN, the token file), requests over services.http
// timed by services.clock, retried by the default policy with $KBUILD_HUB_TIMEOUT as the deadline of
// API requests, logged at debug level with the token redacted.

#include <memory>
#include <optional>
#include <string>

#include "kbuild/hub/client.hpp"
#include "kbuild/lock/variant_select.hpp"
#include "kbuild/usecase/services.hpp"

namespace kbuild::usecase {

struct HubAccess {
  std::unique_ptr<hub::HubClient> client;
  std::optional<hub::Token> token;
};

/// A Hub client for `endpoint` (or HF_ENDPOINT, or the Hub); retry notices go to the log (-v shows
/// every request instead).
HubAccess open_hub(Services& services, const std::optional<std::string>& endpoint);

/// The Hub user the configured token belongs to, asked once with a short deadline (3 s, no retry),
/// for use cases that only take it as a default (init's repository owner); nullopt without a token,
/// with HF_HUB_OFFLINE set, when the Hub does not answer in time or names no valid namespace.
std::optional<std::string> token_owner_quickly(Services& services);

/// What the `kernels` loader would see on this machine, from the Torch of `python`; an error (exit
/// code 3) when that interpreter has no usable Torch.
Result<lock::SystemFacts> probe_system_facts(Services& services, const std::string& python);

}  // namespace kbuild::usecase
