#include "kbuild/server/schema.hpp"

#include <string>

#include "kbuild/server/metadata_db.hpp"
#include "kbuild/server/tree_rows.hpp"

namespace kbuild::server::db {

namespace {

// Version 1: repos, commits, their complete file lists, refs, and pending uploads.
constexpr const char* k_version_1 = R"sql(
CREATE TABLE IF NOT EXISTS repos (
  key INTEGER PRIMARY KEY, type TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
  private INTEGER NOT NULL, object_id TEXT NOT NULL, created_ms INTEGER NOT NULL,
  UNIQUE (type, namespace, name));
CREATE TABLE IF NOT EXISTS commits (
  repo INTEGER NOT NULL REFERENCES repos(key) ON DELETE CASCADE, oid TEXT NOT NULL,
  parent TEXT NOT NULL, tree TEXT NOT NULL, title TEXT NOT NULL, message TEXT NOT NULL,
  author TEXT NOT NULL, time_ms INTEGER NOT NULL, PRIMARY KEY (repo, oid));
CREATE TABLE IF NOT EXISTS files (
  repo INTEGER NOT NULL, commit_oid TEXT NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL,
  sha256 TEXT NOT NULL, blob_id TEXT NOT NULL, lfs INTEGER NOT NULL,
  PRIMARY KEY (repo, commit_oid, path),
  FOREIGN KEY (repo, commit_oid) REFERENCES commits(repo, oid) ON DELETE CASCADE);
CREATE TABLE IF NOT EXISTS refs (
  repo INTEGER NOT NULL REFERENCES repos(key) ON DELETE CASCADE, kind TEXT NOT NULL,
  name TEXT NOT NULL, target TEXT NOT NULL, PRIMARY KEY (repo, kind, name));
CREATE TABLE IF NOT EXISTS uploads (
  token TEXT PRIMARY KEY, oid TEXT NOT NULL, size INTEGER NOT NULL, chunk_size INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL);
PRAGMA user_version = 1;
)sql";

// Version 2: uploads belong to a repo and stay (completed) until they expire; the objects each repo
// received through its own uploads; discussions and pull requests with their events. Pending v1
// uploads name no repo, so they are dropped (their parts are swept at start); existing refs/pr/N
// become open pull requests into main.
constexpr const char* k_version_2 = R"sql(
DROP TABLE IF EXISTS uploads;
CREATE TABLE uploads (
  token TEXT PRIMARY KEY, token_hash TEXT NOT NULL UNIQUE,
  repo INTEGER NOT NULL REFERENCES repos(key) ON DELETE CASCADE, oid TEXT NOT NULL,
  size INTEGER NOT NULL, chunk_size INTEGER NOT NULL, expires_ms INTEGER NOT NULL,
  completed INTEGER NOT NULL DEFAULT 0);
CREATE INDEX uploads_by_object ON uploads (repo, oid);
CREATE TABLE repo_objects (
  repo INTEGER NOT NULL REFERENCES repos(key) ON DELETE CASCADE, oid TEXT NOT NULL,
  PRIMARY KEY (repo, oid)) WITHOUT ROWID;
CREATE INDEX files_by_sha256 ON files (repo, sha256);
CREATE TABLE discussions (
  repo INTEGER NOT NULL REFERENCES repos(key) ON DELETE CASCADE, num INTEGER NOT NULL,
  object_id TEXT NOT NULL, is_pr INTEGER NOT NULL, title TEXT NOT NULL, author TEXT NOT NULL,
  status TEXT NOT NULL, created_ms INTEGER NOT NULL, target TEXT NOT NULL, base TEXT NOT NULL,
  merge_commit TEXT NOT NULL, PRIMARY KEY (repo, num));
CREATE TABLE discussion_events (
  repo INTEGER NOT NULL, num INTEGER NOT NULL, seq INTEGER NOT NULL, id TEXT NOT NULL,
  kind TEXT NOT NULL, author TEXT NOT NULL, time_ms INTEGER NOT NULL, text TEXT NOT NULL,
  detail TEXT NOT NULL, PRIMARY KEY (repo, num, seq),
  FOREIGN KEY (repo, num) REFERENCES discussions(repo, num) ON DELETE CASCADE);
INSERT OR IGNORE INTO discussions
  (repo, num, object_id, is_pr, title, author, status, created_ms, target, base, merge_commit)
  SELECT r.repo, CAST(r.name AS INTEGER), lower(hex(randomblob(12))), 1, c.title, c.author, 'open',
         c.time_ms, 'main', c.parent, ''
  FROM refs r JOIN commits c ON c.repo = r.repo AND c.oid = r.target WHERE r.kind = 'pr';
PRAGMA user_version = 2;
)sql";

