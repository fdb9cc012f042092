#pragma once
// The registry's HTTP logic: one request in, one response out, over a Store and a Config. No
// sockets: listener.cpp feeds it from cpp-httplib, and tests (or the Hub client, through an
// HttpTransport) call handle() directly.
//
// Endpoints ({T} = models|datasets|spaces|kernels, {P} = ""|datasets/|spaces/|kernels/, {id} =
// namespace/name; "read" and "write" name the access check, see below). routes.cpp holds the same list
// as the route table that dispatch walks; the handlers are in routes_*.cpp:
//
// clang-format off
//   GET    /api/whoami-v2                              token  {"name","type","orgs":[{"name"}],"auth":{..}}
//   POST   /api/validate-yaml                          -      {}
//   GET    /api/agent-harnesses                        -      {"standardEnvVars":[],"harnesses":{}}
//   POST   /api/repos/create                           write  {"url","name","id"}; 409 {"error","url"}
//   DELETE /api/repos/delete                           write  "OK"
//   GET    /api/organizations/{name}/overview          read   {"name",...,"trustedKernelPublisher"}
//   GET    /api/{T}/{id}[/revision/{rev}]              read   repo info ("id","sha","siblings",...)
//   GET    /api/{T}/{id}/refs[?include_prs=1]          read   {"branches","tags","converts"[,"pullRequests"]}
//   POST   /api/{T}/{id}/branch/{branch}               write  body {"startingPoint"?}; 409 if it exists
//   DELETE /api/{T}/{id}/branch/{branch}               write  "main" cannot be deleted
//   POST   /api/{T}/{id}/tag/{rev}                     write  body {"tag","message"?}; 409 if it exists
//   DELETE /api/{T}/{id}/tag/{tag}                     write
//   GET    /api/{T}/{id}/tree/{rev}[/{path}]           read   ?recursive=&expand=&cursor=; Link rel=next
//   POST   /api/{T}/{id}/paths-info/{rev}              read   form or JSON "paths", "expand"
//   GET    /api/{T}/{id}/commits/{rev}                 read   [{"id","title","message","date","authors"}]
//   POST   /api/{T}/{id}/preupload/{rev}               write  {"files":[{"path","uploadMode",
//                                                             "shouldIgnore","oid"?}],"commitOid"}
//   POST   /api/{T}/{id}/commit/{rev}[?create_pr=1]    write  NDJSON in; {"success","commitOid",
//                                                             "commitUrl","hookOutput"[,"pullRequestUrl"]}
//   GET    /api/{T}/{id}/discussions                   read   ?p=&type=&status=&author=; {"discussions",
//                                                             "count","start","numClosedDiscussions"}
//   POST   /api/{T}/{id}/discussions                   write  {"title","description"?,"pullRequest"?}; {"num",..}
//   GET    /api/{T}/{id}/discussions/{num}             read   details: "events", PRs: "changes":{"base",
//                                                             "mergeCommitId"?},"filesWithConflicts"[,"diff"]
//   POST   /api/{T}/{id}/discussions/{num}/merge       write  {"comment"?}; 409 on conflicting files
//   POST   /api/{T}/{id}/discussions/{num}/status      write  {"status":"open"|"closed","comment"?}; {"newStatus"}
//   POST   /api/{T}/{id}/discussions/{num}/comment     write  {"comment"}; {"newMessage"}
//   GET    /api/{T}/{id}/xet-{read,write}-token/{rev}  -      400: this server speaks LFS only
//   POST   /{P}{id}.git/info/lfs/objects/batch         write  git-lfs batch API (upload only)
//   POST   /{P}{id}.git/info/lfs/objects/verify        write  {"oid","size"}: 200 when the repo may use it
//   HEAD   /{P}{id}/resolve/{rev}/{path}               read   ETag, X-Repo-Commit, Content-Length
//   GET    /{P}{id}/resolve/{rev}/{path}               read   content; "Range: bytes=..." gives 206
//   GET    /{T}/{id}                                   read   HTML: branches and tags (routes_web.cpp)
//   GET    /{P}{id}/tree/{rev}[/{path}]                read   HTML: a directory at a revision
//   GET    /{P}{id}/blob/{rev}/{path}                  read   HTML: a file, its download link, small text
//   PUT    /lfs/upload/{oid}?token=T                   token  single-PUT LFS upload
//   PUT    /lfs/upload/{oid}/{part}?token=T            token  one part of a multipart upload (ETag)
//   POST   /lfs/upload/{oid}?token=T                   token  multipart completion {"oid","parts"}
// clang-format on
//
// Routing: the path is split on '/' and each segment is percent-decoded on its own, so "%2F" inside
// a revision ("refs%2Fpr%2F1") or a tree path stays inside that segment. After tree/ and resolve/ the
// revision is one segment, and the segments after it, joined with '/', are the path in the repo. After
// revision/, commit/, commits/, preupload/, paths-info/, tag/ and branch/ every remaining segment,
// joined with '/', belongs to the revision (or branch or tag name), so "refs/pr/1" also works there
// unencoded; POST tag/ without a revision tags main. HEAD is answered like GET, without a body.
//
// Revisions resolve, in order: a 40-hex commit id of the repo (any case), so that no ref can shadow
// one; "refs/heads/B", "refs/tags/T", "refs/pr/N" (N a number without leading zeros, otherwise 400); a
// branch; a tag. New branches and tags may not be named like a 40- or 64-hex id (any case), HEAD (any
// case) or another of git's special refs, start with "refs/" (400), or take the name of a ref of the
// other kind (409). Commits go to branches (or refs/pr/N) only; with create_pr=1 a new pull request
// refs/pr/N on top of the revision is created instead (412 when parentCommit is not the revision's
// head). A commit needs at least one operation (400 otherwise, as on the Hub; huggingface_hub skips
// empty commits itself). Paths in commits, preupload, paths-info, tree and resolve are refused (400)
// when they hold '\\', a "~" component, or "%2e", "%2f", "%5c" in any case (sent encoded twice).
//
// Content access: blobs are stored once per server, but an object (sha256 oid) counts as present
// for repo R only when R may use it: it arrived through an LFS upload that R's batch handed out (the
// server records (R, oid) when the upload completes), or a commit of R (any, on any ref) references
// it. Otherwise the batch answers with an upload action (the client sends the bytes again; they must
// hash to the oid, and the stored blob is reused), verify answers 404, and a commit naming it fails
// with 400 as for an unknown object. A caller without write access to R learns nothing about which
// objects exist. Upload URLs (/lfs/upload/...) check their one-time token first (found by its SHA-256,
// then compared in constant time) and answer 404 alike for a wrong token, whether or not the object
// exists; a completed upload's URLs answer 200 (without storing anything) until they expire, so that
// a client retrying after a lost answer succeeds.
//
// Multipart uploads resume: when a batch of R asks to upload an object for which R has an unexpired,
// incomplete upload of the same size, the answer is that same upload (same token, part URLs and
// completion href, its expiry extended), so a client can skip the parts it sent already: parts
// received are kept until the completion or the expiry. Expired uploads lose their parts at the next
// batch and when the server starts.
//
// Discussions and pull requests share one numbering per repo; pull request N is refs/pr/N. One
// opened with POST .../discussions is a draft on the head of main until a commit to refs/pr/N opens
// it; a create_pr=1 commit opens one directly (into the branch it started from, main otherwise).
// Merging commits the three-way merge (base: the commit the pull request started from) onto the
// target branch and marks it merged, in one transaction.
//
// Access: an Authorization header ("Bearer <token>", or Basic with the token as password) that names
// no configured token is always 401 "Invalid credentials in Authorization header". "read": anyone
// (config read = "public") or any valid token (read = "token"); private repos are only visible to
// tokens that may write their namespace, and look missing (404 RepoNotFound) to others. "write": a
// token that may write the repo's namespace: 401 without a token, 403 with one that may not.
// "token": the one-time token of an LFS upload in the query, no Authorization needed.
//
// Errors: every 4xx/5xx carries X-Error-Code and X-Error-Message and, except on HEAD, the JSON body
// {"error": message}. Codes:
//
//   status  X-Error-Code         when
//   400     BadRequest           malformed request, invalid name or path, bad NDJSON line, empty
//                                commit, Xet token; ambiguous framing (listener.hpp)
//   401     Unauthorized         no or an unknown token
//   403     Forbidden            token may not write the namespace
//   404     RepoNotFound         unknown (or hidden private) repo
//   404     RevisionNotFound     unknown branch, tag, pull request or commit
//   404     EntryNotFound        unknown file or folder (resolve also sends X-Repo-Commit)
//   404     NotFound             no such route, organisation, discussion or upload
//   405     MethodNotAllowed     known route, other method
//   408     RequestTimeout       the request did not arrive in time (listener.hpp)
//   409     Conflict             repo, branch or tag exists; a pull request's files conflict
//   412     PreconditionFailed   parentCommit is not the branch head
//   413     PayloadTooLarge      body or LFS object above the configured limits ([limits] of config.hpp:
//                                max-commit-body for commits, max-json-body for every other body)
//   416     RangeNotSatisfiable  Range starts after the end of the file
//   429     TooManyConnections   too many connections from one address (listener.hpp)
//   431     RequestHeaderFieldsTooLarge  too many or too long request headers (listener.hpp)
//   500     InternalError        storage failure
//
// The server never sends a Xet signal (no xetHash, X-Xet-* headers, or "transfer":"xet").
//
// Thread safety: handle() and route() may be called concurrently.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

