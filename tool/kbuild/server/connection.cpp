// The connections of the registry's HTTP server (connection.hpp); with listener.cpp the only
// translation units that include cpp-httplib.
#include "kbuild/server/connection.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "kbuild/util/log.hpp"

namespace kbuild::server {

namespace {

using Clock = ReadBudget::Clock;

thread_local ConnectionState* t_current = nullptr;

/// The address and port of a socket's peer (`peer`) or own end, IPv4-mapped IPv6 addresses as IPv4.
bool socket_address(socket_t sock, bool peer, std::string& ip, int& port) {
  sockaddr_storage storage{};
  socklen_t length = sizeof storage;
  auto* address = reinterpret_cast<sockaddr*>(&storage);
  if ((peer ? ::getpeername(sock, address, &length) : ::getsockname(sock, address, &length)) != 0) return false;
  char text[INET6_ADDRSTRLEN] = {};
  if (storage.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&storage);
    ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
    port = ntohs(v4->sin_port);
  } else if (storage.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&storage);
    if (IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr))
      ::inet_ntop(AF_INET, &v6->sin6_addr.s6_addr[12], text, sizeof text);
    else
      ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
    port = ntohs(v6->sin6_port);
  } else {
    return false;
  }
  ip = text;
  return true;
}

/// A connection's byte stream for httplib, with the deadlines and limits of a ReadBudget. Reads are
/// buffered (httplib reads headers one byte at a time); once a read deadline passes or a header limit
/// is hit every later read fails (and the connection closes after the answer).
class GuardedStream : public httplib::Stream {
 public:
  GuardedStream(socket_t sock, ReadBudget::Limits limits, const std::atomic<socket_t>& server_socket,
                ConnectionState& state)
      : m_sock(sock), m_budget(limits), m_server_socket(server_socket), m_state(state) {}

  bool is_readable() const override { return m_offset < m_length || wait(POLLIN, m_budget.read_deadline()); }
  bool is_writable() const override { return !m_write_failed && wait(POLLOUT, m_budget.write_deadline(Clock::now())); }

  ssize_t read(char* ptr, size_t size) override {
    if (m_read_failed) return -1;
    if (m_offset == m_length) {
      if (!wait(POLLIN, m_budget.read_deadline())) {
        m_state.read_timed_out = m_server_socket != INVALID_SOCKET;
        return fail_read();
      }
      ssize_t got;
      do {
        got = ::recv(m_sock, m_buffer.data(), m_buffer.size(), 0);
      } while (got < 0 && errno == EINTR);
      if (got <= 0) return fail_read(got);
      m_offset = 0;
      m_length = static_cast<size_t>(got);
    }
    size_t take = std::min(size, m_length - m_offset);
    if (!m_budget.account_read(std::string_view(m_buffer.data() + m_offset, take), Clock::now())) {
      m_state.header_limit_exceeded = true;
      return fail_read();
    }
    std::memcpy(ptr, m_buffer.data() + m_offset, take);
    m_offset += take;
    return static_cast<ssize_t>(take);
  }

