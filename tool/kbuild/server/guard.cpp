#include "kbuild/server/guard.hpp"

#include <arpa/inet.h>

#include <algorithm>

#include "kbuild/util/strings.hpp"

namespace kbuild::server {

// ---------------------------------------------------------------------------------------------
// ReadBudget

void ReadBudget::begin_request(Clock::time_point now) {
  m_in_headers = true;
  m_header_limit_exceeded = false;
  m_header_bytes = m_header_lines = m_line_length = 0;
  m_read_mark = now;
  m_read_since_mark = 0;
  m_writing = false;
}

void ReadBudget::begin_body(Clock::time_point now) {
  m_in_headers = false;
  m_read_mark = now;
  m_read_since_mark = 0;
  m_body_start = now;
  m_body_bytes = 0;
}

ReadBudget::Clock::time_point ReadBudget::read_deadline() const {
  const auto paced = m_read_mark + m_limits.timeout;
  if (m_in_headers || m_limits.min_body_rate == 0) return paced;
  // The body so far must have come at min_body_rate on average since the grace ended: the next byte
  // is due when the bytes read so far no longer cover the time.
  const auto covered = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(static_cast<double>(m_body_bytes) / static_cast<double>(m_limits.min_body_rate)));
  return std::min(paced, m_body_start + m_limits.body_grace + covered);
}

bool ReadBudget::account_read(std::string_view bytes, Clock::time_point now) {
  m_writing = false;
  if (m_in_headers) {
    m_header_bytes += bytes.size();
    for (char c : bytes) {
      if (c == '\n') {
        if (m_line_length > 0) ++m_header_lines;  // the request line or a header; a blank line ends them
        m_line_length = 0;
      } else if (c != '\r') {
        ++m_line_length;
      }
    }
    if (m_header_bytes > m_limits.max_header_bytes || m_header_lines > m_limits.max_header_count + 1)
      m_header_limit_exceeded = true;
    return !m_header_limit_exceeded;
  }
  m_read_since_mark += bytes.size();
  m_body_bytes += bytes.size();
  if (m_read_since_mark >= m_limits.progress_bytes) {
    m_read_mark = now;
    m_read_since_mark = 0;
  }
  return true;
}

ReadBudget::Clock::time_point ReadBudget::write_deadline(Clock::time_point now) {
  if (!m_writing) {  // the first write of a response: the time spent handling the request is free
    m_writing = true;
    m_write_mark = now;
    m_written_since_mark = 0;
  }
  return m_write_mark + m_limits.timeout;
}

void ReadBudget::account_write(std::size_t bytes, Clock::time_point now) {
  m_written_since_mark += bytes;
  if (m_written_since_mark >= m_limits.progress_bytes) {
    m_write_mark = now;
    m_written_since_mark = 0;
  }
}

// ---------------------------------------------------------------------------------------------
// ClientLimiter

bool ClientLimiter::acquire(const std::string& address) {
  std::lock_guard lock(m_mutex);
  std::size_t& count = m_active[address];
  if (count >= m_per_client) {
    if (count == 0) m_active.erase(address);
    return false;
  }
  ++count;
  return true;
}

void ClientLimiter::release(const std::string& address) {
  std::lock_guard lock(m_mutex);
  auto it = m_active.find(address);
  if (it == m_active.end()) return;
  if (--it->second == 0) m_active.erase(it);
}

std::map<std::string, std::size_t> ClientLimiter::snapshot() const {
  std::lock_guard lock(m_mutex);
  return m_active;
}

std::size_t ClientLimiter::active(const std::string& address) const {
  std::lock_guard lock(m_mutex);
  auto it = m_active.find(address);
  return it == m_active.end() ? 0 : it->second;
}

// ---------------------------------------------------------------------------------------------

