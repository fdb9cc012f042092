// The Store's LFS side: pending uploads (found by a token's hash, resumed, finished, expired), the objects
// each repo may use, and the sweep of temporary files.

#include <sys/stat.h>

#include <chrono>
#include <set>

#include "kbuild/server/metadata_db.hpp"
#include "kbuild/server/store.hpp"
#include "kbuild/util/hash.hpp"

namespace kbuild::server {

namespace fs = std::filesystem;
using db::Statement;
using db::Transaction;

namespace {

constexpr const char* k_upload_columns = "u.id, u.repo, u.oid, u.size, u.chunk_size, u.expires_ms, u.completed";

/// An upload read from its row; its token is whatever the caller knows (none is stored).
PendingUpload upload_from(const Statement& row, std::string token) {
  return {std::move(token),
          row.text(0),
          row.integer(1),
          row.text(2),
          static_cast<std::uint64_t>(row.integer(3)),
          static_cast<std::uint64_t>(row.integer(4)),
          row.integer(5),
          row.integer(6) != 0};
}

/// Last modification of a file, in milliseconds since the epoch (0 when unknown).
std::int64_t modified_ms(const fs::path& path) {
  struct ::stat st;
  if (::lstat(path.c_str(), &st) != 0) return 0;
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1'000'000;
}

/// Removes `path` (a file or a directory tree), adding what it held to `report`.
void remove_counted(const fs::path& path, SweepReport& report) {
  std::error_code ec;
  std::uint64_t bytes = 0;
  if (fs::is_directory(path, ec)) {
    for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec))
      if (it->is_regular_file(ec)) bytes += it->file_size(ec);
  } else {
    bytes = fs::file_size(path, ec);
    if (ec) bytes = 0;
  }
  if (fs::remove_all(path, ec) > 0 && !ec) {
    report.files += 1;
    report.bytes += bytes;
  }
}

}  // namespace

fs::path Store::upload_dir(const PendingUpload& upload) const {
  return m_root / "uploads" / (upload.id.empty() ? util::sha256_hex(upload.token) : upload.id);
}

Result<bool> Store::may_use_object(std::int64_t repo, std::string_view oid) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto stmt,
                Statement::prepare(m_db,
                                   "SELECT 1 FROM repo_objects WHERE repo = ?1 AND oid = ?2 "
                                   "UNION ALL SELECT 1 FROM tree_entries WHERE repo = ?1 AND sha256 = ?2 LIMIT 1"));
  stmt.bind(1, repo).bind(2, oid);
  return stmt.step();
}

namespace {

/// Records that `token` opens upload `id` (as its SHA-256 only). Caller holds the mutex.
Result<void> add_token(sqlite3* db, std::string_view id, std::string_view token) {
  KB_TRY_ASSIGN(auto stmt, Statement::prepare(db, "INSERT INTO upload_tokens (token_hash, upload) VALUES (?1, ?2)"));
  stmt.bind(1, util::sha256_hex(token)).bind(2, id);
  return stmt.run();
}

}  // namespace

Result<void> Store::add_upload(PendingUpload& upload) {
  if (upload.id.empty()) upload.id = util::sha256_hex(upload.token);
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto tx, Transaction::begin(m_db));
  KB_TRY_ASSIGN(auto stmt, Statement::prepare(m_db,
                                              "INSERT INTO uploads (id, repo, oid, size, chunk_size, expires_ms, "
                                              "completed) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
  stmt.bind(1, upload.id).bind(2, upload.repo).bind(3, upload.oid).bind(4, static_cast<std::int64_t>(upload.size));
  stmt.bind(5, static_cast<std::int64_t>(upload.chunk_size)).bind(6, upload.expires_ms);
  stmt.bind(7, std::int64_t{upload.completed});
  KB_TRY(stmt.run());
  KB_TRY(add_token(m_db, upload.id, upload.token));
  return tx.commit();
}

Result<std::optional<PendingUpload>> Store::find_upload(std::string_view token, std::int64_t now_ms) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto stmt, Statement::prepare(m_db, std::string("SELECT ") + k_upload_columns +
                                                        " FROM upload_tokens t JOIN uploads u ON u.id = t.upload "
                                                        "WHERE t.token_hash = ?1"));
  stmt.bind(1, util::sha256_hex(token));
  KB_TRY_ASSIGN(bool row, stmt.step());
  if (!row) return std::optional<PendingUpload>();
  PendingUpload upload = upload_from(stmt, std::string(token));
  if (upload.expires_ms < now_ms) return std::optional<PendingUpload>();
  return std::optional<PendingUpload>(std::move(upload));
}