#include "kbuild/net/http.hpp"
#include "kbuild/server/config.hpp"
#include "kbuild/server/guard.hpp"
#include "kbuild/server/store.hpp"

namespace kbuild::server {

struct RouterOptions {
  /// Public base URL used in every absolute URL the server hands out (repo URLs, LFS hrefs, Link
  /// headers), without a trailing '/'.
  std::string base_url = "http://127.0.0.1:8080";
  /// Timestamps of commits, discussions and upload expiry; null: the real clock. Must outlive the Router.
  const util::Clock* clock = nullptr;
  /// Tree entries per page (the Hub: 1000, or 50 with expand=true).
  std::size_t tree_page_size = 1000;
  std::size_t tree_page_size_expanded = 50;
  /// Lifetime of LFS upload URLs.
  std::int64_t upload_ttl_ms = 3600 * 1000;
  /// When set, the configuration is read again from this file (config.toml) whenever its size,
  /// modification time or inode changes, so `kbuild hub token` and `kbuild hub org` take effect
  /// without a restart. A file that no longer parses keeps the previous configuration in force
  /// (and `on_config_error` hears why). [limits] are fixed at start (the listener uses them).
  std::filesystem::path config_file;
  std::function<void(const std::string&)> on_config_error;
};

/// A byte range of a file to send as the response body (downloads are streamed, not held in memory).
struct FileBody {
  std::filesystem::path path;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

/// A response whose body is either `response.body` or, when set, `file`. `response.headers` holds
/// Content-Length for both (and for HEAD).
struct Reply {
  net::HttpResponse response;
  std::optional<FileBody> file;
};

struct Failure;  // handlers.hpp

class Router {
 public:
  Router(Store& store, Config config, RouterOptions options);

