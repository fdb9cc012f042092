#pragma once
// Private to listener.cpp: the cpp-httplib server that serves each connection through a GuardedStream
// (connection.cpp) instead of httplib's own socket stream, so that the limits of guard.hpp hold:
// read deadlines and header limits per request, a minimum pace for bodies and responses, and a cap on
// concurrent connections per client address. Keep-alive works as in httplib (keep-alive timeout, at
// most keep_alive_max_count requests per connection), and a response carrying "Connection: close"
// really closes the connection (httplib 0.11 would read on).
//
// A connection waiting for its next request gives its worker up once it has been idle a moment while
// accepted connections wait for a worker: it is parked (idle_connections.hpp), still open, and served
// again by the next free worker when its request arrives. Idle keep-alive never starves active clients
// and costs idle clients no reconnection.
// Connections from trusted proxies (config.toml [server] trusted-proxies) carry many clients and are
// exempt from the per-client cap.
//
// Limits that httplib 0.11 (a compiled library) fixes: request line at most 8192 bytes (longer: 414),
// each header line at most 8192 bytes (longer: 400). Its listen backlog of 5 is widened after binding
// (widen_backlog).

// httplib.h uses std::exception_ptr without including <exception>; libc++ (the wheel) needs it first.
#include <exception>

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "kbuild/server/guard.hpp"
#include "kbuild/server/idle_connections.hpp"
#include "kbuild/server/worker_pool.hpp"

namespace kbuild::server {

struct ConnectionLimits {
  ReadBudget::Limits read;
  std::size_t max_connections_per_client = 16;
  std::vector<std::string> trusted_proxies;  ///< canonical addresses exempt from the per-client cap
  WorkerPool::Limits workers;
  /// Connections open at once (0: no cap), below the descriptor limit: at the cap, a new connection
  /// takes the place of a parked idle one (IdleConnections::evict_one), else it is refused with 503.
  std::size_t max_connections = 0;
  /// How long a connection between requests keeps its worker while others wait for one.
  std::chrono::milliseconds idle_grace{20};
};

/// httplib's task queue: a WorkerPool (worker_pool.hpp), counting connections accepted (or resumed)
/// and not yet taken by a worker. `on_shutdown` runs first when httplib shuts the pool down (at the
/// end of listen, before the pool is destroyed), so that nothing is enqueued into it afterwards.
class CountingThreadPool final : public httplib::TaskQueue {
 public:
  CountingThreadPool(WorkerPool::Limits limits, std::atomic<std::size_t>& waiting, std::function<void()> on_shutdown)
      : m_pool(limits), m_waiting(waiting), m_on_shutdown(std::move(on_shutdown)) {}
  /// Threads running beyond the pool's base (lock-free).
  std::size_t extra_threads() const {
    std::size_t running = m_pool.threads();
    return running > m_pool.base() ? running - m_pool.base() : 0;
  }
  void enqueue(std::function<void()> task) override {
    ++m_waiting;
    bool queued = m_pool.enqueue([this, task = std::move(task)] {
      --m_waiting;
      task();
    });
    if (!queued) --m_waiting;
  }
  void shutdown() override {
    m_on_shutdown();
    m_pool.shutdown();
  }

 private:
  WorkerPool m_pool;
  std::atomic<std::size_t>& m_waiting;
  std::function<void()> m_on_shutdown;
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
  /// The connection comes from a trusted proxy's address (so far exempt from the per-client cap).
  bool from_trusted_address = false;
  /// Makes the connection count against its address's per-client cap from now on (a request without
  /// the proxy's secret: the host's own client); false when the address has no slot left.
  std::function<bool()> count_as_client = [] { return true; };
};

class GuardedServer : public httplib::Server {
 public:
  explicit GuardedServer(ConnectionLimits limits);
  ~GuardedServer() override;
  /// After binding: a listen backlog for bursts of connections (httplib's is 5; overflowing it shows
  /// clients resets and retransmission delays). Linux applies a second listen() to a listening socket.
  void widen_backlog(int backlog) { ::listen(svr_sock_, backlog); }

  /// The state of the connection the calling worker thread serves; nullptr outside of one.
  static ConnectionState* current();

 private:
  bool process_and_close_socket(socket_t sock) override;
  /// Serves requests on `connection` until it closes (ended here) or is parked idle.
  void serve(IdleConnection connection);
  /// A parked connection's next request arrived: back to the queue of the workers.
  void resume(IdleConnection connection);
  /// Closes the connection and gives its per-client slot back.
  void end(const IdleConnection& connection);
  void detach_pool();
  /// Answers `status` (429 over the client's limit, 503 at the connection cap) and ends our side.
  static void refuse(socket_t sock, int status, const std::string& code, const std::string& message);
  /// At the connection cap: ends a parked idle connection for a new one; false when none can go.
  bool make_room();
  /// Whether a connection idle between requests should give its worker up: others wait for one, or
  /// the pool runs threads beyond its base (extra threads are for work, not for waiting).
  bool should_yield() const;

  bool trusted_proxy(const std::string& address) const;

  ConnectionLimits m_limits;
  ClientLimiter m_clients;
  std::atomic<std::size_t> m_waiting{0};  ///< accepted connections no worker has taken yet
  std::atomic<std::size_t> m_open{0};     ///< connections accepted and not ended
  mutable std::mutex m_pool_mutex;
  CountingThreadPool* m_pool = nullptr;  ///< while listening; resumed connections go there
  IdleConnections m_idle;
};

}  // namespace kbuild::server
