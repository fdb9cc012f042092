#pragma once
// HTTP messages shared by the Hub client (hub/) and the registry (server/): the client's transport
// sends an HttpRequest and gets an HttpResponse; the server's router maps one to the other. Tests
// can connect the two in-process, without sockets.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "kbuild/util/result.hpp"

namespace kbuild::net {

/// Header names compare case-insensitively; stored lowercased.
class Headers {
 public:
  void set(std::string_view name, std::string value);
  std::optional<std::string> get(std::string_view name) const;
  bool has(std::string_view name) const { return get(name).has_value(); }
  const std::map<std::string, std::string>& all() const { return m_values; }

 private:
  std::map<std::string, std::string> m_values;
};

struct HttpRequest {
  std::string method = "GET";
  std::string url;  ///< absolute for the client ("http://host:port/api/..."); for the router, the target ("/api/...?q")
  Headers headers;
  std::string body;
  /// Upload the file instead of `body`, streamed (never held in memory), optionally a byte range.
  std::optional<std::filesystem::path> body_file;
  std::uint64_t body_offset = 0;
  std::optional<std::uint64_t> body_length;
  double timeout_seconds = 0;  ///< 0: none
  /// For the registry: the client's address as the listener saw it (empty where unknown, e.g. tests).
  std::string client;
  /// When set, a 2xx response body is written to this file (created or truncated) instead of
  /// HttpResponse::body; other responses still fill `body`.
  std::optional<std::filesystem::path> response_file;
  /// When not 0: a response body longer than this is not received; the transfer stops and the
  /// response has too_large set.
  std::uint64_t max_response_bytes = 0;
  /// Called with (bytes sent, bytes total) while the body is uploaded.
  std::function<void(std::uint64_t, std::uint64_t)> on_upload_progress;
};

struct HttpResponse {
  int status = 0;
  Headers headers;
  std::string body;
  /// With HttpRequest::response_file and a 2xx answer: the bytes written to that file (the body is
  /// then empty).
  std::uint64_t file_bytes = 0;
  /// The body passed HttpRequest::max_response_bytes and the transfer was stopped (the body or
  /// file holds only part of it).
  bool too_large = false;
};

/// A failure to get any response (connection refused, reset, timeout). Retryable by nature.
struct TransportError {
  std::string message;
  bool timeout = false;
  /// No connection could be made at all (refused, unresolvable host): retried only briefly, since
  /// it usually means a wrong endpoint or no network rather than a passing fault.
  bool connect_failed = false;
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  /// Sends the request; error only when no HTTP response arrived (see TransportError).
  virtual std::expected<HttpResponse, TransportError> send(const HttpRequest& request) = 0;
};

/// Percent-encodes everything except unreserved characters; with keep_slash, '/' is kept too.
std::string url_encode(std::string_view text, bool keep_slash = false);
/// Decodes %XX escapes ('+' is left alone); error on a malformed escape.
Result<std::string> url_decode(std::string_view text);

/// What stays of an upload URL across the answers that hand it out again: the URL without its
/// credentials and expiry (query parameters `token`, `signature`, `expires`, `expiration`, `X-Amz-*`,
/// any case), which a server may mint afresh for the same upload session.
std::string url_without_credentials(std::string_view url);

}  // namespace kbuild::net
