#pragma once
// A client for the Hub's HTTP API (see ../shared/spec/hub-api.md) over an HttpTransport: the calls
// publishing needs. Responses other than 2xx become Errors with a specific message and hint for
// 401, 403, 404, 409 and 412, and exit code 4. Retryable failures (408, 429, 5xx, transport errors)
// are retried per RetryPolicy. The token is sent as "authorization: Bearer ..." and never appears
// in logs or errors.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/hub/commit_plan.hpp"
#include "kbuild/hub/http.hpp"
#include "kbuild/hub/retry.hpp"
#include "kbuild/hub/token.hpp"
#include "kbuild/util/result.hpp"

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

/// Traffic counters of a client, for --json and benchmarks.
struct TrafficStats {
  std::uint64_t requests = 0;
  std::uint64_t lfs_objects_uploaded = 0;
  std::uint64_t lfs_bytes_uploaded = 0;
  std::uint64_t inline_bytes = 0;
};

class HubClient {
 public:
  using Sleeper = std::function<void(double seconds)>;
  using Logger = std::function<void(const std::string&)>;

  HubClient(HttpTransport& transport, std::string endpoint, std::optional<Token> token, RetryPolicy retry = {},
            Sleeper sleep = {}, Logger log = {});

  const std::string& endpoint() const { return m_endpoint; }
  const TrafficStats& stats() const { return m_stats; }
  /// The web URL of a repository, e.g. <endpoint>/kernels/org/name.
  std::string repo_url(const RepoRef& repo) const;

  Result<std::string> whoami();  ///< the user name
  /// Creates the repository (409 "already exists" is fine with exist_ok); returns its URL.
  Result<std::string> create_repo(const RepoRef& repo, bool private_repo, bool exist_ok);
  Result<Refs> list_refs(const RepoRef& repo);
  Result<void> create_branch(const RepoRef& repo, const std::string& branch, const std::optional<std::string>& from);
  Result<void> create_tag(const RepoRef& repo, const std::string& revision, const std::string& tag);
  Result<void> delete_tag(const RepoRef& repo, const std::string& tag);
  /// Every file of the tree at `revision`, recursively (follows pagination).
  Result<std::vector<RemoteFile>> list_tree(const RepoRef& repo, const std::string& revision);
  /// The server's upload mode per file (asked 256 files at a time).
  Result<std::map<std::string, UploadMode>> preupload(const RepoRef& repo, const std::string& revision,
                                                      const std::vector<LocalFile>& files);
  /// Uploads LFS objects the server does not have yet (batch API; basic or multipart; verify).
  Result<void> upload_lfs(const RepoRef& repo, const std::string& revision, const std::vector<LocalFile>& files,
                          const std::function<void(std::uint64_t, std::uint64_t)>& progress = {});
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
  std::expected<HttpResponse, Error> send(const Call& call, const std::vector<int>& accepted = {});
  std::expected<HttpResponse, TransportError> send_with_retries(HttpRequest request, bool retry);
  Error error_for(const HttpResponse& response, const Call& call) const;
  std::string api(const RepoRef& repo) const;
  std::string prefix(const RepoRef& repo) const;
  void log(const std::string& line) const;

  HttpTransport& m_transport;
  std::string m_endpoint;
  std::optional<Token> m_token;
  RetryPolicy m_retry;
  Sleeper m_sleep;
  Logger m_log;
  TrafficStats m_stats;
};

}  // namespace kbuild::hub
