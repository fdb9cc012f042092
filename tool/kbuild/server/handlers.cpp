// What the route handlers share (handlers.hpp): failures and replies, the request's body, access
// checks and revision resolution.

#include "kbuild/server/handlers.hpp"

#include "kbuild/server/file_io.hpp"

namespace kbuild::server {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Failures and replies

std::unexpected<Failure> failure(int status, std::string code, std::string message) {
  return std::unexpected(Failure{status, std::move(code), std::move(message), {}});
}
std::unexpected<Failure> bad_request(std::string message) { return failure(400, "BadRequest", std::move(message)); }
std::unexpected<Failure> not_found(std::string message) { return failure(404, "NotFound", std::move(message)); }
std::unexpected<Failure> revision_not_found(std::string_view revision) {
  return failure(404, "RevisionNotFound", "Invalid rev id: " + std::string(revision));
}
std::unexpected<Failure> too_large(std::uint64_t limit) {
  return failure(413, "PayloadTooLarge",
                 "request body larger than the server's limit of " + std::to_string(limit) + " bytes");
}

namespace {
// Header values cannot hold line breaks.
std::string header_safe(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c == '\r' || c == '\n') c = ' ';
  return out;
}
}  // namespace

std::string dump(const Json& value) { return value.dump(-1, ' ', false, Json::error_handler_t::replace); }

Reply json_reply(const Json& body, bool head, int status, std::string_view content_type) {
  Reply reply;
  reply.response.status = status;
  std::string text = dump(body);
  reply.response.headers.set("Content-Type", std::string(content_type));
  reply.response.headers.set("Content-Length", std::to_string(text.size()));
  if (!head) reply.response.body = std::move(text);
  return reply;
}

Reply text_reply(std::string text, bool head) {
  Reply reply;
  reply.response.status = 200;
  reply.response.headers.set("Content-Type", "text/plain; charset=utf-8");
  reply.response.headers.set("Content-Length", std::to_string(text.size()));
  if (!head) reply.response.body = std::move(text);
  return reply;
}

Reply error_reply(const Failure& error, bool head) {
  Json body = {{"error", error.message}};
  Reply reply = json_reply(body, head, error.status);
  reply.response.headers.set("X-Error-Code", error.code);
  reply.response.headers.set("X-Error-Message", header_safe(error.message));
  for (const auto& [name, value] : error.headers) reply.response.headers.set(name, value);
  return reply;
}

Json lfs_json(const FileEntry& file, const char* hash_key) {
  return {{hash_key, file.sha256}, {"size", file.size}, {"pointerSize", lfs_pointer(file.sha256, file.size).size()}};
}

// ---------------------------------------------------------------------------------------------
// The request's body

std::uint64_t Router::Context::body_size() const {
  if (!request.body_file) return request.body.size();
  if (request.body_length) return *request.body_length;
  std::error_code ec;
  auto size = fs::file_size(*request.body_file, ec);
  return ec || size < request.body_offset ? 0 : size - request.body_offset;
}

Outcome<std::string> Handlers::body(std::uint64_t limit) {
  std::uint64_t size = m_c.body_size();
  if (size > limit) return too_large(limit);
  if (!m_c.request.body_file) return m_c.request.body;
  auto content = read_slice(*m_c.request.body_file, m_c.request.body_offset, size);
  if (!content)
    return failure(500, "InternalError",
                   content.error() == ReadFailure::cannot_open ? "cannot read the request body" : "short request body");
  return std::move(*content);
}

Outcome<std::unique_ptr<LineReader>> Handlers::body_lines(std::uint64_t limit) {
  std::uint64_t size = m_c.body_size();
  if (size > limit) return too_large(limit);
  if (!m_c.request.body_file) return std::make_unique<LineReader>(m_c.request.body);
  return std::make_unique<LineReader>(*m_c.request.body_file, m_c.request.body_offset, size);
}

Outcome<fs::path> Handlers::body_as_temp_file(std::uint64_t limit) {
  const auto& request = m_c.request;
  std::uint64_t size = m_c.body_size();
  if (size > limit) return too_large(limit);
  if (request.body_file && m_c.body_is_spool && request.body_offset == 0) {
    std::error_code ec;
    if (fs::file_size(*request.body_file, ec) == size && !ec) return *request.body_file;
  }
  fs::path temp = m_store.temp_path();
  auto written = request.body_file ? copy_slice(*request.body_file, request.body_offset, size, temp)
                                   : write_file(temp, request.body);
  if (!written) return failure(500, "InternalError", written.error().message);
  return temp;
}

