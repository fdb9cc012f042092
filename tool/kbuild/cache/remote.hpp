#pragma once
// The shared tier of the compile cache: a plain HTTP file server that stores what it is given with
// PUT and returns it with GET (nginx with WebDAV's PUT, bazel-remote's or ccache's HTTP storage, an
// S3 gateway). kbuild stores the same two kinds of file there as in the local cache, under the same
// relative paths (docs/scale.md, "Remote compile cache"):
//   <URL>/objects/<k[0:2]>/<k>      a job output with its "KBOBJ1 <sha256> <size>" header
//   <URL>/manifests/<m[0:2]>/<m>    a manifest (JSON, the local cache's format)
// Everything fetched is verified exactly like the local cache's files (object bytes against their
// sha256, manifests against their schema) before it is used or kept; anything else is a miss.
// The remote tier never fails a build: an error is a warning, and after one transport failure the
// remote is not asked again in this run (a dead server costs one timeout, not one per job).

#include <optional>
#include <string>

#include "kbuild/util/result.hpp"
#include "kbuild/util/system.hpp"

namespace kbuild::cache {

class RemoteStore {
 public:
  virtual ~RemoteStore() = default;
  /// The file at `path` (relative, e.g. "objects/ab/ab12..."); nullopt when the server has none.
  virtual Result<std::optional<std::string>> get(const std::string& path) = 0;
  virtual Result<void> put(const std::string& path, const std::string& bytes) = 0;
};

struct RemoteSettings {
  std::string url;  ///< http(s)://host[:port]/prefix, without a trailing slash
  bool writable = true;
  std::optional<std::string> bearer_token;
  std::optional<std::string> basic_user;
  std::optional<std::string> basic_password;
  double timeout_seconds = 10;
};

/// From the environment: KBUILD_REMOTE_CACHE=URL (unset or empty: no remote tier),
/// KBUILD_REMOTE_CACHE_MODE=read-write|read-only (default read-write; read-only for untrusted jobs),
/// KBUILD_REMOTE_CACHE_TOKEN (Authorization: Bearer), KBUILD_REMOTE_CACHE_USER and
/// KBUILD_REMOTE_CACHE_PASSWORD (basic auth), KBUILD_REMOTE_CACHE_TIMEOUT (seconds per request,
/// default 10). Malformed values are a usage error.
Result<std::optional<RemoteSettings>> remote_settings(const util::Environment& env);

}  // namespace kbuild::cache
