#pragma once
// Storage of the Hub-compatible registry (`kbuild hub serve`): a content-addressed blob directory plus
// one SQLite database. The pure rules of the data model live in the headers included below, so that
// includers of this header see all of them: repo names and types (repo_types.hpp), git object ids and
// LFS pointers (object_ids.hpp), the LFS-or-regular decision (attributes.hpp); the blob directory is
// blob_store.hpp and the SQLite wrapper metadata_db.hpp. The HTTP layer lives in router.hpp.
//
// On-disk layout of a registry root:
//
//   <root>/config.toml                  server configuration (config.hpp)
//   <root>/hub.sqlite (+ -wal, -shm)    the database below, WAL mode, synchronous = FULL
//   <root>/blobs/<sha256[0:2]>/<sha256> every file content ever committed or uploaded, named by its
//                                       SHA-256; written to <root>/tmp first, fsynced, then renamed
//   <root>/tmp/                         temporary files (spooled request bodies, blobs being written);
//                                       none outlives its request, so `kbuild hub serve` empties it
//                                       at start (sweep_temporary)
//   <root>/uploads/<id>/<part>          parts of a multipart LFS upload (<id>: SHA-256 of its first token)
//                                       until it completes or expires
//
// Database schema (PRAGMA user_version = 2, schema.cpp; sizes in bytes, times in milliseconds since
// the epoch):
//
//   repos   (key INTEGER PRIMARY KEY, type TEXT  -- model|dataset|space|kernel
//            namespace TEXT, name TEXT, private INTEGER, object_id TEXT -- 24 hex, the Hub "_id"
//            created_ms INTEGER, UNIQUE(type, namespace, name))
//   commits (repo -> repos.key ON DELETE CASCADE, oid TEXT -- 40 hex, parent TEXT -- "" for the root
//            tree TEXT -- git tree id of the root, title TEXT, message TEXT, author TEXT,
//            time_ms INTEGER, PRIMARY KEY(repo, oid))
//   trees, tree_entries                 -- every commit's file list as shared git trees (tree_rows.hpp)
//   refs    (repo -> repos.key ON DELETE CASCADE, kind TEXT -- branch|tag|pr, name TEXT -- "main",
//            "v1.0", "3" (for refs/pr/3), target TEXT -- commit oid, PRIMARY KEY(repo, kind, name))
//   uploads (id TEXT PRIMARY KEY -- sha256 of its first token, repo -> repos.key ON DELETE CASCADE,
//            oid TEXT -- sha256, size INTEGER, chunk_size INTEGER -- 0 for a single PUT,
//            expires_ms INTEGER, completed INTEGER)
//            -- LFS uploads handed out by a repo's batch endpoint; completed ones stay until expiry
//   upload_tokens (token_hash TEXT PRIMARY KEY -- sha256 of a token, upload -> uploads.id ON DELETE
//            CASCADE)  -- the tokens of an upload; never the tokens themselves (schema version 3)
//   repo_objects (repo -> repos.key ON DELETE CASCADE, oid TEXT, PRIMARY KEY(repo, oid))
//            -- objects a repo received through its own LFS uploads (router.hpp, "Content access")
//   discussions (repo -> repos.key ON DELETE CASCADE, num INTEGER, object_id TEXT, is_pr INTEGER,
//            title TEXT, author TEXT, status TEXT -- draft|open|closed|merged, created_ms INTEGER,
//            target TEXT -- branch a pull request merges into, base TEXT -- commit it started from,
//            merge_commit TEXT, PRIMARY KEY(repo, num))   -- pull request N is refs/pr/N
//   discussion_events (repo, num -> discussions ON DELETE CASCADE, seq INTEGER, id TEXT, kind TEXT
//            -- comment|commit|status-change|title-change, author TEXT, time_ms INTEGER, text TEXT,
//            detail TEXT, PRIMARY KEY(repo, num, seq))
//
// Consistency: a commit is one SQLite transaction that inserts the commit and its file list and moves
// the ref only if it still points at the expected parent (compare-and-swap). Blobs are written and
// fsynced before that transaction starts. A crash at any point therefore leaves every ref on a
// complete commit; at worst some unreferenced blobs remain. Blobs are never deleted. Merging a pull
// request is one such transaction that also marks the pull request merged.
//
// Thread safety: one Store may be used from many threads; database access is serialised by an
// internal mutex, blob hashing and copying run outside it.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/server/attributes.hpp"
#include "kbuild/server/blob_store.hpp"
#include "kbuild/server/object_ids.hpp"
#include "kbuild/server/repo_types.hpp"
#include "kbuild/util/result.hpp"

