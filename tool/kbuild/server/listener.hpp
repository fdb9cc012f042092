#pragma once
// The socket side of `kbuild hub serve`: a cpp-httplib server that turns each HTTP request into a
// net::HttpRequest for Router::route() and writes the Reply back. HEAD answers carry the headers
// (Content-Length included) without a body; file bodies are streamed from the blob store. Request
// bodies above 8 MiB are spooled to a file in the store's temp dir instead of memory, and bodies
// above the configured limits (guard.hpp: body_limit) are refused with 413 before they are read.
//
// Defences ([limits] of config.hpp; connection.hpp and guard.hpp apply them), each answered in the
// registry's error format and followed by closing the connection:
//
//   400 BadRequest                   duplicate Content-Length, Content-Length with Transfer-Encoding,
//                                    a body on GET/HEAD, multipart/form-data, malformed requests
//   408 RequestTimeout               request line and headers not in within read-timeout-seconds of the
//                                    first byte; a body slower than 64 KiB per read-timeout-seconds
//                                    (the connection is cut, the worker freed)
//   429 TooManyConnections           more than max-connections-per-client connections from one address
//   431 RequestHeaderFieldsTooLarge  more than max-header-count headers or max-header-bytes
//
// 64 worker threads serve connections (one each; a connection idle between requests gives its worker
// up when others wait and is parked on an epoll thread until its next request, connection.hpp); a
// connection serves up to 1,000 requests and may stay idle 5 s; the listen backlog is 1024. The port is bound
// exclusively (SO_REUSEADDR only, never SO_REUSEPORT): a second server on a used port fails with ExitCode::network.
//
// Access log (optional), one line per request, appended and flushed:
//   <ISO 8601 time> <METHOD> <path without query> <status> <response body bytes> <client address>
// where the client is the one a trusted proxy's X-Forwarded-For names (guard.hpp: forwarded_client),
// for requests that carry the proxy's secret (X-Kbuild-Proxy-Secret, removed before routing); a request
// from a proxy's address without it is the host's own client: its X-Forwarded-For is ignored and its
// connection counts against max-connections-per-client from then on (429 over it).

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "kbuild/server/config.hpp"
#include "kbuild/server/router.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::server {

/// cpp-httplib's version, as compiled against (`kbuild --version`).
std::string httplib_library_version();

struct ListenerOptions {
  std::string host = "127.0.0.1";
  int port = 0;                              ///< 0: any free port
  std::filesystem::path access_log;          ///< empty: no log
  std::filesystem::path spool_dir;           ///< where large request bodies go (Store::temp_dir())
  Limits limits;                             ///< body size limits, as in the router's Config
  std::vector<std::string> trusted_proxies;  ///< config.toml [server] trusted-proxies
  std::string proxy_secret;                  ///< config.toml [server] proxy-secret
  const util::Clock* clock = nullptr;        ///< access-log timestamps; null: the real clock
};

class Listener {
 public:
  /// Binds the socket (so port() is known before serving). Error if the address is unusable.
  static Result<std::unique_ptr<Listener>> bind(const ListenerOptions& options);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  int port() const;
  /// Serves with `router` until stop() is called from another thread; blocks.
  Result<void> serve(Router& router);
  /// Makes serve() return; safe from any thread.
  void stop();

 private:
  struct Impl;
  explicit Listener(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

/// Serves on a background thread until SIGINT or SIGTERM arrives (both are blocked in the calling
/// thread and in every thread started meanwhile), then stops and returns.
Result<void> serve_until_signal(Listener& listener, Router& router);

}  // namespace kbuild::server
