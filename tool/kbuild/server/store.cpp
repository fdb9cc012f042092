#include "kbuild/server/store.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "kbuild/server/metadata_db.hpp"
#include "kbuild/server/schema.hpp"
#include "kbuild/server/tree_rows.hpp"

namespace kbuild::server {

namespace fs = std::filesystem;
using db::Statement;
using db::Transaction;

std::string Ref::full_name() const {
  switch (kind) {
    case RefKind::branch:
      return "refs/heads/" + name;
    case RefKind::tag:
      return "refs/tags/" + name;
    case RefKind::pr:
      return "refs/pr/" + name;
  }
  return name;
}

namespace {

std::string_view kind_name(RefKind kind) {
  switch (kind) {
    case RefKind::branch:
      return "branch";
    case RefKind::tag:
      return "tag";
    case RefKind::pr:
      return "pr";
  }
  return "branch";
}

std::optional<RefKind> parse_kind(std::string_view name) {
  if (name == "branch") return RefKind::branch;
  if (name == "tag") return RefKind::tag;
  if (name == "pr") return RefKind::pr;
  return std::nullopt;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Store

Result<std::unique_ptr<Store>> Store::open(const fs::path& root, util::Random& random) {
  std::error_code ec;
  for (const char* dir : {"blobs", "tmp", "uploads"}) {
    fs::create_directories(root / dir, ec);
    if (ec) return fail("cannot create " + (root / dir).string() + ": " + ec.message());
  }
  // The root holds private repos' blobs, upload sessions and tokens: it and its directories are the
  // owner's only (0700), whatever the umask, and so is the database with SQLite's side files (which
  // SQLite creates with the database's mode). Blobs are written 0600 (blob_store.cpp).
  for (const fs::path& dir : {root, root / "blobs", root / "tmp", root / "uploads"}) {
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, ec);
    if (ec) return fail("cannot make " + dir.string() + " owner-only: " + ec.message());
  }
  // SQLite takes an empty file for a new database: a hub.sqlite truncated to 0 bytes (a full disk, a
  // bad copy) would start an empty registry over the blobs of the lost one.
  const fs::path database = root / "hub.sqlite";
  if (fs::is_regular_file(database, ec) && fs::file_size(database, ec) == 0 && !ec)
    return fail("the registry database " + database.string() +
                    " is empty (0 bytes): the record of every repository "
                    "is gone, and serving would start an empty registry over what " +
                    root.string() + " holds",
                "restore hub.sqlite from a backup; to start a new registry in this root, remove the empty file",
                ExitCode::usage);
  KB_TRY_ASSIGN(sqlite3 * connection, db::open(database));
  for (const char* file : {"hub.sqlite", "hub.sqlite-wal", "hub.sqlite-shm"})
    if (fs::exists(root / file, ec))
      fs::permissions(root / file, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace, ec);
  std::unique_ptr<Store> store(new Store(root, connection, random));
  if (auto schema = store->init_schema(); !schema)
    return fail("cannot read the registry database " + database.string() + ": " + schema.error().message,
                "it is damaged or is no registry database: restore hub.sqlite from a backup (kbuild never rewrites "
                "a database it cannot read)",
                ExitCode::usage);
  return store;
}

std::string Store::random_hex(std::size_t bytes) {
  std::lock_guard lock(m_random_mutex);
  return server::random_hex(m_random, bytes);
}

Store::~Store() {
  db::close(m_db);
  if (m_lock_fd >= 0) ::close(m_lock_fd);
}

Result<void> Store::lock_exclusively() {
  if (m_lock_fd >= 0) return {};
  fs::path path = m_root / "serve.lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return fail("cannot open " + path.string() + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return fail("another kbuild hub serve is using the registry " + m_root.string(),
                "stop it first: two servers must not share a --root", ExitCode::usage);
  }
  m_lock_fd = fd;
  return {};
}

Result<void> Store::init_schema() { return db::init_schema(m_db, m_root / "hub.sqlite"); }

