#pragma once
// How a commit's file list is kept in the registry database: as git keeps it, one row set per
// directory tree, shared by every commit (of the same repo) in which that directory is unchanged.
// A commit that changes one file adds the rows of the trees on that file's path only, not the whole
// list (a one-file commit on a 1,300-file repo used to add ~380 KB).
//
//   trees        (repo -> repos.key ON DELETE CASCADE, oid TEXT -- git tree id, PRIMARY KEY(repo, oid))
//   tree_entries (repo, tree -> trees ON DELETE CASCADE, name TEXT -- one path component,
//                 child TEXT -- the tree id of a subdirectory, "" for a file; for files: size INTEGER,
//                 sha256 TEXT, blob_id TEXT, lfs INTEGER (as FileEntry); PRIMARY KEY(repo, tree, name))
//                -- indexed by (repo, sha256): which content a repo's commits reference
// Private to the server module.

#include <cstdint>
#include <string_view>

#include "kbuild/server/object_ids.hpp"
#include "kbuild/util/result.hpp"

struct sqlite3;

namespace kbuild::server::db {

/// Stores the trees of `files` that repo `repo` does not hold yet; returns the root tree id (what
/// tree_ids(files)[""] is). The caller holds a transaction.
Result<std::string> insert_trees(sqlite3* db, std::int64_t repo, const FileMap& files);

/// The complete file list below the root tree `tree` of repo `repo`.
Result<FileMap> read_tree(sqlite3* db, std::int64_t repo, std::string_view tree);

}  // namespace kbuild::server::db
