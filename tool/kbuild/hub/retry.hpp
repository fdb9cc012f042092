#pragma once
// When to send a Hub request again, as the official clients do: on 408, 429, 500, 502, 503, 504
// and on transport failures (timeouts, resets, refused connections); at most `max_retries` extra
// attempts, waiting 1, 2, 4, 8, 8 s; a 429 with "RateLimit: ...;t=<s>" or a numeric Retry-After
// waits that many seconds plus one instead, unless that is more than `max_server_wait_seconds`:
// then the answer is reported at once rather than hanging on a server's say-so. A connection that
// cannot be made at all (refused, unknown host) is retried `max_connect_retries` times only
// (1 + 2 s), so that a wrong endpoint or no network is reported in seconds, not after half a minute.

#include <expected>
#include <optional>
#include <string>

#include "kbuild/net/http.hpp"

namespace kbuild::hub {

struct RetryPolicy {
  int max_retries = 5;
  int max_connect_retries = 2;
  double base_seconds = 1.0;
  double max_seconds = 8.0;
  double max_server_wait_seconds = 600.0;  // the Hub's rate-limit windows are 5 minutes
  /// The deadline of one GET or HEAD of the API (answer included; transfers of files have none, a
  /// stalled one is cut off by curl's low-speed limit); $KBUILD_HUB_TIMEOUT. A Hub that accepts
  /// connections but never answers costs two of these and a second between them: exit 4 in ~21 s.
  double request_timeout_seconds = 10.0;
  int max_timeout_retries = 1;
};

/// How long the server asks the client to wait before asking again: a 429's "RateLimit: ...;t=<s>",
/// else a numeric Retry-After (an HTTP date is ignored, as the official clients do); nullopt when it
/// says nothing. A number too long to read is +infinity.
std::optional<double> server_requested_wait(const net::HttpResponse& response);

/// Whether an answer with this status is sent again (408, 429, 500, 502, 503, 504).
bool retryable_status(int status);

/// The hint for an answer of a retryable status the client stopped retrying because the server
/// asked for a longer wait than `policy` allows ("the server asks to wait 3600 s ..."); else empty.
std::string long_wait_hint(const RetryPolicy& policy, const net::HttpResponse& response);

/// The wait before attempt `attempt + 1` (attempt counts from 0), or nullopt to stop and report:
/// never after a signal (util/interrupt.hpp). `deadline`: the request had request_timeout_seconds,
/// so a timeout is retried max_timeout_retries times only (a stalled file transfer, cut off by the
/// low-speed limit, is retried like any transport fault).
std::optional<double> retry_delay(const RetryPolicy& policy, int attempt,
                                  const std::expected<net::HttpResponse, net::TransportError>& outcome,
                                  bool deadline = false);

}  // namespace kbuild::hub