  // Writes still work after a read failed, so that the error answer (408, 431) goes out.
  ssize_t write(const char* ptr, size_t size) override {
    if (m_write_failed || !wait(POLLOUT, m_budget.write_deadline(Clock::now()))) return m_write_failed = true, -1;
    ssize_t sent;
    do {
      sent = ::send(m_sock, ptr, size, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    if (sent < 0) return m_write_failed = true, -1;
    m_budget.account_write(static_cast<size_t>(sent), Clock::now());
    return sent;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { socket_address(m_sock, true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { socket_address(m_sock, false, ip, port); }
  socket_t socket() const override { return m_sock; }

  enum class Next { request, end, park };
  /// Waits until `deadline` for the next request; once `grace` has passed and `yield()` says others
  /// wait for a worker, answers `park` (only with nothing buffered: the stream's state is then just
  /// the socket).
  Next wait_for_request(Clock::time_point deadline, std::chrono::milliseconds grace,
                        const std::function<bool()>& yield) const {
    if (broken()) return Next::end;
    // A request that is there already is served whatever the idle deadline says: a parked connection
    // resumed for it may have waited for a worker past that deadline.
    if (m_offset < m_length || readable_now()) return Next::request;
    const auto patient_until = Clock::now() + grace;
    while (Clock::now() < deadline) {
      if (wait(POLLIN, std::min(deadline, Clock::now() + std::chrono::milliseconds(10)))) return Next::request;
      if (m_server_socket == INVALID_SOCKET) return Next::end;
      if (Clock::now() >= patient_until && yield()) return Next::park;
    }
    return Next::end;
  }
  void begin_request() { m_budget.begin_request(Clock::now()); }
  void begin_body() { m_budget.begin_body(Clock::now()); }
  bool broken() const { return m_read_failed || m_write_failed; }

 private:
  ssize_t fail_read(ssize_t result = -1) {
    m_read_failed = true;
    return result;
  }

  bool readable_now() const {
    pollfd fd{m_sock, POLLIN, 0};
    return ::poll(&fd, 1, 0) > 0 && (fd.revents & POLLIN);
  }

  /// Polls for `events` until `deadline`, in slices, giving up early when the server stops.
  bool wait(short events, Clock::time_point deadline) const {
    while (m_server_socket != INVALID_SOCKET) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return false;
      pollfd fd{m_sock, events, 0};
      int ready = ::poll(&fd, 1, static_cast<int>(std::min<long long>(left, 100)));
      if (ready > 0) return true;
      if (ready < 0 && errno != EINTR) return false;
    }
    return false;
  }

  socket_t m_sock;
  mutable ReadBudget m_budget;
  const std::atomic<socket_t>& m_server_socket;
  ConnectionState& m_state;
  std::array<char, 16 * 1024> m_buffer{};
  size_t m_offset = 0, m_length = 0;
  bool m_read_failed = false, m_write_failed = false;
};

}  // namespace

ConnectionState* GuardedServer::current() { return t_current; }

void GuardedServer::refuse(socket_t sock, int status, const std::string& code, const std::string& message) {
  const std::string body = "{\"error\":\"" + message + "\"}";
  const std::string response =
      "HTTP/1.1 " + std::to_string(status) + (status == 429 ? " Too Many Requests" : " Service Unavailable") +
      "\r\nContent-Type: application/json\r\nX-Error-Code: " + code + "\r\nX-Error-Message: " + message +
      "\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  // Best effort and without waiting (the client holds enough workers already): the answer, the end of
  // our side, and what the client sent so far is read, so that closing does not reset the connection.
  (void)::send(sock, response.data(), response.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::shutdown(sock, SHUT_WR);
  char drain[4096];
  while (::recv(sock, drain, sizeof drain, MSG_DONTWAIT) > 0) {
  }
}

namespace {

/// Ends our side and reads what the client still sends, for at most a second or 16 MiB: a client
/// that is still writing a refused body then gets the answer instead of a connection reset.
void drain_briefly(socket_t sock) {
  ::shutdown(sock, SHUT_WR);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  std::size_t left = 16u << 20;
  char buffer[65536];
  while (left > 0) {
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) break;
    pollfd readable{sock, POLLIN, 0};
    int wait_ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count());
    if (::poll(&readable, 1, std::max(wait_ms, 1)) <= 0) break;
    ssize_t n = ::recv(sock, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    left -= std::min<std::size_t>(left, static_cast<std::size_t>(n));
  }
}

}  // namespace

bool GuardedServer::trusted_proxy(const std::string& address) const {
  const auto& trusted = m_limits.trusted_proxies;
  return std::find(trusted.begin(), trusted.end(), canonical_ip(address).value_or(address)) != trusted.end();
}

GuardedServer::GuardedServer(ConnectionLimits limits)
    : m_limits(limits),
      m_clients(limits.max_connections_per_client),
      m_idle([this](IdleConnection c) { resume(std::move(c)); }, [this](IdleConnection c) { end(c); }) {
  new_task_queue = [this] {
    auto* pool = new CountingThreadPool(m_limits.workers, m_waiting, [this] { detach_pool(); });
    std::lock_guard lock(m_pool_mutex);
    m_pool = pool;
    return pool;
  };
}

GuardedServer::~GuardedServer() { m_idle.stop(); }

// Called as listen ends: parked connections are ended (the server is stopping) and none is resumed
// into the pool httplib is about to destroy; connections still being served finish on their workers.
void GuardedServer::detach_pool() {
  {
    std::lock_guard lock(m_pool_mutex);
    m_pool = nullptr;
  }
  m_idle.stop();
}

void GuardedServer::resume(IdleConnection connection) {
  std::unique_lock lock(m_pool_mutex);
  if (m_pool && svr_sock_ != INVALID_SOCKET) {
    m_pool->enqueue([this, connection = std::move(connection)]() mutable { serve(std::move(connection)); });
    return;
  }
  lock.unlock();
  end(connection);
}

void GuardedServer::end(const IdleConnection& connection) {
  if (!connection.proxy) m_clients.release(connection.address);
  ::shutdown(connection.sock, SHUT_RDWR);
  ::close(connection.sock);
  --m_open;
}

bool GuardedServer::should_yield() const {
  if (m_waiting > 0) return true;
  std::lock_guard lock(m_pool_mutex);
  return m_pool && m_pool->extra_threads() > 0;
}

// The connection's place is taken from the parked idle connection of the address that holds the most
// (fair use of the descriptors: a host with thousands of idle connections gives first), the oldest.
bool GuardedServer::make_room() {
  const auto counts = m_clients.snapshot();
  return m_idle.evict_one([&counts](const std::string& address) {
    auto it = counts.find(address);
    return it == counts.end() ? std::size_t{0} : it->second;
  });
}

bool GuardedServer::process_and_close_socket(socket_t sock) {
  IdleConnection connection{sock, "", false, keep_alive_max_count_, {}};
  int port = 0;
  socket_address(sock, true, connection.address, port);
  connection.proxy = trusted_proxy(connection.address);
  auto refuse_and_close = [&](int status, const std::string& code, const std::string& message) {
    refuse(sock, status, code, message);
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    --m_open;
    return false;
  };
  if (++m_open > m_limits.max_connections && m_limits.max_connections > 0 && !make_room()) {
    util::log::debug("refused a connection from " + connection.address + ": the registry holds " +
                     std::to_string(m_limits.max_connections) + " connections and none is idle");
    return refuse_and_close(503, "TooManyConnections", "the registry is at its connection limit; try again later");
  }
  if (!connection.proxy && !m_clients.acquire(connection.address)) {
    util::log::debug("refused a connection from " + connection.address + ": it has " +
                     std::to_string(m_limits.max_connections_per_client) + " open already");
    return refuse_and_close(429, "TooManyConnections", "too many connections from this address; try again later");
  }
  connection.idle_until = Clock::now() + std::chrono::seconds(keep_alive_timeout_sec_);
  serve(std::move(connection));
  return true;
}

void GuardedServer::serve(IdleConnection connection) {
  ConnectionState state;
  state.from_trusted_address = connection.proxy;
  state.count_as_client = [this, &connection, &state] {
    if (!connection.proxy) return true;
    if (!m_clients.acquire(connection.address)) return false;
    connection.proxy = state.from_trusted_address = false;  // end() gives the slot back
    return true;
  };
  GuardedStream stream(connection.sock, m_limits.read, svr_sock_, state);
  t_current = &state;
  bool park = false;
  for (; connection.requests_left > 0 && svr_sock_ != INVALID_SOCKET; --connection.requests_left) {
    auto next = stream.wait_for_request(connection.idle_until, m_limits.idle_grace, [this] { return should_yield(); });
    if (next != GuardedStream::Next::request) {
      park = next == GuardedStream::Next::park;
      break;
    }
    stream.begin_request();
    bool closed = false;
    bool served =
        process_request(stream, connection.requests_left == 1, closed, [&](httplib::Request&) { stream.begin_body(); });
    if (!served || closed || state.close_after_response || stream.broken()) break;
    connection.idle_until = Clock::now() + std::chrono::seconds(keep_alive_timeout_sec_);
  }
  t_current = nullptr;
  if (park) return m_idle.park(std::move(connection));
  if (state.drain_before_close) drain_briefly(connection.sock);
  end(connection);
}

}  // namespace kbuild::server
