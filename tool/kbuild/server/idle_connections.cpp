#include "kbuild/server/idle_connections.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <vector>

namespace kbuild::server {

IdleConnections::IdleConnections(Handler ready, Handler expired)
    : m_ready(std::move(ready)), m_expired(std::move(expired)) {}

IdleConnections::~IdleConnections() {
  stop();
  if (m_epoll >= 0) ::close(m_epoll);
  if (m_wake >= 0) ::close(m_wake);
}

void IdleConnections::park(IdleConnection connection) {
  {
    std::lock_guard lock(m_mutex);
    if (!m_stopping && m_epoll < 0) {
      m_epoll = ::epoll_create1(EPOLL_CLOEXEC);
      m_wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
      if (m_epoll >= 0 && m_wake >= 0) {
        epoll_event wake{};
        wake.events = EPOLLIN;
        wake.data.fd = m_wake;
        ::epoll_ctl(m_epoll, EPOLL_CTL_ADD, m_wake, &wake);
      }
    }
    if (!m_stopping && m_epoll >= 0 && !m_thread.joinable()) m_thread = std::thread([this] { run(); });
    epoll_event event{};
    event.events = EPOLLIN | EPOLLRDHUP;
    event.data.fd = connection.sock;
    if (!m_stopping && m_thread.joinable() && ::epoll_ctl(m_epoll, EPOLL_CTL_ADD, connection.sock, &event) == 0) {
      m_parked.emplace(connection.sock, std::move(connection));
      return;
    }
  }
  m_expired(std::move(connection));  // stopping, or epoll refused the socket: end it now
}

void IdleConnections::stop() {
  {
    std::lock_guard lock(m_mutex);
    m_stopping = true;
  }
  if (m_thread.joinable()) {
    std::uint64_t one = 1;
    (void)::write(m_wake, &one, sizeof one);
    m_thread.join();
  }
  for (auto& [sock, connection] : take_expired(true)) m_expired(std::move(connection));
}

bool IdleConnections::evict_one(const std::function<std::size_t(const std::string&)>& weight) {
  IdleConnection victim;
  {
    std::lock_guard lock(m_mutex);
    auto chosen = m_parked.end();
    std::size_t chosen_weight = 0;
    for (auto it = m_parked.begin(); it != m_parked.end(); ++it) {
      std::size_t w = weight(it->second.address);
      if (chosen == m_parked.end() || w > chosen_weight ||
          (w == chosen_weight && it->second.idle_until < chosen->second.idle_until)) {
        chosen = it;
        chosen_weight = w;
      }
    }
    if (chosen == m_parked.end()) return false;
    if (m_epoll >= 0) ::epoll_ctl(m_epoll, EPOLL_CTL_DEL, chosen->first, nullptr);
    victim = std::move(m_parked.extract(chosen).mapped());
  }
  m_expired(std::move(victim));
  return true;
}

std::size_t IdleConnections::parked() const {
  std::lock_guard lock(m_mutex);
  return m_parked.size();
}

std::map<int, IdleConnection> IdleConnections::take_expired(bool all) {
  std::map<int, IdleConnection> expired;
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(m_mutex);
  for (auto it = m_parked.begin(); it != m_parked.end();) {
    if (all || it->second.idle_until <= now) {
      if (m_epoll >= 0) ::epoll_ctl(m_epoll, EPOLL_CTL_DEL, it->first, nullptr);
      expired.insert(m_parked.extract(it++));
    } else {
      ++it;
    }
  }
  return expired;
}

// Readiness and deadlines are checked every 100 ms at least: a keep-alive deadline is seconds long,
// so ending an idle connection up to 100 ms late is harmless.
void IdleConnections::run() {
  std::array<epoll_event, 64> events{};
  while (true) {
    int count = ::epoll_wait(m_epoll, events.data(), static_cast<int>(events.size()), 100);
    std::vector<IdleConnection> ready;
    {
      std::lock_guard lock(m_mutex);
      if (m_stopping) return;
      for (int i = 0; i < count; ++i) {
        auto it = m_parked.find(events[static_cast<size_t>(i)].data.fd);
        if (it == m_parked.end()) continue;  // the wake-up eventfd
        ::epoll_ctl(m_epoll, EPOLL_CTL_DEL, it->first, nullptr);
        ready.push_back(std::move(m_parked.extract(it).mapped()));
      }
    }
    for (auto& connection : ready) m_ready(std::move(connection));
    for (auto& [sock, connection] : take_expired(false)) m_expired(std::move(connection));
  }
}

}  // namespace kbuild::server
