#pragma once
// Publishing as data: what a commit must add and delete so that a branch holds the local files.
// Pure functions, unit-tested; the client executes the plan (hub/publish.hpp).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/util/fs.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::hub {

/// A file to publish: its path in the repository and its identity on the Hub.
struct LocalFile {
  std::string path;  ///< in the repository, '/'-separated
  std::filesystem::path source;
  std::uint64_t size = 0;
  std::string sha256;   ///< hex, the LFS oid
  std::string git_oid;  ///< hex, the git blob id of the content
  std::string sample;   ///< the first 512 bytes (preupload sends them for the inline-or-LFS choice)
  /// The bytes themselves for a file made in memory (the model card); then `source` is empty.
  std::optional<std::string> content = std::nullopt;
};

/// A file of the remote tree (list_repo_tree, recursive).
struct RemoteFile {
  std::string path;
  std::string oid;  ///< git blob id (of the pointer for LFS files)
  std::uint64_t size = 0;
  std::optional<std::string> lfs_sha256;
};

struct CommitPlan {
  std::vector<LocalFile> adds;       ///< new or changed
  std::vector<std::string> deletes;  ///< stale remote files
  std::vector<std::string> unchanged;
  bool empty() const { return adds.empty() && deletes.empty(); }
};

/// Adds every local file whose content differs from the remote one (by LFS sha256 or git blob id);
/// deletes remote files that start with one of `owned_prefixes` and are not local. `owned_prefixes`
/// are e.g. "build/<variant>/" for the variants being published (others stay untouched).
CommitPlan plan_commit(const std::vector<LocalFile>& local, const std::vector<RemoteFile>& remote,
                       const std::vector<std::string>& owned_prefixes);

/// A file made in memory, e.g. the model card.
LocalFile describe_bytes(std::string content, std::string repo_path);

/// Streams a file once: size, SHA-256, git blob id and sample.
Result<LocalFile> describe_file(const util::FileSystem& fs, const std::filesystem::path& source, std::string repo_path);

/// A semantic version tag "vMAJOR.MINOR.PATCH"; returns MAJOR, or nullopt if `tag` is not one.
std::optional<std::int64_t> tag_major(const std::string& tag);

struct CommitOp {
  enum class Kind { add_inline, add_lfs, remove } kind = Kind::add_inline;
  std::string path;
  std::string content_base64;  ///< add_inline
  std::string sha256;          ///< add_lfs
  std::uint64_t size = 0;      ///< add_lfs
};

/// The NDJSON body of POST /api/{type}s/{repo}/commit/{rev}: a header line {"key":"header",
/// "value":{"summary","description","parentCommit"?}}, then one line per operation
/// ("file" with base64 content, "lfsFile" with algo/oid/size, "deletedFile"), each ending in "\n".
std::string encode_commit(const std::string& summary, const std::string& description,
                          const std::optional<std::string>& parent_commit, const std::vector<CommitOp>& ops);

}  // namespace kbuild::hub
