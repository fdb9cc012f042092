// With connection.cpp, the only translation units that include cpp-httplib (through connection.hpp).
#include "kbuild/server/listener.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "kbuild/server/connection.hpp"
#include "kbuild/server/guard.hpp"
#include "kbuild/server/object_ids.hpp"
#include "kbuild/server/store.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/log.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::server {

std::string httplib_library_version() { return CPPHTTPLIB_VERSION; }

namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t k_spool_threshold = 8ull << 20;
constexpr const char* k_proxy_secret_header = "X-Kbuild-Proxy-Secret";

// Collects a request body in memory, moving to a spool file once it grows past k_spool_threshold.
class BodyCollector {
 public:
  BodyCollector(fs::path spool_path, std::uint64_t limit) : m_spool_path(std::move(spool_path)), m_limit(limit) {}
  ~BodyCollector() {
    if (m_file) std::fclose(m_file);
  }

  bool add(const char* data, size_t size) {
    m_total += size;
    if (m_total > m_limit) {
      m_too_large = true;
      return false;
    }
    if (!m_file && m_memory.size() + size <= k_spool_threshold) {
      m_memory.append(data, size);
      return true;
    }
    if (!m_file) {
      m_file = std::fopen(m_spool_path.c_str(), "wb");
      if (!m_file) return m_failed = true, false;
      m_spooled = true;
      if (std::fwrite(m_memory.data(), 1, m_memory.size(), m_file) != m_memory.size()) return m_failed = true, false;
      m_memory.clear();
    }
    if (std::fwrite(data, 1, size, m_file) != size) return m_failed = true, false;
    return true;
  }
  /// Closes the spool file; false on a write error.
  bool finish() {
    if (!m_file) return !m_failed;
    bool ok = std::fclose(m_file) == 0 && !m_failed;
    m_file = nullptr;
    return ok;
  }

  bool too_large() const { return m_too_large; }
  bool spooled() const { return m_spooled; }
  std::string& memory() { return m_memory; }
  std::uint64_t total() const { return m_total; }

 private:
  fs::path m_spool_path;
  std::uint64_t m_limit;
  std::string m_memory;
  std::FILE* m_file = nullptr;
  std::uint64_t m_total = 0;
  bool m_spooled = false, m_too_large = false, m_failed = false;
};

/// guard.hpp: framing_problem, for an httplib request.
std::optional<std::string> request_problem(const httplib::Request& in) {
  std::vector<std::string> lengths;
  auto [begin, end] = in.headers.equal_range("Content-Length");
  for (auto it = begin; it != end; ++it) lengths.push_back(it->second);
  return framing_problem(in.method, lengths, in.has_header("Transfer-Encoding"), in.get_header_value("Content-Type"));
}

/// Status, X-Error-Code and message of an error answer that httplib made itself.
std::tuple<int, std::string, std::string> library_error(int status) {
  ConnectionState* state = GuardedServer::current();
  if (state && state->header_limit_exceeded)
    return {431, "RequestHeaderFieldsTooLarge", "too many request headers, or too long ones"};
  if (state && state->read_timed_out) return {408, "RequestTimeout", "the request did not arrive in time"};
  switch (status) {
    case 413:
      return {413, "PayloadTooLarge", "request body larger than the server's limit"};
    case 414:
      return {414, "URITooLong", "request line longer than 8192 bytes"};
    case 416:
      return {416, "RangeNotSatisfiable", "malformed Range header"};
    case 404:
      return {404, "NotFound", "no such endpoint"};
    default:
      return {status, status >= 500 ? "InternalError" : "BadRequest", "malformed request"};
  }
}

}  // namespace

struct Listener::Impl {
  ListenerOptions options;
  std::unique_ptr<GuardedServer> server;
  int port = 0;
  Router* router = nullptr;
  std::optional<util::log::FileLog> log;