Result<std::optional<Repo>> Store::find_repo(const RepoId& id) {
  std::lock_guard lock(m_mutex);
  // Repo ids are case-insensitive, as on the Hub (names are ASCII: NOCASE is exact); the repo keeps
  // the spelling it was created with.
  KB_TRY_ASSIGN(auto stmt, Statement::prepare(m_db,
                                              "SELECT key, private, object_id, created_ms, namespace, name FROM repos "
                                              "WHERE type = ?1 AND namespace = ?2 COLLATE NOCASE AND "
                                              "name = ?3 COLLATE NOCASE "
                                              // registries from before this rule may hold case twins: the
                                              // exact spelling wins
                                              "ORDER BY (namespace = ?2 AND name = ?3) DESC LIMIT 1"));
  stmt.bind(1, repo_type_name(id.type)).bind(2, id.ns).bind(3, id.name);
  KB_TRY_ASSIGN(bool row, stmt.step());
  if (!row) return std::optional<Repo>();
  RepoId stored{id.type, stmt.text(4), stmt.text(5)};
  return std::optional<Repo>(Repo{stmt.integer(0), stored, stmt.integer(1) != 0, stmt.text(2), stmt.integer(3)});
}

Result<std::optional<Repo>> Store::create_repo(const RepoId& id, bool is_private, const CommitRequest& initial) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto tx, Transaction::begin(m_db));
  KB_TRY_ASSIGN(auto existing,
                Statement::prepare(m_db,
                                   "SELECT 1 FROM repos WHERE type = ?1 AND namespace = ?2 COLLATE NOCASE "
                                   "AND name = ?3 COLLATE NOCASE"));
  existing.bind(1, repo_type_name(id.type)).bind(2, id.ns).bind(3, id.name);
  KB_TRY_ASSIGN(bool exists, existing.step());
  if (exists) return std::optional<Repo>();
  Repo repo{0, id, is_private, random_hex(12), initial.time_ms};
  KB_TRY_ASSIGN(auto insert,
                Statement::prepare(m_db,
                                   "INSERT INTO repos (type, namespace, name, private, object_id, created_ms) "
                                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
  insert.bind(1, repo_type_name(id.type)).bind(2, id.ns).bind(3, id.name).bind(4, std::int64_t{is_private});
  insert.bind(5, repo.object_id).bind(6, repo.created_ms);
  KB_TRY(insert.run());
  repo.key = db::last_insert_rowid(m_db);
  KB_TRY_ASSIGN(Commit commit, insert_commit(repo.key, "", initial));
  KB_TRY_ASSIGN(auto ref, Statement::prepare(
                              m_db, "INSERT INTO refs (repo, kind, name, target) VALUES (?1, 'branch', 'main', ?2)"));
  ref.bind(1, repo.key).bind(2, commit.oid);
  KB_TRY(ref.run());
  KB_TRY(tx.commit());
  return std::optional<Repo>(std::move(repo));
}

Result<bool> Store::delete_repo(std::int64_t key) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto stmt, Statement::prepare(m_db, "DELETE FROM repos WHERE key = ?1"));
  stmt.bind(1, key);
  KB_TRY(stmt.run());
  return db::changes(m_db) > 0;
}

Result<std::map<RepoType, std::int64_t>> Store::count_repos(std::string_view ns, bool include_private) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto stmt,
                Statement::prepare(m_db,
                                   "SELECT type, COUNT(*) FROM repos WHERE namespace = ?1 COLLATE NOCASE AND "
                                   "(private = 0 OR ?2) GROUP BY type"));
  stmt.bind(1, ns).bind(2, static_cast<std::int64_t>(include_private));
  std::map<RepoType, std::int64_t> counts;
  while (true) {
    KB_TRY_ASSIGN(bool row, stmt.step());
    if (!row) break;
    if (auto type = parse_repo_type(stmt.text(0))) counts[*type] = stmt.integer(1);
  }
  return counts;
}

Result<std::vector<Ref>> Store::list_refs(std::int64_t repo) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto stmt, Statement::prepare(m_db, "SELECT kind, name, target FROM refs WHERE repo = ?1"));
  stmt.bind(1, repo);
  std::vector<Ref> refs;
  while (true) {
    KB_TRY_ASSIGN(bool row, stmt.step());
    if (!row) break;
    if (auto kind = parse_kind(stmt.text(0))) refs.push_back({*kind, stmt.text(1), stmt.text(2)});
  }
  std::sort(refs.begin(), refs.end(), [](const Ref& a, const Ref& b) {
    if (a.kind != b.kind) return a.kind < b.kind;
    if (a.kind == RefKind::pr && a.name.size() != b.name.size()) return a.name.size() < b.name.size();
    return a.name < b.name;
  });
  return refs;
}