// Version 3: upload tokens are kept only as their SHA-256 (a copy of hub.sqlite gives nobody a
// usable upload URL), several per upload (each batch answer mints a fresh one); an upload's id is
// the hash of its first token, which is what names its parts directory already. File lists become
// shared per-directory trees (tree_rows.hpp); migrate_file_lists moves the old rows over.
constexpr const char* k_version_3 = R"sql(
CREATE TABLE uploads_v3 (
  id TEXT PRIMARY KEY, repo INTEGER NOT NULL REFERENCES repos(key) ON DELETE CASCADE,
  oid TEXT NOT NULL, size INTEGER NOT NULL, chunk_size INTEGER NOT NULL, expires_ms INTEGER NOT NULL,
  completed INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
INSERT INTO uploads_v3 SELECT token_hash, repo, oid, size, chunk_size, expires_ms, completed FROM uploads;
CREATE TABLE upload_tokens (
  token_hash TEXT PRIMARY KEY, upload TEXT NOT NULL REFERENCES uploads_v3(id) ON DELETE CASCADE) WITHOUT ROWID;
INSERT INTO upload_tokens SELECT token_hash, token_hash FROM uploads;
DROP TABLE uploads;
ALTER TABLE uploads_v3 RENAME TO uploads;
CREATE INDEX uploads_by_object ON uploads (repo, oid);
CREATE INDEX upload_tokens_by_upload ON upload_tokens (upload);
CREATE TABLE trees (
  repo INTEGER NOT NULL REFERENCES repos(key) ON DELETE CASCADE, oid TEXT NOT NULL,
  PRIMARY KEY (repo, oid)) WITHOUT ROWID;
CREATE TABLE tree_entries (
  repo INTEGER NOT NULL, tree TEXT NOT NULL, name TEXT NOT NULL, child TEXT NOT NULL,
  size INTEGER NOT NULL, sha256 TEXT NOT NULL, blob_id TEXT NOT NULL, lfs INTEGER NOT NULL,
  PRIMARY KEY (repo, tree, name),
  FOREIGN KEY (repo, tree) REFERENCES trees(repo, oid) ON DELETE CASCADE) WITHOUT ROWID;
CREATE INDEX tree_entries_by_sha256 ON tree_entries (repo, sha256);
)sql";

/// Version 3's second half: every commit's rows of the old `files` table become trees.
Result<void> migrate_file_lists(sqlite3* db) {
  KB_TRY_ASSIGN(auto rows, Statement::prepare(db,
                                              "SELECT repo, commit_oid, path, size, sha256, blob_id, lfs FROM files "
                                              "ORDER BY repo, commit_oid"));
  std::int64_t repo = -1;
  std::string commit;
  FileMap files;
  auto flush = [&]() -> Result<void> {
    if (repo >= 0) KB_TRY(insert_trees(db, repo, files));
    files.clear();
    return {};
  };
  while (true) {
    KB_TRY_ASSIGN(bool row, rows.step());
    if (!row) break;
    if (rows.integer(0) != repo || rows.text(1) != commit) {
      KB_TRY(flush());
      repo = rows.integer(0);
      commit = rows.text(1);
    }
    FileEntry entry{rows.text(2), static_cast<std::uint64_t>(rows.integer(3)), rows.text(4), rows.text(5),
                    rows.integer(6) != 0};
    std::string path = entry.path;
    files.emplace(std::move(path), std::move(entry));
  }
  KB_TRY(flush());
  // Commits without files (an empty repo's first commit) had no rows: their empty root tree.
  KB_TRY_ASSIGN(auto empty,
                Statement::prepare(db, "INSERT OR IGNORE INTO trees (repo, oid) SELECT repo, tree FROM commits"));
  KB_TRY(empty.run());
  return exec(db, "DROP TABLE files; PRAGMA user_version = 3;");
}

}  // namespace

Result<void> init_schema(sqlite3* db, const std::filesystem::path& file, int version) {
  set_busy_timeout(db, 10000);
  // FULL: a commit's transaction is on disk when the client hears success, even after a power loss
  // (NORMAL would only survive a crash of the process).
  // secure_delete: what a row held (a migrated plain-text upload token) is overwritten when deleted,
  // not left in a free page of the file.
  KB_TRY(exec(db,
              "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; "
              "PRAGMA secure_delete = ON;"));
  std::int64_t current = 0;
  {
    KB_TRY_ASSIGN(auto version, Statement::prepare(db, "PRAGMA user_version"));
    KB_TRY_ASSIGN(bool row, version.step());
    if (row) current = version.integer(0);
  }  // finalized before the schema changes
  if (current > k_schema_version)
    return fail("registry database " + file.string() + " has schema version " + std::to_string(current) +
                    ", newer than this kbuild understands",
                "use a newer kbuild, or another --root");
  if (current >= version) return {};
  KB_TRY_ASSIGN(auto tx, Transaction::begin(db));
  if (current < 1) KB_TRY(exec(db, k_version_1));
  if (current < 2 && version >= 2) KB_TRY(exec(db, k_version_2));
  if (version >= 3) {
    KB_TRY(exec(db, k_version_3));
    KB_TRY(migrate_file_lists(db));
  }
  return tx.commit();
}

}  // namespace kbuild::server::db
