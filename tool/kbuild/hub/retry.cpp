#include "kbuild/hub/retry.hpp"

#include <algorithm>
#include <cmath>
#include <regex>

namespace kbuild::hub {

std::optional<double> retry_delay(const RetryPolicy& policy, int attempt,
                                  const std::expected<HttpResponse, TransportError>& outcome) {
  if (attempt >= policy.max_retries) return std::nullopt;
  double backoff = std::min(policy.max_seconds, policy.base_seconds * std::pow(2.0, attempt));
  if (!outcome) {
    if (outcome.error().connect_failed && attempt >= policy.max_connect_retries) return std::nullopt;
    return backoff;
  }
  int status = outcome->status;
  bool retryable = status == 408 || status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
  if (!retryable) return std::nullopt;
  auto server_wait = [&](double seconds) -> std::optional<double> {
    if (!(seconds <= policy.max_server_wait_seconds)) return std::nullopt;
    return seconds + 1.0;
  };
  if (status == 429) {
    if (auto limit = outcome->headers.get("ratelimit")) {
      static const std::regex k_reset(R"(t=(\d+))");
      std::smatch match;
      if (std::regex_search(*limit, match, k_reset)) return server_wait(std::stod(match[1]));
    }
  }
  if (auto after = outcome->headers.get("retry-after")) {
    try {
      size_t used = 0;
      double seconds = std::stod(*after, &used);
      if (used == after->size() && seconds >= 0) return server_wait(seconds);
    } catch (const std::exception&) {
      // An HTTP date: ignored, as the official clients do.
    }
  }
  return backoff;
}

}  // namespace kbuild::hub