Result<std::optional<std::string>> Store::find_ref(std::int64_t repo, RefKind kind, std::string_view name) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto stmt,
                Statement::prepare(m_db, "SELECT target FROM refs WHERE repo = ?1 AND kind = ?2 AND name = ?3"));
  stmt.bind(1, repo).bind(2, kind_name(kind)).bind(3, name);
  KB_TRY_ASSIGN(bool row, stmt.step());
  if (!row) return std::optional<std::string>();
  return std::optional<std::string>(stmt.text(0));
}

Result<bool> Store::create_ref(std::int64_t repo, RefKind kind, std::string_view name, std::string_view target) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto stmt, Statement::prepare(
                               m_db, "INSERT OR IGNORE INTO refs (repo, kind, name, target) VALUES (?1, ?2, ?3, ?4)"));
  stmt.bind(1, repo).bind(2, kind_name(kind)).bind(3, name).bind(4, target);
  KB_TRY(stmt.run());
  return db::changes(m_db) > 0;
}

Result<bool> Store::delete_ref(std::int64_t repo, RefKind kind, std::string_view name) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto stmt, Statement::prepare(m_db, "DELETE FROM refs WHERE repo = ?1 AND kind = ?2 AND name = ?3"));
  stmt.bind(1, repo).bind(2, kind_name(kind)).bind(3, name);
  KB_TRY(stmt.run());
  return db::changes(m_db) > 0;
}

Result<std::optional<Commit>> Store::find_commit(std::int64_t repo, std::string_view oid) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto stmt, Statement::prepare(m_db,
                                              "SELECT parent, tree, title, message, author, time_ms FROM commits "
                                              "WHERE repo = ?1 AND oid = ?2"));
  stmt.bind(1, repo).bind(2, oid);
  KB_TRY_ASSIGN(bool row, stmt.step());
  if (!row) return std::optional<Commit>();
  return std::optional<Commit>(
      Commit{std::string(oid), stmt.text(0), stmt.text(1), stmt.text(2), stmt.text(3), stmt.text(4), stmt.integer(5)});
}

Result<FileMap> Store::files(std::int64_t repo, std::string_view commit_oid) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto stmt, Statement::prepare(m_db, "SELECT tree FROM commits WHERE repo = ?1 AND oid = ?2"));
  stmt.bind(1, repo).bind(2, commit_oid);
  KB_TRY_ASSIGN(bool row, stmt.step());
  if (!row) return FileMap();
  return db::read_tree(m_db, repo, stmt.text(0));
}

// Caller holds m_mutex and an open transaction.
Result<Commit> Store::insert_commit(std::int64_t repo, std::string_view parent, const CommitRequest& request) {
  Commit commit;
  commit.parent = std::string(parent);
  KB_TRY_ASSIGN(commit.tree, db::insert_trees(m_db, repo, request.files));
  commit.title = request.title;
  commit.message = request.message;
  commit.author = request.author;
  commit.time_ms = request.time_ms;
  commit.oid = commit_oid(commit);
  // An identical commit object (same tree, parent, author, second and text) may already exist, for
  // example two pull requests with the same content: git would share it too.
  KB_TRY_ASSIGN(
      auto insert,
      Statement::prepare(m_db,
                         "INSERT OR IGNORE INTO commits (repo, oid, parent, tree, title, message, author, time_ms) "
                         "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"));
  insert.bind(1, repo).bind(2, commit.oid).bind(3, commit.parent).bind(4, commit.tree).bind(5, commit.title);
  insert.bind(6, commit.message).bind(7, commit.author).bind(8, commit.time_ms);
  KB_TRY(insert.run());
  if (std::exchange(m_fail_next_commit, false)) return fail("simulated crash before the ref update");
  return commit;
}