std::int64_t TokenFailureLimiter::retry_after_ms(const std::string& address, std::int64_t now_ms) const {
  std::lock_guard lock(m_mutex);
  auto it = m_windows.find(address);
  if (it == m_windows.end() || it->second.failures < m_allowed) return 0;
  return std::max<std::int64_t>(0, it->second.start_ms + m_window_ms - now_ms);
}

void TokenFailureLimiter::failed(const std::string& address, std::int64_t now_ms) {
  std::lock_guard lock(m_mutex);
  auto it = m_windows.find(address);
  if (it == m_windows.end()) {
    if (m_windows.size() >= m_max_clients) {
      std::erase_if(m_windows, [&](const auto& entry) { return entry.second.start_ms + m_window_ms <= now_ms; });
      while (m_windows.size() >= m_max_clients)
        m_windows.erase(std::min_element(m_windows.begin(), m_windows.end(), [](const auto& a, const auto& b) {
          return a.second.start_ms < b.second.start_ms;
        }));
    }
    it = m_windows.emplace(address, Window{now_ms, 0}).first;
  }
  if (it->second.start_ms + m_window_ms <= now_ms) it->second = Window{now_ms, 0};
  ++it->second.failures;
}

std::optional<std::string> framing_problem(std::string_view method, const std::vector<std::string>& content_lengths,
                                           bool transfer_encoding, std::string_view content_type) {
  if (content_lengths.size() > 1) return "duplicate Content-Length headers";
  if (!content_lengths.empty() && transfer_encoding) return "both Content-Length and Transfer-Encoding";
  const std::string length = content_lengths.empty() ? "" : content_lengths.front();
  if (!content_lengths.empty() &&
      (length.empty() || length.size() > 19 || length.find_first_not_of("0123456789") != std::string::npos))
    return "invalid Content-Length";
  bool has_body = transfer_encoding || (!content_lengths.empty() && length.find_first_not_of('0') != std::string::npos);
  if ((method == "GET" || method == "HEAD") && has_body) return "a " + std::string(method) + " request has no body";
  std::string type(content_type.substr(0, 19));
  for (char& c : type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (type == "multipart/form-data") return "multipart/form-data bodies are not accepted";
  return std::nullopt;
}

std::uint64_t body_limit(std::string_view method, std::string_view target, const Limits& limits) {
  std::string_view path = target.substr(0, target.find('?'));
  if (method == "PUT" && path.starts_with("/lfs/upload/")) return limits.max_lfs_object;
  auto segments = util::split(path, '/');  // "", "api", T, ns, name, "commit", ...
  if (method == "POST" && segments.size() >= 6 && segments[1] == "api" && segments[5] == "commit")
    return limits.max_commit_body;
  return limits.max_json_body;
}

std::optional<std::string> canonical_ip(std::string_view address) {
  std::string text(address);
  if (text.starts_with("::ffff:") && text.find('.') != std::string::npos) text = text.substr(7);  // mapped IPv4
  unsigned char bytes[sizeof(in6_addr)];
  char out[INET6_ADDRSTRLEN];
  for (int family : {AF_INET, AF_INET6})
    if (::inet_pton(family, text.c_str(), bytes) == 1 && ::inet_ntop(family, bytes, out, sizeof out)) return out;
  return std::nullopt;
}

std::string forwarded_client(const std::string& peer, std::string_view x_forwarded_for,
                             const std::vector<std::string>& trusted_proxies) {
  auto trusted = [&](const std::string& address) {
    return std::find(trusted_proxies.begin(), trusted_proxies.end(), address) != trusted_proxies.end();
  };
  std::string client = canonical_ip(peer).value_or(peer);
  if (!trusted(client)) return client;
  auto hops = util::split(std::string(x_forwarded_for), ',');
  for (auto hop = hops.rbegin(); hop != hops.rend(); ++hop) {
    auto address = canonical_ip(util::trim(*hop));
    if (!address) break;
    client = *address;
    if (!trusted(client)) break;
  }
  return client;
}

}  // namespace kbuild::server