struct sqlite3;

namespace kbuild::server {

// ---------------------------------------------------------------------------------------------
// Refs.

enum class RefKind { branch, tag, pr };

struct Ref {
  RefKind kind = RefKind::branch;
  std::string name;    ///< "main", "v1", or the number of a pull request
  std::string target;  ///< commit oid
  /// "refs/heads/<name>", "refs/tags/<name>" or "refs/pr/<name>".
  std::string full_name() const;
};

/// What a new commit holds; the store computes tree and oid.
struct CommitRequest {
  std::string title;
  std::string message;
  std::string author;
  std::int64_t time_ms = 0;
  FileMap files;  ///< the complete file list after the commit
};

/// Outcome of a compare-and-swap commit.
enum class CasStatus {
  done,     ///< committed; the ref points at the new commit
  stale,    ///< the ref no longer points at the expected parent; nothing was written
  missing,  ///< the ref does not exist; nothing was written
};

struct CommitOutcome {
  CasStatus status = CasStatus::done;
  Commit commit;  ///< the new commit when `done`
};

/// A multipart or single-PUT LFS upload handed out by the batch endpoint of one repo.
struct PendingUpload {
  std::string token;  ///< secret carried in the upload URLs: the one presented or just minted
  /// Names the upload (rows, parts directory): the SHA-256 of its first token, set by add_upload.
  std::string id;
  std::int64_t repo = 0;  ///< the repo whose batch handed it out; it receives the object
  std::string oid;        ///< expected SHA-256 of the content
  std::uint64_t size = 0;
  std::uint64_t chunk_size = 0;  ///< 0: one PUT; otherwise parts of this size (the last one shorter)
  std::int64_t expires_ms = 0;
  bool completed = false;  ///< the object arrived (a retried request is answered 200 until expiry)
};

/// What a sweep of temporary files removed.
struct SweepReport {
  std::uint64_t files = 0;  ///< files and upload directories
  std::uint64_t bytes = 0;
};

// ---------------------------------------------------------------------------------------------
// Discussions and pull requests (pull request N is refs/pr/N).

enum class DiscussionStatus { draft, open, closed, merged };
std::string_view status_name(DiscussionStatus status);
std::optional<DiscussionStatus> parse_status(std::string_view name);

struct Discussion {
  std::int64_t num = 0;
  std::string object_id;  ///< 24 hex
  bool is_pr = false;
  std::string title;
  std::string author;
  DiscussionStatus status = DiscussionStatus::open;
  std::int64_t created_ms = 0;
  std::string target;        ///< pull requests: the branch they merge into
  std::string base;          ///< pull requests: the commit they started from (the merge base)
  std::string merge_commit;  ///< merged pull requests: the commit on `target`
};

enum class EventKind { comment, commit, status_change, title_change };
std::string_view event_kind_name(EventKind kind);

/// One entry of a discussion's timeline. comment: text = content; commit: text = subject, detail =
/// oid; status_change: text = the new status; title_change: text = old title, detail = new title.
struct DiscussionEvent {
  std::string id;  ///< 24 hex
  EventKind kind = EventKind::comment;
  std::string author;
  std::int64_t time_ms = 0;
  std::string text;
  std::string detail;
};

/// A discussion to open: a pull request also gets refs/pr/N on `base`, in draft status.
struct NewDiscussion {
  bool is_pr = false;
  std::string title;
  std::string description;  ///< the first comment
  std::string author;
  std::int64_t time_ms = 0;
  std::string target;  ///< pull requests
  std::string base;    ///< pull requests
};

class Store {
 public:
  /// Opens (creating when missing) the registry at `root`: directories, database, schema. `random`
  /// gives repo object ids, discussion and event ids and upload tokens; it must outlive the Store.
  static Result<std::unique_ptr<Store>> open(const std::filesystem::path& root, util::Random& random);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::filesystem::path& root() const { return m_root; }
  /// Takes <root>/serve.lock (flock) for the Store's lifetime, so that one server at a time serves a
  /// root and may sweep its temporary files; fails when another process holds it.
  Result<void> lock_exclusively();
  /// Where temporary files go; on the same filesystem as the blobs, so they can be renamed into place.
  std::filesystem::path temp_dir() const { return m_root / "tmp"; }
  /// `bytes` bytes of the Store's randomness as hex (ids and tokens of new rows).
  std::string random_hex(std::size_t bytes);
  /// A fresh, unused path inside temp_dir().
  std::filesystem::path temp_path();

