// The Router: configuration reloads, then per request: the target into decoded segments and query,
// the Authorization header, a lookup in the route table (routes.cpp), the route's access check and its
// handler (routes_*.cpp).

#include "kbuild/server/router.hpp"

#include <sys/stat.h>

#include <chrono>

#include "kbuild/server/file_io.hpp"
#include "kbuild/server/handlers.hpp"
#include "kbuild/server/routes.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::server {

namespace {

using ConfigStamp = std::tuple<std::int64_t, std::uint64_t, std::uint64_t>;

/// mtime, size and inode of the configuration file (zeros when it cannot be read).
ConfigStamp config_stamp(const std::filesystem::path& file) {
  struct ::stat st;
  if (::stat(file.c_str(), &st) != 0) return {};
  return {static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
          static_cast<std::uint64_t>(st.st_size), static_cast<std::uint64_t>(st.st_ino)};
}

/// Splits the request target into decoded path segments and query (an absolute URL loses scheme and
/// host; one trailing '/' of a read is ignored); returns the raw path, for messages. A write keeps it:
/// `POST .../branch/x/` names the branch "x/", which is refused, not branch "x".
Outcome<std::string> parse_target(Router::Context& c) {
  std::string_view target = c.request.url;
  if (size_t scheme = target.find("://"); scheme != std::string_view::npos && scheme < target.find('/')) {
    size_t path_start = target.find('/', scheme + 3);
    target = path_start == std::string_view::npos ? std::string_view("/") : target.substr(path_start);
  }
  std::string_view raw_path = target.substr(0, target.find('?'));
  if (size_t question = target.find('?'); question != std::string_view::npos)
    c.query = parse_form(target.substr(question + 1));
  if (!raw_path.starts_with("/")) return bad_request("the request target must start with '/'");
  std::vector<std::string> raw = util::split(raw_path.substr(1), '/');
  const bool read = c.request.method == "GET" || c.request.method == "HEAD";
  if (read && raw.size() > 1 && raw.back().empty()) raw.pop_back();  // a trailing '/'
  for (const auto& segment : raw) {
    auto decoded = net::url_decode(segment);
    if (!decoded) return bad_request(decoded.error().message);
    c.segments.push_back(std::move(*decoded));
  }
  return std::string(raw_path);
}

/// Applies the route's access rule (routes.hpp: Access). With `check_upload`, an upload route's
/// one-time token too (its handler checks it again when it runs).
Outcome<void> check_access(Handlers& handlers, const Route& route, Match& match, bool check_upload) {
  switch (route.access) {
    case Access::none:
      break;
    case Access::upload:
      if (check_upload) KB_TRY(handlers.pending_upload(match));
      break;
    case Access::token:
      KB_TRY(handlers.require_token());
      break;
    case Access::read:
      if (match.has_id) {
        KB_TRY_ASSIGN(match.repo, handlers.read_repo(match.id));
      } else {
        KB_TRY(handlers.require_read());
      }
      break;
    case Access::write:
      if (match.has_id) {
        KB_TRY_ASSIGN(match.repo, handlers.write_repo(match.id));
      } else {
        KB_TRY(handlers.require_token());
      }
      break;
  }
  // Ids are case-insensitive (Store::find_repo): handlers name the repo as it was created.
  if (match.has_id && match.repo.key != 0) match.id = match.repo.id;
  return {};
}

/// Applies the route's access rule, then calls its handler.
Outcome<Reply> serve(Handlers& handlers, const Route& route, Match& match) {
  KB_TRY(check_access(handlers, route, match, false));
  return (handlers.*route.handler)(match);
}

}  // namespace

Router::Router(Store& store, Config config, RouterOptions options)
    : m_store(store), m_options(std::move(options)), m_config(std::make_shared<const Config>(std::move(config))) {
  if (!m_options.config_file.empty()) m_config_stamp = config_stamp(m_options.config_file);
  while (m_options.base_url.ends_with("/")) m_options.base_url.pop_back();
  static const util::RealClock real_clock;
  if (!m_options.clock) m_options.clock = &real_clock;
}

