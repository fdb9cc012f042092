#pragma once
// The listener's defences against slow, greedy or malformed clients, as plain logic (connection.cpp
// applies them to sockets; tests drive them with their own clock):
//
//   - ReadBudget: per request, the request line and headers must arrive within `timeout` of the
//     request's first byte, and stay within a header count and size; the body must keep coming, at
//     least `progress_bytes` every `timeout`, and after `body_grace` at `min_body_rate` on average
//     (so a body trickled just above the pace, 64 KiB every 9 s, is cut off too); a response must
//     be taken at the same pace.
//   - ClientLimiter: at most N connections at once from one client address.
//   - body_limit: the largest body each kind of request may carry.
//   - forwarded_client: who a request is from when a trusted reverse proxy passed it on.

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/server/config.hpp"

namespace kbuild::server {

class ReadBudget {
 public:
  using Clock = std::chrono::steady_clock;

  struct Limits {
    std::chrono::milliseconds timeout{10'000};
    std::size_t max_header_count = 100;    ///< header lines, not counting the request line
    std::size_t max_header_bytes = 65536;  ///< request line and headers, line ends included
    std::size_t progress_bytes = 64 * 1024;
    std::uint64_t min_body_rate = 64 * 1024;  ///< bytes per second, on average over the whole body
    std::chrono::milliseconds body_grace{30'000};
  };

  explicit ReadBudget(Limits limits) : m_limits(limits) {}

  /// The first byte of a request is there: its line and headers are due within the timeout.
  void begin_request(Clock::time_point now);
  /// The headers are read: from now on reads are body reads.
  void begin_body(Clock::time_point now);
  /// Until when the next read may wait.
  Clock::time_point read_deadline() const;
  /// Counts bytes handed to the HTTP parser; false when they exceed a header limit.
  bool account_read(std::string_view bytes, Clock::time_point now);
  bool header_limit_exceeded() const { return m_header_limit_exceeded; }

  /// Until when the next write may wait (a write after reads starts a new pace).
  Clock::time_point write_deadline(Clock::time_point now);
  void account_write(std::size_t bytes, Clock::time_point now);

 private:
  Limits m_limits;
  bool m_in_headers = false;
  bool m_header_limit_exceeded = false;
  std::size_t m_header_bytes = 0, m_header_lines = 0, m_line_length = 0;
  Clock::time_point m_read_mark{}, m_write_mark{}, m_body_start{};
  std::size_t m_read_since_mark = 0, m_written_since_mark = 0;
  std::uint64_t m_body_bytes = 0;
  bool m_writing = false;
};

/// Counts connections per client address; thread-safe.
class ClientLimiter {
 public:
  explicit ClientLimiter(std::size_t per_client) : m_per_client(per_client) {}
  /// Takes a slot for `address`; false (and nothing taken) when it has all of its slots already.
  bool acquire(const std::string& address);
  void release(const std::string& address);
  std::size_t active(const std::string& address) const;
  /// Every address with its count now.
  std::map<std::string, std::size_t> snapshot() const;

 private:
  std::size_t m_per_client;
  mutable std::mutex m_mutex;
  std::map<std::string, std::size_t> m_active;
};

/// Counts invalid tokens per client address over a fixed window, so that tokens cannot be guessed at
/// thousands per second: past `allowed` failures in `window_ms`, the address is refused (429) until
/// its window ends. Addresses whose window ended are forgotten; at most `max_clients` are tracked (when
/// full, the oldest windows go first). Thread-safe.
class TokenFailureLimiter {
 public:
  TokenFailureLimiter(std::size_t allowed, std::int64_t window_ms, std::size_t max_clients = 4096)
      : m_allowed(allowed), m_window_ms(window_ms), m_max_clients(max_clients) {}
  /// Milliseconds until `address` may try again (0: it may now).
  std::int64_t retry_after_ms(const std::string& address, std::int64_t now_ms) const;
  /// Records one invalid token from `address`.
  void failed(const std::string& address, std::int64_t now_ms);

 private:
  struct Window {
    std::int64_t start_ms = 0;
    std::size_t failures = 0;
  };
  std::size_t m_allowed;
  std::int64_t m_window_ms;
  std::size_t m_max_clients;
  mutable std::mutex m_mutex;
  std::map<std::string, Window> m_windows;
};

/// Why a request must be refused (400) before its body is read, or nullopt: framings that proxies and
/// servers may read differently (several Content-Length headers, Content-Length with
/// Transfer-Encoding, a length that is not plain digits), a body on GET or HEAD, and
/// multipart/form-data (httplib would parse it itself). `content_lengths`: every Content-Length value.
std::optional<std::string> framing_problem(std::string_view method, const std::vector<std::string>& content_lengths,
                                           bool transfer_encoding, std::string_view content_type);

/// The largest body of a request (before it is read): LFS uploads (PUT under /lfs/upload/) up to
/// max_lfs_object, commits (POST /api/{T}/{id}/commit/...) up to max_commit_body, anything else up to
/// max_json_body.
std::uint64_t body_limit(std::string_view method, std::string_view target, const Limits& limits);

/// The client a request is attributed to (token throttling, the access log). `peer` is the address
/// the connection comes from; when it is one of `trusted_proxies` (config.toml [server]
/// trusted-proxies, e.g. an nginx in front), X-Forwarded-For is read from the right, skipping the
/// trusted hops, and the first other address is the client. A missing, empty or malformed entry stops
/// the walk at the last trusted hop: what a client wrote to the left of its proxy is never believed.
std::string forwarded_client(const std::string& peer, std::string_view x_forwarded_for,
                             const std::vector<std::string>& trusted_proxies);

/// The textual form inet_ntop gives `address` (IPv4 or IPv6, "::ffff:1.2.3.4" as "1.2.3.4"), or
/// nullopt when it is no IP address.
std::optional<std::string> canonical_ip(std::string_view address);

}  // namespace kbuild::server