  const util::Clock& clock() const {
    static const util::RealClock real_clock;
    return options.clock ? *options.clock : real_clock;
  }

  std::uint64_t limit_for(const httplib::Request& request) const {
    return body_limit(request.method, request.target, options.limits);
  }

  /// Whether `request` came through a trusted proxy: from its address, with its secret.
  bool proxied(const httplib::Request& request) const {
    if (options.proxy_secret.empty() || !request.has_header(k_proxy_secret_header)) return false;
    auto peer = canonical_ip(request.remote_addr).value_or(request.remote_addr);
    return std::find(options.trusted_proxies.begin(), options.trusted_proxies.end(), peer) !=
               options.trusted_proxies.end() &&
           equal_in_constant_time(request.get_header_value(k_proxy_secret_header), options.proxy_secret);
  }

  std::string client_of(const httplib::Request& request) const {
    if (!proxied(request)) return canonical_ip(request.remote_addr).value_or(request.remote_addr);
    return forwarded_client(request.remote_addr, request.get_header_value("X-Forwarded-For"), options.trusted_proxies);
  }

  void write_log(const httplib::Request& request, int status, std::uint64_t bytes) {
    if (!log) return;
    std::string path = request.target.substr(0, request.target.find('?'));
    log->line(iso8601(clock().unix_ms()) + " " + request.method + " " + path + " " + std::to_string(status) + " " +
              std::to_string(bytes) + " " + client_of(request));
  }

  /// The pre-routing, error and post-routing hooks of the server.
  void install_hooks();
  /// Binds options.host:options.port (any free port for 0) and sets `port`.
  Result<void> bind_socket();

  static void send_error(httplib::Response& response, int status, const std::string& code, const std::string& message,
                         bool head) {
    response.status = status;
    response.set_header("X-Error-Code", code);
    response.set_header("X-Error-Message", message);
    response.set_header("Connection", "close");
    std::string body = nlohmann::json{{"error", message}}.dump();
    if (head)
      response.set_header("Content-Length", std::to_string(body.size()));
    else
      response.set_content(body, "application/json");
  }

  /// Reads the body of `in` into `request`, in memory or spooled to `spool`; false when it answered an
  /// error instead (413 above the limit, 400 for an incomplete body).
  bool collect_body(const httplib::Request& in, httplib::Response& out, const httplib::ContentReader& reader,
                    net::HttpRequest& request, fs::path& spool, bool head) {
    std::uint64_t limit = limit_for(in);
    if (in.has_header("Content-Length") &&
        std::strtoull(in.get_header_value("Content-Length").c_str(), nullptr, 10) > limit) {
      send_error(out, 413, "PayloadTooLarge",
                 "request body larger than the server's limit of " + std::to_string(limit) + " bytes", head);
      write_log(in, out.status, 0);
      return false;
    }
    spool = util::temp_sibling(fs::path(options.spool_dir) / "body");
    BodyCollector body(spool, limit);
    bool complete = reader([&](const char* data, size_t size) { return body.add(data, size); });
    bool written = body.finish();
    if (body.too_large() || !complete || !written) {
      std::error_code ec;
      fs::remove(spool, ec);
      if (body.too_large())
        send_error(out, 413, "PayloadTooLarge",
                   "request body larger than the server's limit of " + std::to_string(limit) + " bytes", head);
      else
        send_error(out, 400, "BadRequest", "incomplete request body", head);
      write_log(in, out.status, 0);
      return false;
    }
    if (body.spooled()) {
      request.body_file = spool;
      request.body_length = body.total();
    } else {
      request.body = std::move(body.memory());
    }
    return true;
  }

