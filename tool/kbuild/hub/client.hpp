#pragma once
// A client for the Hub's HTTP API (the routes server/router.hpp lists, as huggingface_hub calls them)
// over an net::HttpTransport: the calls
// publishing needs. Responses other than 2xx become Errors with a specific message and hint for
// 401, 403, 404, 409 and 412, and exit code 4. Retryable failures (408, 429, 5xx, transport errors)
// are retried per RetryPolicy. The token is sent as "authorization: Bearer ..." and never appears
// in logs or errors.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/hub/commit_plan.hpp"
#include "kbuild/hub/retry.hpp"
#include "kbuild/hub/token.hpp"
#include "kbuild/net/http.hpp"
#include "kbuild/util/result.hpp"
#include "kbuild/util/system.hpp"

namespace kbuild::hub {

struct RepoRef {
  std::string type = "kernel";  ///< model, dataset, space, kernel
  std::string id;               ///< "namespace/name"
};

struct Refs {
  std::map<std::string, std::string> branches;  ///< name -> commit oid
  std::map<std::string, std::string> tags;
};

enum class UploadMode { regular, lfs };

struct CommitResult {
  std::string oid;
  std::string url;
  std::optional<std::string> pull_request_url;
};

/// An entry of a (non-recursive) folder listing.
struct TreeEntry {
  std::string path;  ///< from the repository root
  bool is_dir = false;
  std::string oid;  ///< git blob id for files, tree id for folders
  std::uint64_t size = 0;
  std::optional<std::string> lfs_sha256;
};

/// GET /api/organizations/<name>/overview, the part kbuild reads.
struct OrganizationOverview {
  std::string name;
  bool trusted_kernel_publisher = false;
};

/// What a file download answered besides the bytes.
struct DownloadedFile {
  std::string etag;    ///< the Hub's ETag without quotes: the LFS sha256, or the git blob id
  std::string commit;  ///< X-Repo-Commit: the commit the revision resolved to
  std::uint64_t size = 0;
};

/// Traffic counters of a client, for --json and benchmarks.
struct TrafficStats {
  std::uint64_t requests = 0;
  std::uint64_t lfs_objects_uploaded = 0;
  std::uint64_t lfs_bytes_uploaded = 0;
  std::uint64_t inline_bytes = 0;
  std::uint64_t bytes_downloaded = 0;
};

/// Where the parts of multipart LFS uploads are remembered (publish keeps them under .kbuild/), keyed
/// by object and upload session (the completion URL without its credentials: net::url_without_credentials).
struct LfsResume {
  std::function<std::map<std::uint64_t, std::string>(const std::string& oid, const std::string& session)> load;
  std::function<void(const std::string& oid, const std::string& session, std::uint64_t part, const std::string& etag)>
      save;
  std::function<void(const std::string& oid)> forget;  ///< the object is uploaded
};

class HubClient {
 public:
  using Sleeper = std::function<void(double seconds)>;
  using Logger = std::function<void(const std::string&)>;

  HubClient(net::HttpTransport& transport, std::string endpoint, std::optional<Token> token, RetryPolicy retry = {},
            Sleeper sleep = {}, Logger log = {});

  const std::string& endpoint() const { return m_endpoint; }
  /// Called before every retry with what failed and how long the wait is (for the terminal; the
  /// verbose log has it anyway).
  void set_retry_notice(Logger notice) { m_notice = std::move(notice); }
  const TrafficStats& stats() const { return m_stats; }
  /// Times requests for the log (default: the real clock); `clock` must outlive the client.
  void set_clock(const util::Clock& clock) { m_clock = &clock; }
  /// The web URL of a repository, e.g. <endpoint>/kernels/org/name.
  std::string repo_url(const RepoRef& repo) const;