  /// Handles one request; `request.url` is a target ("/api/...?q") or an absolute URL whose scheme
  /// and host are ignored. File bodies are read into `body`.
  net::HttpResponse handle(const net::HttpRequest& request);
  /// Same, but large file bodies come back as a FileBody. With `body_is_spool`, `request.body_file` is
  /// a temporary file inside store.temp_dir() that the router may move away (the caller removes it if
  /// it is still there afterwards); otherwise body_file is only read.
  Reply route(const net::HttpRequest& request, bool body_is_spool = false);
  /// Before a body is read: the answer to a request that its headers already decide against (a
  /// malformed target, a wrong or missing token, no right to write to the namespace or repo, an
  /// unknown upload token), or nullopt when the body may be read and route() called. The caller
  /// closes the connection after such an answer, leaving the body unread.
  std::optional<Reply> admit(const net::HttpRequest& request);

  /// The configuration in force (reloaded from options.config_file when it changed).
  std::shared_ptr<const Config> config() const;
  const RouterOptions& options() const { return m_options; }

  /// One request being handled (defined in handlers.hpp, private to the server module).
  struct Context;

 private:
  Reply dispatch(Context& context);
  /// The Authorization header (not on upload URLs, which carry their own token): sets the context's
  /// token, or the failure (401, or 429 for an address guessing tokens).
  std::optional<Failure> authenticate(Context& context);

  Store& m_store;
  RouterOptions m_options;
  mutable std::mutex m_config_mutex;
  mutable std::shared_ptr<const Config> m_config;
  mutable std::tuple<std::int64_t, std::uint64_t, std::uint64_t> m_config_stamp{};  ///< mtime, size, inode
  /// 20 invalid tokens per client address and minute, then 429 until the minute ends.
  TokenFailureLimiter m_token_failures{20, 60'000};
};

}  // namespace kbuild::server