  /// Copies the router's answer into `out` (a file body is streamed); returns the bytes of the body, or
  /// nullopt when the file could not be opened and a 500 went out instead.
  static std::optional<std::uint64_t> send_reply(httplib::Response& out, Reply& reply, bool head) {
    out.status = reply.response.status;
    std::string content_type = reply.response.headers.get("content-type").value_or("application/octet-stream");
    for (const auto& [name, value] : reply.response.headers.all()) {
      // cpp-httplib computes Content-Length itself for bodies (it would send two otherwise) and sets
      // Content-Type with the content; HEAD answers keep the router's Content-Length.
      if (name == "content-type" || (name == "content-length" && !head)) continue;
      out.set_header(name, value);
    }
    std::uint64_t bytes = 0;
    if (head) {
      out.set_header("Content-Type", content_type);
    } else if (reply.file) {
      int fd = ::open(reply.file->path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        out.headers.clear();
        send_error(out, 500, "InternalError", "cannot open a stored file", false);
        return std::nullopt;
      }
      std::uint64_t base = reply.file->offset;
      bytes = reply.file->length;
      out.set_content_provider(
          static_cast<size_t>(bytes), content_type,
          [fd, base](size_t offset, size_t length, httplib::DataSink& sink) {
            std::vector<char> buffer(std::min<size_t>(length, 1 << 20));
            ssize_t got = ::pread(fd, buffer.data(), buffer.size(), static_cast<off_t>(base + offset));
            if (got <= 0) return false;
            return sink.write(buffer.data(), static_cast<size_t>(got));
          },
          [fd](bool) { ::close(fd); });
    } else {
      bytes = reply.response.body.size();
      out.set_content(std::move(reply.response.body), content_type);
    }
    return bytes;
  }

  void handle(const httplib::Request& in, httplib::Response& out, const httplib::ContentReader* reader) {
    // cpp-httplib would apply the Range header again to what the router already cut out; the router
    // owns ranges. The Request object is not const where it lives (Server::process_request).
    const_cast<httplib::Request&>(in).ranges.clear();
    bool head = in.method == "HEAD";
    net::HttpRequest request;
    request.method = in.method;
    request.url = in.target;
    request.client = client_of(in);
    for (const auto& [name, value] : in.headers)
      if (name != "REMOTE_ADDR" && name != "REMOTE_PORT" && name != "LOCAL_ADDR" && name != "LOCAL_PORT" &&
          util::ascii_lowercase(name) != "x-kbuild-proxy-secret")
        request.headers.set(name, value);

    fs::path spool;
    if (reader) {
      // Who may send a body is decided before it is read: a 1 GiB PUT with a bogus upload token, or a
      // commit without the right to write, is answered at once and the connection closed (the body
      // stays unread, so it cannot be taken for a next request).
      if (auto refused = router->admit(request)) {
        refused->response.headers.set("Connection", "close");
        if (ConnectionState* state = GuardedServer::current()) state->drain_before_close = true;
        auto bytes = send_reply(out, *refused, head);
        write_log(in, out.status, bytes.value_or(0));
        return;
      }
      if (!collect_body(in, out, *reader, request, spool, head)) return;
    } else {
      request.body = in.body;
    }

    Reply reply = router->route(request, request.body_file.has_value());
    if (request.body_file) {
      std::error_code ec;
      fs::remove(spool, ec);  // the router may have moved it into the blob store already
    }
    auto bytes = send_reply(out, reply, head);
    write_log(in, out.status, bytes.value_or(0));
  }
};

Listener::Listener(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}

namespace {

// Every connection, parked or served, holds a descriptor: the soft limit (often 1024) would refuse
// the 1,025th client, so it is raised to the hard limit the administrator allows. Returns the limit.
std::uint64_t raise_descriptor_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &limit);
    (void)::getrlimit(RLIMIT_NOFILE, &limit);
  }
  return limit.rlim_cur == RLIM_INFINITY ? 1u << 20 : limit.rlim_cur;
}

// Descriptors kept for what is not a connection: the database, blobs being read, spooled bodies,
// upload parts, the access log.
constexpr std::uint64_t k_descriptor_reserve = 256;

}  // namespace
Listener::~Listener() = default;

