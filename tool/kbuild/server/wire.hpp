#pragma once
// What clients send the registry, parsed into plain structs: request bodies (JSON, the NDJSON lines
// of a commit, forms), query strings, and the headers that carry data (Authorization, Range). Nothing
// here touches the store or builds a response: a parse error is the message of a 400 BadRequest.

#include <cstdint>
#include <expected>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/server/repo_types.hpp"

namespace kbuild::server {

/// A parsed value, or why the input is malformed (the message of a 400 BadRequest).
template <class T>
using Parsed = std::expected<T, std::string>;

// ---------------------------------------------------------------------------------------------
// Text, forms and headers

std::string lowercase(std::string_view text);
/// application/x-www-form-urlencoded (also query strings): '&'-separated pairs, '+' is a space, then
/// percent-decoding (a value that does not decode stays as it is).
std::multimap<std::string, std::string> parse_form(std::string_view text);
/// "1", "true" or "yes", in any case.
bool truthy(std::string_view value);
/// Base64 (standard alphabet; padding optional, line breaks ignored). False when `text` is not base64.
bool decode_base64(std::string_view text, std::string& out);
/// Strips one trailing '/' (folder paths may carry one).
std::string folder_path(std::string path);
/// A path inside a repo that the server accepts: is_valid_repo_path, and no '\\', no "~" component,
/// and no percent-escape of '.', '/' or '\\' ("%2e", "%2f", "%5c" in any case: a client that sends
/// one encoded twice, or hopes that something decodes it later).
bool is_safe_repo_path(std::string_view path);
/// A branch or tag name that cannot be mistaken for something else: is_valid_ref_name, and not a 40-
/// or 64-hex id (any case), not HEAD (any case) or another of git's special refs (FETCH_HEAD,
/// ORIG_HEAD, MERGE_HEAD, ...), not starting with "refs/", and without a percent-escape of '.', '/'
/// or '\\' ("%2e%2e" would become ".." wherever it is decoded once more).
bool is_unambiguous_ref_name(std::string_view name);
/// "refs/pr/N" with N a positive decimal number without leading zeros; N in `number`.
bool parse_pull_request_ref(std::string_view revision, std::int64_t& number);

/// The token carried by an Authorization header, "Bearer <token>" or "Basic base64(user:token)";
/// nullopt for anything else.
std::optional<std::string> bearer_token(const std::string& header);

struct ByteRange {
  std::uint64_t first = 0, last = 0;  // inclusive
};

/// Parses a single "bytes=" Range header for a file of `size` bytes. nullopt: serve everything (no
/// header, multiple or malformed ranges); `unsatisfiable` is set when the range starts beyond the end.
std::optional<ByteRange> parse_range(const std::optional<std::string>& header, std::uint64_t size, bool& unsatisfiable);

// ---------------------------------------------------------------------------------------------
// JSON bodies of the API (router.hpp lists the endpoints)

/// POST /api/repos/create: {"name", "organization"?, "type"?, "private"?, "visibility"?}. The namespace
/// defaults to `default_namespace`; names are checked against the Hub's rules.
struct CreateRepoRequest {
  RepoId id;
  bool is_private = false;
};
Parsed<CreateRepoRequest> parse_create_repo(std::string_view body, const std::string& default_namespace);

/// DELETE /api/repos/delete: {"name", "organization"?, "type"?}.
Parsed<RepoId> parse_delete_repo(std::string_view body, const std::string& default_namespace);

/// POST .../branch/{name}: {"startingPoint"?} (an empty body is {}); the starting point, "main" by default.
Parsed<std::string> parse_branch_start(std::string_view body);

/// POST .../tag/{rev}: {"tag", "message"?}; the tag name, a valid ref name.
Parsed<std::string> parse_tag_name(std::string_view body);

/// POST .../paths-info/{rev}: JSON {"paths": [...], "expand"?} when `content_type` is application/json,
/// otherwise a form with "paths" (or "paths[]") repeated and "expand".
struct PathsInfoRequest {
  std::vector<std::string> paths;
  bool expand = false;
};
Parsed<PathsInfoRequest> parse_paths_info(std::string_view body, std::string_view content_type);

/// POST .../preupload/{rev}: {"files": [{"path", "size", "sample"? (base64)}], "gitIgnore"?}.
struct PreuploadFile {
  std::string path;  ///< a valid repo path
  std::uint64_t size = 0;
  std::string sample;  ///< decoded: the first bytes of the file
};
struct PreuploadRequest {
  std::vector<PreuploadFile> files;
  std::optional<std::string> git_ignore;  ///< replaces the repo's .gitignore when given
};
Parsed<PreuploadRequest> parse_preupload(std::string_view body);

/// POST {P}{id}.git/info/lfs/objects/batch: {"operation": "upload", "hash_algo"?: "sha256",
/// "objects": [{"oid", "size"}]}. Objects are not checked here: a bad one gets its own error answer.
struct LfsObjectRequest {
  std::optional<std::string> oid;
  std::optional<std::int64_t> size;
};
Parsed<std::vector<LfsObjectRequest>> parse_lfs_batch(std::string_view body);

/// POST {P}{id}.git/info/lfs/objects/verify: {"oid", "size"}.
struct LfsVerifyRequest {
  std::string oid;
  std::int64_t size = 0;
};
Parsed<LfsVerifyRequest> parse_lfs_verify(std::string_view body);

/// POST /lfs/upload/{oid}: {"oid", "parts": [{"partNumber", "etag"}]}. Missing fields read as ""/0;
/// `parts` is nullopt unless it is an array.
struct CompletedPart {
  std::int64_t number = 0;
  std::string etag;
};
struct MultipartCompletion {
  std::string oid;
  std::optional<std::vector<CompletedPart>> parts;
};
Parsed<MultipartCompletion> parse_multipart_completion(std::string_view body);

// ---------------------------------------------------------------------------------------------
// The NDJSON body of POST .../commit/{rev}: one {"key", "value": {...}} object per line. The first line
// is the header {"summary", "description"?, "parentCommit"?}; then "file" {"path", "content",
// "encoding"?: "utf-8"|"base64"}, "lfsFile" {"path", "oid", "size"?, "algo"?: "sha256"}, "deletedFile"
// {"path"} and "deletedFolder" {"path"}.

struct CommitHeader {
  std::string summary;
  std::string description;
  std::string parent_commit;  ///< "" or a 40-hex commit id
};

enum class CommitLineKind { header, file, lfs_file, deleted_file, deleted_folder };

struct CommitLine {
  CommitLineKind kind = CommitLineKind::header;
  std::string where;                 ///< "commit line N", to prefix messages about this line
  CommitHeader header;               ///< of a header line
  std::string path;                  ///< of the others: a valid repo path (a deleted folder's without a trailing '/')
  std::string content;               ///< file: the decoded content
  std::string oid;                   ///< lfsFile: 64 lowercase hex
  std::optional<std::int64_t> size;  ///< lfsFile: the announced size, when given
};

/// Parses a commit body one line at a time (the caller reads the lines, see file_io.hpp: LineReader),
/// so that only one line and one file's decoded content are held at once. A string value longer than
/// 64 KiB without escapes (the base64 content of a large file) is not copied into the JSON tree: it
/// is decoded straight from the line, which is freed first when possible, so a line of L bytes needs
/// about 1.75 L of memory.
class CommitParser {
 public:
  /// One line (without its '\n'), parsed and checked; nullopt for a blank line. The header must be
  /// the first non-blank line, and only the first.
  Parsed<std::optional<CommitLine>> parse(std::string&& line);

 private:
  std::size_t m_line = 0;
};

// ---------------------------------------------------------------------------------------------
// Discussions and pull requests

/// POST .../discussions: {"title" (3-200 characters once trimmed), "description"?, "pullRequest"?}.
struct NewDiscussionRequest {
  std::string title;
  std::string description;
  bool pull_request = false;
};
Parsed<NewDiscussionRequest> parse_new_discussion(std::string_view body);

/// POST .../discussions/{num}/status: {"status": "open"|"closed", "comment"?}.
struct StatusChangeRequest {
  std::string status;
  std::string comment;
};
Parsed<StatusChangeRequest> parse_status_change(std::string_view body);

/// POST .../discussions/{num}/comment: {"comment"} (not empty); .../merge: {"comment"?} or no body.
Parsed<std::string> parse_comment(std::string_view body, bool required);

}  // namespace kbuild::server