// Caller holds m_mutex and an open transaction.
Result<CasStatus> Store::swap_ref(std::int64_t repo, RefKind kind, std::string_view name, std::string_view expected,
                                  std::string_view target) {
  KB_TRY_ASSIGN(auto current,
                Statement::prepare(m_db, "SELECT target FROM refs WHERE repo = ?1 AND kind = ?2 AND name = ?3"));
  current.bind(1, repo).bind(2, kind_name(kind)).bind(3, name);
  KB_TRY_ASSIGN(bool row, current.step());
  if (!row) return CasStatus::missing;
  if (current.text(0) != expected) return CasStatus::stale;
  KB_TRY_ASSIGN(auto update,
                Statement::prepare(m_db,
                                   "UPDATE refs SET target = ?1 WHERE repo = ?2 AND kind = ?3 AND name = ?4 "
                                   "AND target = ?5"));
  update.bind(1, target).bind(2, repo).bind(3, kind_name(kind)).bind(4, name).bind(5, expected);
  KB_TRY(update.run());
  return db::changes(m_db) == 1 ? CasStatus::done : CasStatus::stale;
}

Result<CommitOutcome> Store::commit(std::int64_t repo, RefKind kind, std::string_view name,
                                    std::string_view expected_parent, const CommitRequest& request) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto tx, Transaction::begin(m_db));
  KB_TRY_ASSIGN(auto current,
                Statement::prepare(m_db, "SELECT target FROM refs WHERE repo = ?1 AND kind = ?2 AND name = ?3"));
  current.bind(1, repo).bind(2, kind_name(kind)).bind(3, name);
  KB_TRY_ASSIGN(bool row, current.step());
  if (!row) return CommitOutcome{CasStatus::missing, {}};
  if (current.text(0) != expected_parent) return CommitOutcome{CasStatus::stale, {}};
  current.reset();
  KB_TRY_ASSIGN(Commit commit, insert_commit(repo, expected_parent, request));
  KB_TRY_ASSIGN(CasStatus swapped, swap_ref(repo, kind, name, expected_parent, commit.oid));
  if (swapped != CasStatus::done) return CommitOutcome{swapped, {}};
  if (kind == RefKind::pr) KB_TRY(note_pull_request_commit(repo, name, commit));
  KB_TRY(tx.commit());
  return CommitOutcome{CasStatus::done, std::move(commit)};
}

Result<std::pair<int, Commit>> Store::commit_pull_request(std::int64_t repo, std::string_view parent,
                                                          const CommitRequest& request, std::string_view target) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto tx, Transaction::begin(m_db));
  KB_TRY_ASSIGN(std::int64_t number, next_discussion_number(repo));
  KB_TRY_ASSIGN(Commit commit, insert_commit(repo, parent, request));
  KB_TRY_ASSIGN(auto ref,
                Statement::prepare(m_db, "INSERT INTO refs (repo, kind, name, target) VALUES (?1, 'pr', ?2, ?3)"));
  ref.bind(1, repo).bind(2, std::to_string(number)).bind(3, commit.oid);
  KB_TRY(ref.run());
  Discussion discussion{number,
                        random_hex(12),
                        true,
                        request.title,
                        request.author,
                        DiscussionStatus::open,
                        request.time_ms,
                        std::string(target),
                        std::string(parent),
                        ""};
  KB_TRY(insert_discussion(repo, discussion));
  KB_TRY(insert_event(repo, number, {"", EventKind::comment, request.author, request.time_ms, request.message, ""}));
  KB_TRY(
      insert_event(repo, number, {"", EventKind::commit, request.author, request.time_ms, request.title, commit.oid}));
  KB_TRY(tx.commit());
  return std::pair<int, Commit>(static_cast<int>(number), std::move(commit));
}

Result<std::int64_t> Store::pragma_for_testing(std::string_view name) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto stmt, Statement::prepare(m_db, "PRAGMA " + std::string(name)));
  KB_TRY_ASSIGN(bool row, stmt.step());
  return row ? stmt.integer(0) : 0;
}

fs::path Store::temp_path() { return m_blobs.temp_path(); }
fs::path Store::blob_path(std::string_view sha256) const { return m_blobs.path(sha256); }
std::optional<std::uint64_t> Store::blob_size(std::string_view sha256) const { return m_blobs.size(sha256); }
Result<std::string> Store::put_blob(std::string_view content) { return m_blobs.put(content); }
Result<BlobCheck> Store::adopt_blob(const fs::path& file, std::string_view sha256, std::uint64_t size) {
  return m_blobs.adopt(file, sha256, size);
}
Result<std::string> Store::read_blob(std::string_view sha256) const { return m_blobs.read(sha256); }

}  // namespace kbuild::server
