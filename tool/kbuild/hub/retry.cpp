#include "kbuild/hub/retry.hpp"

#include "kbuild/util/interrupt.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <regex>
#include <string_view>

namespace kbuild::hub {

std::optional<double> server_requested_wait(const net::HttpResponse& response) {
  // Seconds as digits only; more than 9 digits (over 30 years) is "forever", not a number to parse.
  auto seconds = [](std::string_view digits) -> std::optional<double> {
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
    digits.remove_prefix(std::min(digits.find_first_not_of('0'), digits.size() - 1));
    if (digits.size() > 9) return std::numeric_limits<double>::infinity();
    return static_cast<double>(std::stol(std::string(digits)));
  };
  if (response.status == 429) {
    if (auto limit = response.headers.get("ratelimit")) {
      static const std::regex k_reset(R"(t=(\d+))");
      std::smatch match;
      if (std::regex_search(*limit, match, k_reset)) return seconds(match[1].str());
    }
  }
  if (auto after = response.headers.get("retry-after")) return seconds(*after);
  return std::nullopt;
}

bool retryable_status(int status) {
  return status == 408 || status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
}

std::string long_wait_hint(const RetryPolicy& policy, const net::HttpResponse& response) {
  if (!retryable_status(response.status)) return "";
  auto wait = server_requested_wait(response);
  if (!wait || *wait <= policy.max_server_wait_seconds) return "";
  std::string asked = std::isinf(*wait) ? "forever" : fmt::format("{:.0f} s", *wait);
  return fmt::format(
      "the server asks to wait {} before the next request (kbuild waits at most {:.0f} s); try again "
      "later",
      asked, policy.max_server_wait_seconds);
}

std::optional<double> retry_delay(const RetryPolicy& policy, int attempt,
                                  const std::expected<net::HttpResponse, net::TransportError>& outcome, bool deadline) {
  if (util::interrupted()) return std::nullopt;  // a transfer stopped by Ctrl-C is not a fault to retry
  if (attempt >= policy.max_retries) return std::nullopt;
  double backoff = std::min(policy.max_seconds, policy.base_seconds * std::pow(2.0, attempt));
  if (!outcome) {
    if (outcome.error().connect_failed && attempt >= policy.max_connect_retries) return std::nullopt;
    if (outcome.error().timeout && deadline && attempt >= policy.max_timeout_retries) return std::nullopt;
    return backoff;
  }
  if (!retryable_status(outcome->status)) return std::nullopt;
  if (auto wait = server_requested_wait(*outcome)) {
    if (!(*wait <= policy.max_server_wait_seconds)) return std::nullopt;
    return *wait + 1.0;
  }
  return backoff;
}

}  // namespace kbuild::hub
