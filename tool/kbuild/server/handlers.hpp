#pragma once
// Private to the server module: what the route handlers share. Router::dispatch (router.cpp) looks a
// request up in the route table (routes.hpp), checks the route's access rule, and calls one member of
// Handlers with what the route's pattern captured (Match). Handlers are grouped by concern:
// routes_repos.cpp, routes_refs.cpp, routes_files.cpp, routes_commits.cpp and routes_lfs.cpp. They
// answer with an Outcome: a Reply, or a Failure that becomes an error response (router.hpp, "Errors").

#include <cstdint>
#include <expected>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "kbuild/server/file_io.hpp"
#include "kbuild/server/router.hpp"
#include "kbuild/server/wire.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::server {

using Json = nlohmann::ordered_json;

// ---------------------------------------------------------------------------------------------
// Failures and replies

/// An HTTP error answer; handlers return it as the error of an Outcome.
struct Failure {
  int status = 400;
  std::string code;  ///< X-Error-Code
  std::string message;
  std::vector<std::pair<std::string, std::string>> headers;  ///< extra headers (X-Repo-Commit)
};

template <class T>
using Outcome = std::expected<T, Failure>;

std::unexpected<Failure> failure(int status, std::string code, std::string message);
std::unexpected<Failure> bad_request(std::string message);
std::unexpected<Failure> not_found(std::string message);
std::unexpected<Failure> revision_not_found(std::string_view revision);
std::unexpected<Failure> too_large(std::uint64_t limit);

/// Turns a storage error into a 500 InternalError.
template <class T>
Outcome<T> lift(Result<T> result) {
  if (!result) return failure(500, "InternalError", result.error().message);
  if constexpr (std::is_void_v<T>)
    return {};
  else
    return std::move(*result);
}

/// Turns a parse error (wire.hpp) into a 400 BadRequest.
template <class T>
Outcome<T> parsed(Parsed<T> result) {
  if (!result) return bad_request(std::move(result.error()));
  if constexpr (std::is_void_v<T>)
    return {};
  else
    return std::move(*result);
}

/// JSON text as sent (invalid UTF-8 replaced).
std::string dump(const Json& value);
/// A JSON answer with Content-Length; without a body for HEAD.
Reply json_reply(const Json& body, bool head, int status = 200, std::string_view content_type = "application/json");
Reply text_reply(std::string text, bool head);
/// An error answer: X-Error-Code, X-Error-Message, the Failure's headers, and {"error": message}.
Reply error_reply(const Failure& error, bool head);

/// The "lfs" object of a file in listings: {<hash_key>: sha256, "size", "pointerSize"}.
Json lfs_json(const FileEntry& file, const char* hash_key);

// ---------------------------------------------------------------------------------------------
// One request

struct Router::Context {
  Context(const net::HttpRequest& r, bool spool)
      : request(r), body_is_spool(spool), method(util::ascii_uppercase(r.method)), head(method == "HEAD") {}

  const net::HttpRequest& request;
  bool body_is_spool = false;
  std::string method;  ///< upper case
  bool head = false;
  std::vector<std::string> segments;  ///< decoded path segments
  std::multimap<std::string, std::string> query;
  std::shared_ptr<const Config> config;  ///< in force for this request; `token` points into it
  const TokenEntry* token = nullptr;     ///< from the Authorization header
  std::int64_t now = 0;

  std::optional<std::string> param(std::string_view key) const {
    auto it = query.find(std::string(key));
    if (it == query.end()) return std::nullopt;
    return it->second;
  }
  bool flag(std::string_view key) const { return truthy(param(key).value_or("")); }
  /// Size of the body without reading it.
  std::uint64_t body_size() const;
};

/// What a route's pattern captured (routes.hpp) and, after a read or write access check of a route
/// with {id}, the repo itself.
struct Match {
  bool has_id = false;  ///< the pattern has {id}
  RepoId id;
  Repo repo;
  std::string revision;             ///< {rev}
  std::string path;                 ///< {path}
  std::string name;                 ///< {name}
  std::string oid;                  ///< {oid}
  std::optional<std::string> part;  ///< {part}
};

// ---------------------------------------------------------------------------------------------
// The handlers

class Handlers {
 public:
  Handlers(Store& store, const Config& config, const RouterOptions& options, Router::Context& context)
      : m_store(store), m_config(config), m_options(options), m_c(context) {}

