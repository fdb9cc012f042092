#pragma once
// The registry database's schema (described in store.hpp) and its upgrades: a new database gets the
// current version, an older one is migrated in one transaction. Private to the server module.

#include <filesystem>

#include "kbuild/util/result.hpp"

struct sqlite3;

namespace kbuild::server::db {

/// The schema version this kbuild writes (PRAGMA user_version).
inline constexpr int k_schema_version = 3;

/// Sets the connection's pragmas (WAL, synchronous = FULL, foreign keys), then creates or upgrades the
/// schema to version `version` (tests build older databases with a lower one). `file` names the
/// database in messages.
Result<void> init_schema(sqlite3* db, const std::filesystem::path& file, int version = k_schema_version);

}  // namespace kbuild::server::db
