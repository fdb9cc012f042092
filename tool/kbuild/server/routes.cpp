#include "kbuild/server/routes.hpp"

#include <stdexcept>

#include "kbuild/util/strings.hpp"

namespace kbuild::server {

namespace {

// clang-format off
/// The endpoints of router.hpp, tried in this order (routes.hpp describes the patterns).
const Route k_routes[] = {
    {"GET",      "/api/whoami-v2",                        Access::token,  &Handlers::whoami},
    {"POST",     "/api/validate-yaml",                    Access::none,   &Handlers::validate_yaml},
    {"GET",      "/api/agent-harnesses",                  Access::none,   &Handlers::agent_harnesses},
    {"POST",     "/api/repos/create",                     Access::write,  &Handlers::create_repo},
    {"DELETE",   "/api/repos/delete",                     Access::write,  &Handlers::delete_repo},
    {"GET",      "/api/organizations/{name}/overview",    Access::read,   &Handlers::organization},
    {"GET",      "/api/{T}/{id}",                         Access::read,   &Handlers::repo_info},
    {"GET",      "/api/{T}/{id}/revision/{rev*!}",        Access::read,   &Handlers::repo_info},
    {"GET",      "/api/{T}/{id}/refs",                    Access::read,   &Handlers::refs},
    {"POST",     "/api/{T}/{id}/branch/{name*!}",         Access::write,  &Handlers::create_branch},
    {"DELETE",   "/api/{T}/{id}/branch/{name*!}",         Access::write,  &Handlers::delete_branch},
    {"POST",     "/api/{T}/{id}/tag/{rev*}",              Access::write,  &Handlers::create_tag},
    {"DELETE",   "/api/{T}/{id}/tag/{name*}",             Access::write,  &Handlers::delete_tag},
    {"GET",      "/api/{T}/{id}/tree/{rev!}/{path*}",     Access::read,   &Handlers::tree},
    {"POST",     "/api/{T}/{id}/paths-info/{rev*!}",      Access::read,   &Handlers::paths_info},
    {"GET",      "/api/{T}/{id}/commits/{rev*!}",         Access::read,   &Handlers::commits},
    {"POST",     "/api/{T}/{id}/preupload/{rev*!}",       Access::write,  &Handlers::preupload},
    {"POST",     "/api/{T}/{id}/commit/{rev*!}",          Access::write,  &Handlers::commit},
    {"GET",      "/api/{T}/{id}/discussions",             Access::read,   &Handlers::discussions},
    {"POST",     "/api/{T}/{id}/discussions",             Access::write,  &Handlers::create_discussion},
    {"GET",      "/api/{T}/{id}/discussions/{name!}",     Access::read,   &Handlers::discussion},
    {"POST",     "/api/{T}/{id}/discussions/{name!}/merge",   Access::write, &Handlers::merge_discussion},
    {"POST",     "/api/{T}/{id}/discussions/{name!}/status",  Access::write, &Handlers::discussion_status},
    {"POST",     "/api/{T}/{id}/discussions/{name!}/comment", Access::write, &Handlers::comment_discussion},
    {"*",        "/api/{T}/{id}/xet-read-token/{rev*}",   Access::none,   &Handlers::xet_token},
    {"*",        "/api/{T}/{id}/xet-write-token/{rev*}",  Access::none,   &Handlers::xet_token},
    {"POST",     "/{P}{id}.git/info/lfs/objects/batch",   Access::write,  &Handlers::lfs_batch},
    {"POST",     "/{P}{id}.git/info/lfs/objects/verify",  Access::write,  &Handlers::lfs_verify},
    {"GET",      "/{P}{id}/resolve/{rev}/{path+}",        Access::read,   &Handlers::resolve},
    {"GET",      "/{P}{id}/tree/{rev!}/{path*}",          Access::read,   &Handlers::web_tree},
    {"GET",      "/{P}{id}/blob/{rev!}/{path+}",          Access::read,   &Handlers::web_blob},
    {"GET",      "/{T}/{id}",                             Access::read,   &Handlers::web_repo},
    {"PUT",      "/lfs/upload/{oid}",                     Access::upload, &Handlers::upload_object},
    {"POST",     "/lfs/upload/{oid}",                     Access::upload, &Handlers::complete_upload},
    {"PUT POST", "/lfs/upload/{oid}/{part}",              Access::upload, &Handlers::upload_part},
};
// clang-format on

enum class Area { upload, api, repo };

/// The area of a path, or of a pattern's elements (routes.hpp, "Areas").
Area area_of(const std::vector<std::string>& segments) {
  if (segments.size() >= 3 && segments[0] == "lfs" && segments[1] == "upload") return Area::upload;
  if (!segments.empty() && segments[0] == "api") return Area::api;
  return Area::repo;
}

enum class TokenKind { literal, type, id, prefixed_id, prefixed_git_id, one, rest };

struct Token {
  TokenKind kind = TokenKind::literal;
  std::string text;  ///< literal: the segment; captures: the Match field
  bool non_empty = false;
  bool at_least_one = false;
};

struct CompiledRoute {
  const Route* route;
  Area area;
  std::vector<Token> tokens;
};

Token token_of(TokenKind kind, std::string_view text = {}) {
  Token token;
  token.kind = kind;
  token.text = std::string(text);
  return token;
}

Token compile_token(std::string_view text) {
  if (text == "{T}") return token_of(TokenKind::type);
  if (text == "{id}") return token_of(TokenKind::id);
  if (text == "{P}{id}") return token_of(TokenKind::prefixed_id);
  if (text == "{P}{id}.git") return token_of(TokenKind::prefixed_git_id);
  if (!text.starts_with("{")) return token_of(TokenKind::literal, text);
  Token token = token_of(TokenKind::one);
  std::string_view inner = text.substr(1, text.size() - 2);
  if (inner.ends_with("!")) {
    token.non_empty = true;
    inner.remove_suffix(1);
  }
  if (inner.ends_with("*") || inner.ends_with("+")) {
    token.kind = TokenKind::rest;
    token.at_least_one = inner.ends_with("+");
    inner.remove_suffix(1);
  }
  token.text = std::string(inner);
  if (!text.ends_with("}") ||
      (inner != "rev" && inner != "path" && inner != "name" && inner != "oid" && inner != "part"))
    throw std::logic_error("bad route pattern element " + std::string(text));
  return token;
}

const std::vector<CompiledRoute>& compiled_routes() {
  static const std::vector<CompiledRoute> routes = [] {
    std::vector<CompiledRoute> out;
    for (const Route& route : k_routes) {
      std::vector<std::string> elements = util::split(route.pattern.substr(1), '/');
      CompiledRoute compiled{&route, area_of(elements), {}};
      for (const auto& element : elements) compiled.tokens.push_back(compile_token(element));
      out.push_back(std::move(compiled));
    }
    return out;
  }();
  return routes;
}

std::string& field(Match& match, const std::string& name) {
  if (name == "rev") return match.revision;
  if (name == "path") return match.path;
  if (name == "name") return match.name;
  if (name == "oid") return match.oid;
  return match.part.emplace();
}

/// Segments before the {P}{id} namespace: 1 when the first one names a type other than model and the
/// path has at least 4 segments (setting `type`), 0 otherwise.
size_t type_prefix(const std::vector<std::string>& segments, RepoType& type) {
  if (segments.size() < 4) return 0;
  auto prefixed = parse_repo_type_plural(segments[0]);
  if (!prefixed || *prefixed == RepoType::model) return 0;
  type = *prefixed;
  return 1;
}

/// Matches one element at segments[at]; returns the index after it, or nullopt.
std::optional<size_t> match_token(const Token& token, const std::vector<std::string>& s, size_t at, Match& match) {
  switch (token.kind) {
    case TokenKind::literal:
      if (at >= s.size() || s[at] != token.text) return std::nullopt;
      return at + 1;
    case TokenKind::type: {
      auto type = at < s.size() ? parse_repo_type_plural(s[at]) : std::nullopt;
      if (!type) return std::nullopt;
      match.id.type = *type;
      return at + 1;
    }
    case TokenKind::prefixed_id:
    case TokenKind::prefixed_git_id:
    case TokenKind::id: {
      if (token.kind != TokenKind::id) at = type_prefix(s, match.id.type);
      if (at + 2 > s.size()) return std::nullopt;
      match.has_id = true;
      match.id.ns = s[at];
      match.id.name = s[at + 1];
      if (token.kind == TokenKind::prefixed_git_id) {
        if (!match.id.name.ends_with(".git")) return std::nullopt;
        match.id.name.resize(match.id.name.size() - 4);
      }
      return at + 2;
    }
    case TokenKind::one:
      if (at >= s.size() || (token.non_empty && s[at].empty())) return std::nullopt;
      field(match, token.text) = s[at];
      return at + 1;
    case TokenKind::rest: {
      if (token.at_least_one && at >= s.size()) return std::nullopt;
      std::vector<std::string> tail(s.begin() + static_cast<std::ptrdiff_t>(std::min(at, s.size())), s.end());
      std::string joined = util::join(tail, "/");
      if (token.non_empty && joined.empty()) return std::nullopt;
      field(match, token.text) = std::move(joined);
      return s.size();
    }
  }
  return std::nullopt;
}

bool matches(const CompiledRoute& route, const std::vector<std::string>& segments, Match& match) {
  size_t at = 0;
  for (const auto& token : route.tokens) {
    auto next = match_token(token, segments, at, match);
    if (!next) return false;
    at = *next;
  }
  return at == segments.size();
}

bool allows(std::string_view methods, std::string_view method) {
  if (methods == "*") return true;
  for (const auto& allowed : util::split(methods, ' '))
    if (allowed == method || (allowed == "GET" && method == "HEAD")) return true;
  return false;
}

}  // namespace

bool is_upload_path(const std::vector<std::string>& segments) { return area_of(segments) == Area::upload; }

RouteLookup find_route(const std::vector<std::string>& segments, std::string_view method) {
  RouteLookup out;
  Area area = area_of(segments);
  for (const auto& compiled : compiled_routes()) {
    if (compiled.area != area) continue;
    Match match;
    if (!matches(compiled, segments, match)) continue;
    if (!allows(compiled.route->methods, method)) {
      out.other_method = true;
      continue;
    }
    out.route = compiled.route;
    out.match = std::move(match);
    return out;
  }
  return out;
}

}  // namespace kbuild::server
