#pragma once
// Private to listener.cpp: the cpp-httplib server that serves each connection through a GuardedStream
// (connection.cpp) instead of httplib's own socket stream, so that the limits of guard.hpp hold:
// read deadlines and header limits per request, a minimum pace for bodies and responses, and a cap on
// concurrent connections per client address. Keep-alive works as in httplib (keep-alive timeout, at
// most keep_alive_max_count requests per connection), and a response carrying "Connection: close"
// really closes the connection (httplib 0.11 would read on).
//
// Limits that httplib 0.11 (a compiled library) fixes: request line at most 8192 bytes (longer: 414),
// each header line at most 8192 bytes (longer: 400); the listen backlog is 5.

#include <httplib.h>

#include <atomic>
#include <cstddef>
#include <string>

#include "kbuild/server/guard.hpp"

namespace kbuild::server {

struct ConnectionLimits {
  ReadBudget::Limits read;
  std::size_t max_connections_per_client = 16;
};

/// What the hooks of the server (error and post-routing handlers) learn about the connection whose
/// request the calling thread is handling.
struct ConnectionState {
  bool header_limit_exceeded = false;  ///< the request's headers were too many or too long
  bool read_timed_out = false;         ///< the request did not arrive in time
  bool close_after_response = false;   ///< the answer says "Connection: close"
  /// The answer went out before the request's body was read (Router::admit): before closing, the
  /// connection is half-closed and what the client still sends is read and dropped for a moment, so
  /// that closing with unread data does not reset the connection and lose the answer.
  bool drain_before_close = false;
};

class GuardedServer : public httplib::Server {
 public:
  explicit GuardedServer(ConnectionLimits limits) : m_limits(limits), m_clients(limits.max_connections_per_client) {}

  /// The state of the connection the calling worker thread serves; nullptr outside of one.
  static ConnectionState* current();

 private:
  bool process_and_close_socket(socket_t sock) override;
  /// Answers 429 on a connection over its client's limit, then closes it.
  static void refuse(socket_t sock);

  ConnectionLimits m_limits;
  ClientLimiter m_clients;
};

}  // namespace kbuild::server