  // --- access checks (router.hpp, "Access"); dispatch applies the route's before calling it ---
  Outcome<void> require_token() const;
  Outcome<void> require_read() const;
  Outcome<void> require_write(std::string_view ns) const;
  /// The repo, when it exists and the caller may see it; 404 RepoNotFound otherwise.
  Outcome<Repo> find_visible(const RepoId& id);
  Outcome<Repo> read_repo(const RepoId& id);
  Outcome<Repo> write_repo(const RepoId& id);

  // --- routes_repos.cpp ---
  Outcome<Reply> whoami(const Match& m);
  Outcome<Reply> validate_yaml(const Match& m);
  Outcome<Reply> agent_harnesses(const Match& m);
  Outcome<Reply> create_repo(const Match& m);
  Outcome<Reply> delete_repo(const Match& m);
  Outcome<Reply> organization(const Match& m);
  Outcome<Reply> repo_info(const Match& m);
  Outcome<Reply> xet_token(const Match& m);
  // --- routes_refs.cpp ---
  Outcome<Reply> refs(const Match& m);
  Outcome<Reply> create_branch(const Match& m);
  Outcome<Reply> delete_branch(const Match& m);
  Outcome<Reply> create_tag(const Match& m);
  Outcome<Reply> delete_tag(const Match& m);
  // --- routes_files.cpp ---
  Outcome<Reply> tree(const Match& m);
  Outcome<Reply> paths_info(const Match& m);
  Outcome<Reply> resolve(const Match& m);
  // --- routes_web.cpp ---
  Outcome<Reply> web_repo(const Match& m);
  Outcome<Reply> web_tree(const Match& m);
  Outcome<Reply> web_blob(const Match& m);
  // --- routes_commits.cpp ---
  Outcome<Reply> commits(const Match& m);
  Outcome<Reply> preupload(const Match& m);
  Outcome<Reply> commit(const Match& m);
  // --- routes_lfs.cpp ---
  Outcome<Reply> lfs_batch(const Match& m);
  Outcome<Reply> lfs_verify(const Match& m);
  Outcome<Reply> upload_object(const Match& m);
  Outcome<Reply> upload_part(const Match& m);
  Outcome<Reply> complete_upload(const Match& m);
  // --- routes_discussions.cpp ---
  Outcome<Reply> discussions(const Match& m);
  Outcome<Reply> create_discussion(const Match& m);
  Outcome<Reply> discussion(const Match& m);
  Outcome<Reply> merge_discussion(const Match& m);
  Outcome<Reply> discussion_status(const Match& m);
  Outcome<Reply> comment_discussion(const Match& m);

  // --- shared by the handlers (handlers.cpp) ---
  std::string repo_url(const RepoId& id) const;
  std::string api_url(const RepoId& id) const;
  /// The commit a revision names (router.hpp: "Revisions resolve, in order: ..."); 404 RevisionNotFound,
  /// 400 for "refs/pr/" followed by anything but a number.
  Outcome<std::string> resolve_revision(const Repo& repo, const std::string& revision);
  Outcome<FileMap> files_at(const Repo& repo, const std::string& commit);
  /// Content of a small text file of a commit ("" when absent or large).
  std::string small_text(const FileMap& files, const std::string& path);
  /// The request body, read into memory; 413 above `limit`.
  Outcome<std::string> body(std::uint64_t limit);
  /// The request body's lines, read from memory or from the spooled file; 413 above `limit`.
  Outcome<std::unique_ptr<LineReader>> body_lines(std::uint64_t limit);
  /// The request body as a file inside the store's temp dir, for adopt_blob() or a part rename: the
  /// spooled body itself when it is one whole file, otherwise a copy; 413 above `limit`.
  Outcome<std::filesystem::path> body_as_temp_file(std::uint64_t limit);
  /// The upload an /lfs/upload/ URL names by its token (which must be one for its oid; completed
  /// uploads included, until they expire); 404 NotFound otherwise (routes_lfs.cpp). Also checked
  /// before the body is read (Router::admit).
  Outcome<PendingUpload> pending_upload(const Match& m);

 private:
  /// Discussion `number` (decimal text) of the repo; 404 NotFound otherwise (routes_discussions.cpp).
  Outcome<Discussion> find_discussion(const Repo& repo, const std::string& number);
  /// One object's answer in an LFS batch of `repo` (routes_lfs.cpp).
  Outcome<Json> batch_answer(const Repo& repo, const LfsObjectRequest& object, const std::string& verify);

  Store& m_store;
  const Config& m_config;
  const RouterOptions& m_options;
  Router::Context& m_c;
};

}  // namespace kbuild::server