  // --- repos ---
  Result<std::optional<Repo>> find_repo(const RepoId& id);
  /// Creates the repo with `initial` as the first commit of branch "main". nullopt (and no change)
  /// when a repo with this id already exists.
  Result<std::optional<Repo>> create_repo(const RepoId& id, bool is_private, const CommitRequest& initial);
  /// Removes a repo with its commits and refs (blobs stay). False if it did not exist.
  /// Deletes the repo with this database key (Repo::key) and what belongs to it.
  Result<bool> delete_repo(std::int64_t key);
  /// Number of repos per type in a namespace (for organisation overviews).
  /// Repos of `ns` (compared without case) by type; private ones only with `include_private` (a
  /// caller who may see them).
  Result<std::map<RepoType, std::int64_t>> count_repos(std::string_view ns, bool include_private);

  // --- refs ---
  /// All refs of a repo, sorted by kind then name (pull requests numerically).
  Result<std::vector<Ref>> list_refs(std::int64_t repo);
  Result<std::optional<std::string>> find_ref(std::int64_t repo, RefKind kind, std::string_view name);
  /// Creates a ref; false (and no change) when it exists.
  Result<bool> create_ref(std::int64_t repo, RefKind kind, std::string_view name, std::string_view target);
  /// Deletes a ref; false when it does not exist.
  Result<bool> delete_ref(std::int64_t repo, RefKind kind, std::string_view name);

  // --- commits ---
  Result<std::optional<Commit>> find_commit(std::int64_t repo, std::string_view oid);
  /// The complete file list of a commit (empty for an unknown commit).
  Result<FileMap> files(std::int64_t repo, std::string_view commit_oid);
  /// In one transaction: if ref (kind, name) points at `expected_parent`, records a commit with that
  /// parent and `request`'s files and moves the ref to it. Every blob named by the files must already
  /// be stored.
  Result<CommitOutcome> commit(std::int64_t repo, RefKind kind, std::string_view name, std::string_view expected_parent,
                               const CommitRequest& request);
  /// In one transaction: records a commit on top of `parent`, creates refs/pr/<N> for it and an open
  /// pull request N into branch `target` (title and first comment from the commit), N being the next
  /// discussion number of the repo. Returns N and the commit. A commit() to refs/pr/N adds a commit
  /// event to pull request N (and opens a draft).
  Result<std::pair<int, Commit>> commit_pull_request(std::int64_t repo, std::string_view parent,
                                                     const CommitRequest& request, std::string_view target = "main");

  // --- content access (router.hpp, "Content access") ---
  /// Whether repo `repo` may use object `oid`: it arrived through one of the repo's own LFS uploads, or
  /// a commit of the repo (any, on any ref) references it.
  Result<bool> may_use_object(std::int64_t repo, std::string_view oid);

  // --- blobs (blob_store.hpp) ---
  std::filesystem::path blob_path(std::string_view sha256) const;
  /// Size of a stored blob; nullopt when absent.
  std::optional<std::uint64_t> blob_size(std::string_view sha256) const;
  /// Stores `content` (durably) and returns its SHA-256.
  Result<std::string> put_blob(std::string_view content);
  /// Hashes `file` (which must be inside temp_dir()); when it has `size` bytes and SHA-256 `sha256`,
  /// renames it into the blob directory. The file is gone afterwards in every case.
  Result<BlobCheck> adopt_blob(const std::filesystem::path& file, std::string_view sha256, std::uint64_t size);
  Result<std::string> read_blob(std::string_view sha256) const;

