#include "kbuild/server/schema.hpp"

#include <string>

#include "kbuild/server/metadata_db.hpp"

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

}  // namespace

Result<void> init_schema(sqlite3* db, const std::filesystem::path& file) {
  set_busy_timeout(db, 10000);
  // FULL: a commit's transaction is on disk when the client hears success, even after a power loss
  // (NORMAL would only survive a crash of the process).
  KB_TRY(exec(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;"));
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
  if (current == k_schema_version) return {};
  KB_TRY_ASSIGN(auto tx, Transaction::begin(db));
  if (current < 1) KB_TRY(exec(db, k_version_1));
  KB_TRY(exec(db, k_version_2));
  return tx.commit();
}

}  // namespace kbuild::server::db
