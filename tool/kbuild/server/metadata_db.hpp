#pragma once
// A thin wrapper over SQLite for the registry's metadata database (its schema is in store.hpp):
// opening, prepared statements and transactions. metadata_db.cpp is the only file of the server that
// includes sqlite3.h; errors come back as Result with the database's own message.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "kbuild/util/result.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace kbuild::server::db {

/// SQLite's version, as loaded (`kbuild --version`).
std::string sqlite_library_version();

/// Opens (creating when missing) the database file, read-write and fully serialised.
Result<sqlite3*> open(const std::filesystem::path& file);
void close(sqlite3* db);
/// How long a statement waits for a lock held by another connection before failing.
void set_busy_timeout(sqlite3* db, int milliseconds);
/// Runs one or more statements without results.
Result<void> exec(sqlite3* db, const char* sql);
/// Rows changed by the last INSERT, UPDATE or DELETE.
int changes(sqlite3* db);
/// Key of the row inserted last.
std::int64_t last_insert_rowid(sqlite3* db);

/// One prepared statement; columns and parameters are 0- and 1-based like SQLite's own API.
class Statement {
 public:
  static Result<Statement> prepare(sqlite3* db, std::string_view sql);
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&&) = delete;
  ~Statement();

  Statement& bind(int index, std::string_view text);
  Statement& bind(int index, std::int64_t value);
  /// True when a row is available, false when done.
  Result<bool> step();
  /// Steps once, for statements without results.
  Result<void> run();
  /// Makes the statement ready to run again, without bindings.
  void reset();
  std::string text(int column) const;
  std::int64_t integer(int column) const;

 private:
  Statement(sqlite3* db, sqlite3_stmt* stmt) : m_db(db), m_stmt(stmt) {}
  sqlite3* m_db;
  sqlite3_stmt* m_stmt;
};

/// BEGIN IMMEDIATE ... COMMIT; rolls back unless commit() succeeded.
class Transaction {
 public:
  static Result<Transaction> begin(sqlite3* db);
  Transaction(Transaction&& other) noexcept;
  Transaction& operator=(Transaction&&) = delete;
  ~Transaction();
  Result<void> commit();

 private:
  explicit Transaction(sqlite3* db) : m_db(db) {}
  sqlite3* m_db;
};

}  // namespace kbuild::server::db