namespace {

ConnectionLimits connection_limits(const Limits& limits) {
  ConnectionLimits out;
  out.read.timeout = std::chrono::seconds(limits.read_timeout_seconds);
  out.read.max_header_count = limits.max_header_count;
  out.read.max_header_bytes = limits.max_header_bytes;
  out.read.min_body_rate = limits.min_body_rate;
  out.read.body_grace = std::chrono::seconds(limits.body_grace_seconds);
  out.max_connections_per_client = limits.max_connections_per_client;
  // Downloads run on 8 threads and uploads on 5 in huggingface_hub, per client: 64 workers serve 8
  // such clients at once; more start while every worker is busy (a slow client holds one), up to 1024.
  out.workers = {64, 1024, std::chrono::seconds(10)};
  return out;
}

/// Only SO_REUSEADDR (a restart may bind while old connections linger in TIME_WAIT): httplib's default
/// SO_REUSEPORT would let a second server share the port.
void exclusive_socket_options(socket_t sock) {
  int yes = 1;
  ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  // Answers go out in two writes (head, body): with Nagle's algorithm the second waits for the
  // client's delayed ACK, about 40 ms per request on a kept-alive connection. Accepted sockets
  // inherit the option from the listening one.
  ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
}

}  // namespace

void Listener::Impl::install_hooks() {
  Impl* self = this;
  // Checks before the body is read; the answer closes the connection (the body stays unread).
  server->set_pre_routing_handler([self](const httplib::Request& in, httplib::Response& out) {
    auto problem = request_problem(in);
    // A request with neither Content-Length nor Transfer-Encoding has no body (RFC 9112, 6.3);
    // cpp-httplib would read a POST's or PUT's body until the connection closes or times out (10 s
    // for a 400). Saying so lets it read nothing, and the router answers at once.
    if (!problem && !in.has_header("Content-Length") && !in.has_header("Transfer-Encoding"))
      const_cast<httplib::Request&>(in).set_header("Content-Length", "0");
    // A request from a trusted proxy's address without its secret is that host's own client: from now
    // on its connection counts against the per-client cap.
    ConnectionState* state = GuardedServer::current();
    if (!problem && state && state->from_trusted_address && !self->proxied(in) && !state->count_as_client()) {
      send_error(out, 429, "TooManyConnections", "too many connections from this address; try again later",
                 in.method == "HEAD");
      self->write_log(in, out.status, 0);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!problem) return httplib::Server::HandlerResponse::Unhandled;
    send_error(out, 400, "BadRequest", *problem, in.method == "HEAD");
    self->write_log(in, out.status, 0);
    return httplib::Server::HandlerResponse::Handled;
  });
  // Errors httplib answers itself (malformed requests, limits) get the registry's error format.
  server->set_error_handler(
      httplib::Server::HandlerWithResponse([self](const httplib::Request& in, httplib::Response& out) {
        if (out.has_header("X-Error-Code")) return httplib::Server::HandlerResponse::Unhandled;  // the router's
        auto [status, code, message] = library_error(out.status);
        send_error(out, status, code, message, in.method == "HEAD");
        self->write_log(in, status, 0);
        return httplib::Server::HandlerResponse::Handled;
      }));
  server->set_post_routing_handler([](const httplib::Request&, httplib::Response& out) {
    if (ConnectionState* state = GuardedServer::current(); state && out.get_header_value("Connection") == "close")
      state->close_after_response = true;
  });
}

