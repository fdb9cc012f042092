#pragma once
// Private to connection.cpp: kept-alive connections between two requests, held by one epoll thread
// instead of a worker each. A connection is parked once it has been idle a moment while others wait
// for a worker; when its next request arrives (or its peer closes) it is handed back to be served
// again; when it stays idle past its keep-alive deadline, or the server stops, it is ended. So 1,000
// idle readers cost 1,000 sockets, not 1,000 threads, and never starve a client with work to do.

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace kbuild::server {

/// What a connection carries from one request to the next.
struct IdleConnection {
  int sock = -1;
  std::string address;  ///< the peer's, as the per-client limit counts it
  bool proxy = false;   ///< from a trusted proxy: not counted by the per-client limit
  std::size_t requests_left = 0;
  std::chrono::steady_clock::time_point idle_until;  ///< ended when no request has begun by then
};

class IdleConnections {
 public:
  using Handler = std::function<void(IdleConnection)>;
  /// `ready`: a parked connection became readable; `expired`: it is to be ended. Both are called on
  /// the epoll thread (or on the caller's, for a park() after stop()), never with a lock held.
  IdleConnections(Handler ready, Handler expired);
  ~IdleConnections();
  IdleConnections(const IdleConnections&) = delete;
  IdleConnections& operator=(const IdleConnections&) = delete;

  /// Holds `connection` until it is readable or expired. Starts the epoll thread on first use.
  void park(IdleConnection connection);
  /// Ends every parked connection and the thread; later parks expire at once.
  void stop();
  /// Ends one parked connection to make room for a new one: of the address `weight` ranks highest
  /// (the one holding the most connections), the one parked longest. False when none is parked.
  bool evict_one(const std::function<std::size_t(const std::string&)>& weight);
  std::size_t parked() const;

 private:
  void run();
  /// Takes the connections whose deadline passed (or all of them) out of the epoll set.
  std::map<int, IdleConnection> take_expired(bool all);

  Handler m_ready, m_expired;
  int m_epoll = -1;
  int m_wake = -1;  ///< an eventfd that interrupts epoll_wait for stop()
  mutable std::mutex m_mutex;
  std::map<int, IdleConnection> m_parked;  ///< by socket
  std::thread m_thread;
  bool m_stopping = false;
};

}  // namespace kbuild::server