Result<std::optional<PendingUpload>> Store::resume_upload(std::int64_t repo, std::string_view oid, std::uint64_t size,
                                                          std::uint64_t chunk_size, std::int64_t now_ms,
                                                          std::int64_t expires_ms) {
  std::string token = random_hex(16);
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto tx, Transaction::begin(m_db));
  KB_TRY_ASSIGN(auto stmt, Statement::prepare(m_db, std::string("SELECT ") + k_upload_columns +
                                                        " FROM uploads u WHERE repo = ?1 AND oid = ?2 AND size = ?3 "
                                                        "AND chunk_size = ?4 AND completed = 0 AND expires_ms >= ?5 "
                                                        "ORDER BY expires_ms DESC LIMIT 1"));
  stmt.bind(1, repo)
      .bind(2, oid)
      .bind(3, static_cast<std::int64_t>(size))
      .bind(4, static_cast<std::int64_t>(chunk_size));
  stmt.bind(5, now_ms);
  KB_TRY_ASSIGN(bool row, stmt.step());
  if (!row) return std::optional<PendingUpload>();
  PendingUpload upload = upload_from(stmt, std::move(token));
  stmt.reset();
  upload.expires_ms = std::max(upload.expires_ms, expires_ms);
  KB_TRY_ASSIGN(auto extend, Statement::prepare(m_db, "UPDATE uploads SET expires_ms = ?1 WHERE id = ?2"));
  extend.bind(1, upload.expires_ms).bind(2, upload.id);
  KB_TRY(extend.run());
  KB_TRY(add_token(m_db, upload.id, upload.token));
  KB_TRY(tx.commit());
  return std::optional<PendingUpload>(std::move(upload));
}

Result<void> Store::finish_upload(const PendingUpload& upload) {
  {
    std::lock_guard lock(m_mutex);
    KB_TRY_ASSIGN(auto tx, Transaction::begin(m_db));
    KB_TRY_ASSIGN(auto done, Statement::prepare(m_db, "UPDATE uploads SET completed = 1 WHERE id = ?1"));
    done.bind(1, upload.id);
    KB_TRY(done.run());
    KB_TRY_ASSIGN(auto grant,
                  Statement::prepare(m_db, "INSERT OR IGNORE INTO repo_objects (repo, oid) VALUES (?1, ?2)"));
    grant.bind(1, upload.repo).bind(2, upload.oid);
    KB_TRY(grant.run());
    KB_TRY(tx.commit());
  }
  std::error_code ec;
  fs::remove_all(upload_dir(upload), ec);
  return {};
}

Result<void> Store::expire_uploads(std::int64_t now_ms) {
  std::vector<PendingUpload> expired;
  {
    std::lock_guard lock(m_mutex);
    KB_TRY_ASSIGN(auto select, Statement::prepare(m_db, std::string("SELECT ") + k_upload_columns +
                                                            " FROM uploads u WHERE expires_ms < ?1"));
    select.bind(1, now_ms);
    while (true) {
      KB_TRY_ASSIGN(bool row, select.step());
      if (!row) break;
      expired.push_back(upload_from(select, ""));
    }
    KB_TRY_ASSIGN(auto remove, Statement::prepare(m_db, "DELETE FROM uploads WHERE expires_ms < ?1"));
    remove.bind(1, now_ms);
    KB_TRY(remove.run());
  }
  for (const auto& upload : expired) {
    std::error_code ec;
    fs::remove_all(upload_dir(upload), ec);
  }
  return {};
}

Result<void> Store::tidy_up(std::int64_t now_ms, std::int64_t max_age_ms) {
  KB_TRY(expire_uploads(now_ms));
  std::int64_t last = m_last_sweep_ms.load();
  if (now_ms - last < 60'000 || !m_last_sweep_ms.compare_exchange_strong(last, now_ms)) return {};
  KB_TRY(sweep_temporary(now_ms - max_age_ms));
  return {};
}

Result<SweepReport> Store::sweep_temporary(std::int64_t older_than_ms) {
  SweepReport report;
  std::error_code ec;
  std::vector<fs::path> stale;
  for (auto it = fs::directory_iterator(temp_dir(), ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (modified_ms(it->path()) < older_than_ms) stale.push_back(it->path());
  for (const auto& path : stale) remove_counted(path, report);

  // Directories first: an upload's row exists before its directory, so every directory listed here
  // whose upload is still pending has its row in `live`.
  std::vector<fs::path> directories;
  for (auto it = fs::directory_iterator(m_root / "uploads", ec); !ec && it != fs::directory_iterator();
       it.increment(ec))
    directories.push_back(it->path());
  std::set<std::string> live;
  {
    std::lock_guard lock(m_mutex);
    KB_TRY_ASSIGN(auto select, Statement::prepare(m_db, "SELECT id FROM uploads"));
    while (true) {
      KB_TRY_ASSIGN(bool row, select.step());
      if (!row) break;
      live.insert(select.text(0));
    }
  }
  std::vector<fs::path> orphans;
  for (const auto& path : directories)
    if (!live.contains(path.filename().string())) orphans.push_back(path);
  for (const auto& path : orphans) remove_counted(path, report);
  return report;
}

}  // namespace kbuild::server