std::shared_ptr<const Config> Router::config() const {
  std::lock_guard lock(m_config_mutex);
  if (m_options.config_file.empty()) return m_config;
  ConfigStamp stamp = config_stamp(m_options.config_file);
  if (stamp == m_config_stamp) return m_config;
  m_config_stamp = stamp;
  auto reloaded = load_config(m_options.config_file.parent_path());
  if (!reloaded) {
    if (m_options.on_config_error)
      m_options.on_config_error("config.toml changed but is invalid; keeping the previous configuration: " +
                                reloaded.error().message);
    return m_config;
  }
  reloaded->limits = m_config->limits;  // fixed at start
  m_config = std::make_shared<const Config>(std::move(*reloaded));
  return m_config;
}

net::HttpResponse Router::handle(const net::HttpRequest& request) {
  Reply reply = route(request);
  if (reply.file) {
    auto body = read_slice(reply.file->path, reply.file->offset, reply.file->length);
    if (!body) {
      Failure broken{500, "InternalError", "cannot read " + reply.file->path.string(), {}};
      return error_reply(broken, false).response;
    }
    reply.response.body = std::move(*body);
  }
  return std::move(reply.response);
}

Reply Router::route(const net::HttpRequest& request, bool body_is_spool) {
  Context context(request, body_is_spool);
  try {
    return dispatch(context);
  } catch (const std::exception& e) {
    // Library exceptions (JSON, filesystem, allocation) end here, never in the listener.
    return error_reply({500, "InternalError", std::string("internal error: ") + e.what(), {}}, context.head);
  }
}

std::optional<Reply> Router::admit(const net::HttpRequest& request) {
  Context c(request, false);
  try {
    auto refused = [&](const Failure& f) { return std::optional<Reply>(error_reply(f, c.head)); };
    auto raw_path = parse_target(c);
    if (!raw_path) return refused(raw_path.error());
    if (auto failure = authenticate(c)) return refused(*failure);
    RouteLookup found = find_route(c.segments, c.method);
    if (!found.route) return std::nullopt;  // 404 or 405: answered after the body, as before
    Handlers handlers(m_store, *c.config, m_options, c);
    if (auto access = check_access(handlers, *found.route, found.match, true); !access) return refused(access.error());
    return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;  // route() will answer (and report) it
  }
}

std::optional<Failure> Router::authenticate(Context& c) {
  c.now = m_options.clock->unix_ms();
  c.config = config();
  // Upload URLs carry their own one-time token; an Authorization header there is ignored.
  auto header = c.request.headers.get("authorization");
  if (!header || is_upload_path(c.segments)) return std::nullopt;
  // Guessing tokens: after 20 wrong ones in a minute an address waits for the minute to end (the
  // check comes before the lookup, so a right token sent meanwhile is refused too).
  if (auto wait_ms = m_token_failures.retry_after_ms(c.request.client, c.now); wait_ms > 0) {
    std::string seconds = std::to_string((wait_ms + 999) / 1000);
    return Failure{429,
                   "TooManyRequests",
                   "too many invalid tokens from this address; retry in " + seconds + " s",
                   {{"Retry-After", seconds}}};
  }
  auto token = bearer_token(*header);
  c.token = token ? c.config->find_token(*token) : nullptr;
  if (c.token) return std::nullopt;
  m_token_failures.failed(c.request.client, c.now);
  return Failure{401, "Unauthorized", "Invalid credentials in Authorization header", {}};
}

Reply Router::dispatch(Context& c) {
  auto fail_with = [&](const Failure& f) { return error_reply(f, c.head); };
  auto raw_path = parse_target(c);
  if (!raw_path) return fail_with(raw_path.error());
  if (auto failure = authenticate(c)) return fail_with(*failure);
  RouteLookup found = find_route(c.segments, c.method);
  if (!found.route && found.other_method)
    return fail_with({405, "MethodNotAllowed", "method " + c.method + " is not allowed here", {}});
  if (!found.route) return fail_with({404, "NotFound", "no such endpoint: " + c.method + " " + *raw_path, {}});
  Handlers handlers(m_store, *c.config, m_options, c);
  auto outcome = serve(handlers, *found.route, found.match);
  return outcome ? std::move(*outcome) : fail_with(outcome.error());
}

}  // namespace kbuild::server