  Result<std::string> whoami();  ///< the user name
  /// Creates the repository (409 "already exists" is fine with exist_ok); returns its URL.
  Result<std::string> create_repo(const RepoRef& repo, bool private_repo, bool exist_ok);
  Result<Refs> list_refs(const RepoRef& repo);
  /// Creates a branch; true when this call created it, false when it already existed.
  Result<bool> create_branch(const RepoRef& repo, const std::string& branch, const std::optional<std::string>& from);
  /// Tags commit `revision`; also succeeds when the tag already points at it (a retried request).
  Result<void> create_tag(const RepoRef& repo, const std::string& revision, const std::string& tag);
  /// Deletes a tag; a missing tag is fine.
  Result<void> delete_tag(const RepoRef& repo, const std::string& tag);
  /// Every file of the tree at `revision` (below `path` when given), recursively (follows pagination).
  Result<std::vector<RemoteFile>> list_tree(const RepoRef& repo, const std::string& revision,
                                            const std::string& path = "");
  /// The entries directly under `path` at `revision` (follows pagination). A missing folder is an
  /// empty listing; a missing repository or revision is an error.
  Result<std::vector<TreeEntry>> list_folder(const RepoRef& repo, const std::string& revision, const std::string& path);
  /// The overview of an organisation; nullopt when there is none of that name (404).
  Result<std::optional<OrganizationOverview>> organization_overview(const std::string& name);
  /// Downloads a small file (at most `max_bytes`) into memory.
  Result<std::string> download_text(const RepoRef& repo, const std::string& revision, const std::string& path,
                                    std::uint64_t max_bytes = 16 << 20);
  /// Downloads a file to `destination` (streamed; created or truncated). Redirects are followed;
  /// the token is only sent to the endpoint's own host. On error `destination` may hold a partial
  /// file: the caller owns it.
  Result<DownloadedFile> download_file(const RepoRef& repo, const std::string& revision, const std::string& path,
                                       const std::filesystem::path& destination);
  /// The server's upload mode per file (asked 256 files at a time).
  Result<std::map<std::string, UploadMode>> preupload(const RepoRef& repo, const std::string& revision,
                                                      const std::vector<LocalFile>& files);
  /// Uploads LFS objects the server does not have yet (batch API; basic or multipart; verify).
  /// With `resume`, the parts of a multipart upload the server acknowledged are remembered, and an
  /// interrupted upload of the same session continues from them.
  Result<void> upload_lfs(const RepoRef& repo, const std::string& revision, const std::vector<LocalFile>& files,
                          const std::function<void(std::uint64_t, std::uint64_t)>& progress = {},
                          const LfsResume* resume = nullptr);
  Result<CommitResult> commit(const RepoRef& repo, const std::string& revision, const std::string& ndjson,
                              bool create_pr);

 private:
  struct Call {
    std::string method = "GET";
    std::string url;
    std::string body;
    std::string content_type;
    bool authorize = true;
    bool retry = true;
    std::string what;  ///< for messages: "create repository org/name"
  };
  std::expected<net::HttpResponse, Error> send(const Call& call, const std::vector<int>& accepted = {});
  std::expected<net::HttpResponse, net::TransportError> send_with_retries(net::HttpRequest request, bool retry);
  /// The error for a non-2xx answer: kind http, the status, a specific message and hint.
  Error error_for(const net::HttpResponse& response, const Call& call) const;
  Error describe_status(const net::HttpResponse& response, const Call& call) const;
  std::string api(const RepoRef& repo) const;
  std::string prefix(const RepoRef& repo) const;
  std::string resolve_url(const RepoRef& repo, const std::string& revision, const std::string& path) const;
  /// The LFS batch answer (JSON text) for `files`.
  Result<std::string> lfs_batch(const RepoRef& repo, const std::string& revision,
                                const std::vector<const LocalFile*>& files);
  /// Uploads a file in parts; `upload` is the batch answer's upload action (JSON text).
  Result<void> upload_multipart(const LocalFile& file, const std::string& upload, const LfsResume* resume,
                                const std::function<void(std::uint64_t)>& progress);
  /// Sends an upload body (retried, rewound); the answer's ETag is kept in m_last_etag.
  Result<void> put_body(net::HttpRequest put, const std::string& what);
  /// GET that follows up to 5 redirects, with the token only for the endpoint's host.
  std::expected<net::HttpResponse, Error> get_following(net::HttpRequest request, const std::string& what,
                                                        net::Headers* first_headers = nullptr);
  void log(const std::string& line) const;

  net::HttpTransport& m_transport;
  std::string m_endpoint;
  std::optional<Token> m_token;
  RetryPolicy m_retry;
  Sleeper m_sleep;
  Logger m_log;
  const util::Clock* m_clock;
  Logger m_notice;
  TrafficStats m_stats;
  std::string m_last_etag;
};

}  // namespace kbuild::hub