Result<std::unique_ptr<Listener>> Listener::bind(const ListenerOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (!options.access_log.empty()) {
    auto log = util::log::FileLog::open(options.access_log);
    if (!log) return fail("cannot open the access log " + options.access_log.string());
    impl->log.emplace(std::move(*log));
  }
  auto limits = connection_limits(options.limits);
  limits.trusted_proxies = options.trusted_proxies;
  const std::uint64_t descriptors = raise_descriptor_limit();
  limits.max_connections = options.limits.max_connections > 0
                               ? options.limits.max_connections
                               : std::max<std::uint64_t>(64, descriptors - std::min(descriptors, k_descriptor_reserve));
  impl->server = std::make_unique<GuardedServer>(limits);
  auto& server = *impl->server;
  server.set_payload_max_length(std::max(options.limits.max_lfs_object, options.limits.max_commit_body));
  server.set_socket_options(exclusive_socket_options);
  // httplib's default of 5 requests per connection makes a reader reconnect every 5 requests; an idle
  // connection costs no worker (connection.hpp), so a connection lasts as nginx's do by default.
  server.set_keep_alive_max_count(1000);
  impl->install_hooks();
  Impl* self = impl.get();
  auto plain = [self](const httplib::Request& in, httplib::Response& out) { self->handle(in, out, nullptr); };
  auto with_body = [self](const httplib::Request& in, httplib::Response& out, const httplib::ContentReader& reader) {
    self->handle(in, out, &reader);
  };
  // Patterns match the decoded path; the router re-parses the raw target, so match everything.
  const std::string any = ".*";
  server.Get(any, plain);
  server.Post(any, plain);
  server.Put(any, plain);
  server.Delete(any, plain);
  server.Post(any, httplib::Server::HandlerWithContentReader(with_body));
  server.Put(any, httplib::Server::HandlerWithContentReader(with_body));
  server.Delete(any, httplib::Server::HandlerWithContentReader(with_body));
  KB_TRY(impl->bind_socket());
  return std::unique_ptr<Listener>(new Listener(std::move(impl)));
}

// Connections the kernel queues before a worker accepts them (capped by net.core.somaxconn).
constexpr int k_listen_backlog = 1024;

namespace {}  // namespace

Result<void> Listener::Impl::bind_socket() {
  errno = 0;
  if (options.port == 0) {
    port = server->bind_to_any_port(options.host);
    if (port > 0) {
      server->widen_backlog(k_listen_backlog);
      return {};
    }
    return fail("cannot listen on " + options.host + ": " + std::strerror(errno), "check --host", ExitCode::network);
  }
  if (server->bind_to_port(options.host, options.port)) {
    port = options.port;
    server->widen_backlog(k_listen_backlog);
    return {};
  }
  std::string where = options.host + ":" + std::to_string(options.port);
  if (errno == EADDRINUSE)
    return fail("cannot listen on " + where + ": port " + std::to_string(options.port) + " is already in use",
                "another server (maybe another kbuild hub serve) has it: stop it, or pick another --port (--port 0 "
                "takes a free one)",
                ExitCode::network);
  return fail("cannot listen on " + where + (errno ? std::string(": ") + std::strerror(errno) : ""),
              "check --host and --port (ports below 1024 need privileges); --port 0 takes a free one",
              ExitCode::network);
}

int Listener::port() const { return m_impl->port; }

Result<void> Listener::serve(Router& router) {
  m_impl->router = &router;
  if (!m_impl->server->listen_after_bind()) return fail("the HTTP server stopped unexpectedly");
  return {};
}

void Listener::stop() { m_impl->server->stop(); }

Result<void> serve_until_signal(Listener& listener, Router& router) {
  sigset_t signals, previous;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, &previous);
  std::atomic<bool> finished{false};
  Result<void> outcome;
  std::thread worker([&] {
    outcome = listener.serve(router);
    finished = true;
  });
  bool stopped_by_signal = false;
  while (!finished) {
    timespec wait{0, 200 * 1000 * 1000};
    if (sigtimedwait(&signals, nullptr, &wait) > 0) {
      stopped_by_signal = true;
      break;
    }
  }
  // stop() does nothing until the server runs, so repeat it until serve() has returned.
  while (!finished) {
    listener.stop();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  worker.join();
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (stopped_by_signal) return {};
  return outcome;
}

}  // namespace kbuild::server
