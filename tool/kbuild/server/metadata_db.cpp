#include "kbuild/server/metadata_db.hpp"

#include <sqlite3.h>

#include <utility>

namespace kbuild::server::db {

std::string sqlite_library_version() { return sqlite3_libversion(); }

namespace {
Error db_error(sqlite3* db, std::string_view what) {
  return {ExitCode::failure, "registry database: " + std::string(what) + ": " + sqlite3_errmsg(db),
          "check that the registry root is writable and not corrupted"};
}
}  // namespace

Result<sqlite3*> open(const std::filesystem::path& file) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr) !=
      SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return fail("cannot open " + file.string() + ": " + message);
  }
  return db;
}

void close(sqlite3* db) {
  if (db) sqlite3_close(db);
}

void set_busy_timeout(sqlite3* db, int milliseconds) { sqlite3_busy_timeout(db, milliseconds); }

Result<void> exec(sqlite3* db, const char* sql) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    std::string text = message ? message : "unknown error";
    sqlite3_free(message);
    return fail("registry database: " + text);
  }
  return {};
}

int changes(sqlite3* db) { return sqlite3_changes(db); }

std::int64_t last_insert_rowid(sqlite3* db) { return sqlite3_last_insert_rowid(db); }

// ---------------------------------------------------------------------------------------------
// Statement

Result<Statement> Statement::prepare(sqlite3* db, std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr) != SQLITE_OK)
    return std::unexpected(db_error(db, "prepare"));
  return Statement(db, stmt);
}

Statement::Statement(Statement&& other) noexcept : m_db(other.m_db), m_stmt(std::exchange(other.m_stmt, nullptr)) {}

Statement::~Statement() {
  if (m_stmt) sqlite3_finalize(m_stmt);
}

Statement& Statement::bind(int index, std::string_view text) {
  sqlite3_bind_text(m_stmt, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  return *this;
}

Statement& Statement::bind(int index, std::int64_t value) {
  sqlite3_bind_int64(m_stmt, index, value);
  return *this;
}

Result<bool> Statement::step() {
  int rc = sqlite3_step(m_stmt);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return std::unexpected(db_error(m_db, "step"));
}

Result<void> Statement::run() {
  KB_TRY_ASSIGN(bool row, step());
  (void)row;
  return {};
}

void Statement::reset() {
  sqlite3_reset(m_stmt);
  sqlite3_clear_bindings(m_stmt);
}

std::string Statement::text(int column) const {
  const unsigned char* value = sqlite3_column_text(m_stmt, column);
  int bytes = sqlite3_column_bytes(m_stmt, column);
  return value ? std::string(reinterpret_cast<const char*>(value), static_cast<size_t>(bytes)) : std::string();
}

std::int64_t Statement::integer(int column) const { return sqlite3_column_int64(m_stmt, column); }

// ---------------------------------------------------------------------------------------------
// Transaction

Result<Transaction> Transaction::begin(sqlite3* db) {
  KB_TRY(exec(db, "BEGIN IMMEDIATE"));
  return Transaction(db);
}

Transaction::Transaction(Transaction&& other) noexcept : m_db(std::exchange(other.m_db, nullptr)) {}

Transaction::~Transaction() {
  if (m_db) sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
}

Result<void> Transaction::commit() {
  KB_TRY(exec(m_db, "COMMIT"));
  m_db = nullptr;
  return {};
}

}  // namespace kbuild::server::db