  // --- LFS uploads (store_uploads.cpp) ---
  Result<void> add_upload(PendingUpload& upload);
  /// Records a new upload and its token (as a hash only); sets `upload.id` when empty.
  /// The upload with this token, if it exists and has not expired at `now_ms`, looked up by the token's
  /// SHA-256 (the database holds no token, so there is nothing to compare it with byte by byte).
  Result<std::optional<PendingUpload>> find_upload(std::string_view token, std::int64_t now_ms);
  /// An incomplete, unexpired upload of `oid` with this size and chunk size handed out to `repo`, so
  /// that a client asking again resumes it (parts kept) with a freshly minted token, as the database
  /// cannot give the earlier one back; its expiry moves to `expires_ms`. nullopt when there is none.
  Result<std::optional<PendingUpload>> resume_upload(std::int64_t repo, std::string_view oid, std::uint64_t size,
                                                     std::uint64_t chunk_size, std::int64_t now_ms,
                                                     std::int64_t expires_ms);
  /// Marks the upload completed, lets its repo use the object (may_use_object) and removes its parts.
  Result<void> finish_upload(const PendingUpload& upload);
  /// Forgets uploads that expired before `now_ms`, with their parts.
  Result<void> expire_uploads(std::int64_t now_ms);
  /// Where the parts of a multipart upload are kept: <root>/uploads/<id>/<part number>.
  std::filesystem::path upload_dir(const PendingUpload& upload) const;
  /// What the LFS batch endpoint does first: expire_uploads(now_ms) and, at most once a minute,
  /// sweep_temporary(now_ms - max_age_ms).
  Result<void> tidy_up(std::int64_t now_ms, std::int64_t max_age_ms);
  /// Removes the files of temp_dir() last modified before `older_than_ms` (milliseconds since the
  /// epoch; INT64_MAX for all), and the upload directories that belong to no pending upload.
  Result<SweepReport> sweep_temporary(std::int64_t older_than_ms);

  // --- discussions and pull requests (store_discussions.cpp) ---
  /// Opens discussion N (the repo's next number); a pull request also gets refs/pr/N on `base`.
  Result<Discussion> create_discussion(std::int64_t repo, const NewDiscussion& request);
  /// All discussions of a repo, newest first.
  Result<std::vector<Discussion>> list_discussions(std::int64_t repo);
  Result<std::optional<Discussion>> find_discussion(std::int64_t repo, std::int64_t num);
  Result<std::vector<DiscussionEvent>> discussion_events(std::int64_t repo, std::int64_t num);
  /// Appends an event (its id is generated) and, when given, sets the discussion's status.
  Result<DiscussionEvent> add_discussion_event(std::int64_t repo, std::int64_t num, DiscussionEvent event,
                                               std::optional<DiscussionStatus> status = std::nullopt);
  /// In one transaction: commits `request` to branch `target` if it still points at
  /// `expected_head` (as commit()), then marks pull request `num` merged with that commit and a
  /// status-change event by the commit's author.
  Result<CommitOutcome> merge_pull_request(std::int64_t repo, std::int64_t num, std::string_view target,
                                           std::string_view expected_head, const CommitRequest& request);

  /// For tests: the value of a PRAGMA on the Store's own connection (e.g. "synchronous": 2 is FULL).
  Result<std::int64_t> pragma_for_testing(std::string_view name);
  /// For tests: the next commit() or commit_pull_request() fails after writing its rows and before
  /// moving or creating the ref, as a crash would; the transaction must leave no trace.
  void fail_next_commit_for_testing() { m_fail_next_commit = true; }

 private:
  Store(std::filesystem::path root, sqlite3* db, util::Random& random)
      : m_root(std::move(root)), m_db(db), m_blobs(m_root), m_random(random) {}
  Result<void> init_schema();
  Result<Commit> insert_commit(std::int64_t repo, std::string_view parent, const CommitRequest& request);
  // The helpers below expect m_mutex held and a transaction open.
  Result<CasStatus> swap_ref(std::int64_t repo, RefKind kind, std::string_view name, std::string_view expected,
                             std::string_view target);
  Result<std::int64_t> next_discussion_number(std::int64_t repo);
  Result<void> insert_discussion(std::int64_t repo, const Discussion& discussion);
  Result<DiscussionEvent> insert_event(std::int64_t repo, std::int64_t num, DiscussionEvent event);
  Result<void> note_pull_request_commit(std::int64_t repo, std::string_view number, const Commit& commit);

  std::filesystem::path m_root;
  sqlite3* m_db = nullptr;
  BlobStore m_blobs;
  util::Random& m_random;
  std::mutex m_random_mutex;  ///< util::Random is not thread-safe; requests run on many threads
  std::mutex m_mutex;
  bool m_fail_next_commit = false;
  std::atomic<std::int64_t> m_last_sweep_ms{0};
  int m_lock_fd = -1;
};

}  // namespace kbuild::server