// ---------------------------------------------------------------------------------------------
// Access

Outcome<void> Handlers::require_token() const {
  if (m_c.token) return {};
  return failure(401, "Unauthorized",
                 "Authorization header with a Bearer token is required (create one with kbuild hub token)");
}

Outcome<void> Handlers::require_read() const {
  if (m_config.read == ReadAccess::token) return require_token();
  return {};
}

Outcome<void> Handlers::require_write(std::string_view ns) const {
  KB_TRY(require_token());
  if (!m_c.token->may_write(ns))
    return failure(403, "Forbidden",
                   "the token of " + m_c.token->user + " may not write to namespace " + std::string(ns));
  return {};
}

Outcome<Repo> Handlers::find_visible(const RepoId& id) {
  auto missing = failure(404, "RepoNotFound",
                         "Repository Not Found: " + std::string(repo_type_name(id.type)) + " " + id.full_name());
  if (!is_valid_namespace(id.ns) || !is_valid_repo_name(id.name)) return missing;
  KB_TRY_ASSIGN(auto repo, lift(m_store.find_repo(id)));
  if (!repo) return missing;
  // Rights follow the repo's own spelling: ids are found case-insensitively (Store::find_repo).
  if (repo->is_private && !(m_c.token && m_c.token->may_write(repo->id.ns))) return missing;
  return std::move(*repo);
}

Outcome<Repo> Handlers::read_repo(const RepoId& id) {
  KB_TRY(require_read());
  return find_visible(id);
}

Outcome<Repo> Handlers::write_repo(const RepoId& id) {
  KB_TRY(require_write(id.ns));
  KB_TRY_ASSIGN(Repo repo, find_visible(id));
  if (repo.id.ns != id.ns) KB_TRY(require_write(repo.id.ns));  // found under another spelling
  return repo;
}

// ---------------------------------------------------------------------------------------------
// Shared helpers

std::string Handlers::repo_url(const RepoId& id) const {
  return m_options.base_url + "/" + std::string(repo_type_url_prefix(id.type)) + id.full_name();
}

std::string Handlers::api_url(const RepoId& id) const {
  return m_options.base_url + "/api/" + std::string(repo_type_plural(id.type)) + "/" + id.full_name();
}

Outcome<std::string> Handlers::resolve_revision(const Repo& repo, const std::string& revision) {
  auto ref = [&](RefKind kind, std::string_view name) { return lift(m_store.find_ref(repo.key, kind, name)); };
  // A full commit id first, so that no branch or tag named like one can shadow it.
  if (std::string lower = lowercase(revision); is_commit_oid(lower)) {
    KB_TRY_ASSIGN(auto commit, lift(m_store.find_commit(repo.key, lower)));
    if (commit) return lower;
  }
  std::optional<std::string> target;
  std::int64_t number = 0;
  if (revision.starts_with("refs/heads/")) {
    KB_TRY_ASSIGN(target, ref(RefKind::branch, revision.substr(11)));
  } else if (revision.starts_with("refs/tags/")) {
    KB_TRY_ASSIGN(target, ref(RefKind::tag, revision.substr(10)));
  } else if (revision.starts_with("refs/pr/")) {
    if (!parse_pull_request_ref(revision, number))
      return bad_request("invalid pull request reference \"" + revision + "\": use refs/pr/<number>");
    KB_TRY_ASSIGN(target, ref(RefKind::pr, std::to_string(number)));
  } else {
    KB_TRY_ASSIGN(target, ref(RefKind::branch, revision));
    if (!target) {
      KB_TRY_ASSIGN(target, ref(RefKind::tag, revision));
    }
  }
  if (!target) return revision_not_found(revision);
  return *target;
}

Outcome<FileMap> Handlers::files_at(const Repo& repo, const std::string& commit) {
  return lift(m_store.files(repo.key, commit));
}

std::string Handlers::small_text(const FileMap& files, const std::string& path) {
  auto it = files.find(path);
  if (it == files.end() || it->second.size > (1 << 20)) return {};
  auto content = m_store.read_blob(it->second.sha256);
  return content ? *content : std::string();
}

}  // namespace kbuild::server
