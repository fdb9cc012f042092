#include "kbuild/server/tree_rows.hpp"

#include <map>
#include <string>

#include "kbuild/server/metadata_db.hpp"

namespace kbuild::server::db {

namespace {

/// The directory part of `path` ("" at the root) and its last component.
std::pair<std::string, std::string> split_last(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return {"", path};
  return {path.substr(0, slash), path.substr(slash + 1)};
}

struct DirectoryEntries {
  std::map<std::string, const FileEntry*> files;
  std::map<std::string, std::string> subdirectories;  ///< name -> tree id
};

}  // namespace

Result<std::string> insert_trees(sqlite3* db, std::int64_t repo, const FileMap& files) {
  const std::map<std::string, std::string> ids = tree_ids(files);
  std::map<std::string, DirectoryEntries> directories;  // by directory path
  for (const auto& [path, entry] : files) {
    auto [dir, name] = split_last(path);
    directories[dir].files[name] = &entry;
  }
  for (const auto& [dir, id] : ids) {
    directories[dir];  // the root of an empty commit has no entries, but exists
    if (dir.empty()) continue;
    auto [parent, name] = split_last(dir);
    directories[parent].subdirectories[name] = id;
  }
  KB_TRY_ASSIGN(auto tree, Statement::prepare(db, "INSERT OR IGNORE INTO trees (repo, oid) VALUES (?1, ?2)"));
  KB_TRY_ASSIGN(auto entry, Statement::prepare(db,
                                               "INSERT INTO tree_entries (repo, tree, name, child, size, sha256, "
                                               "blob_id, lfs) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"));
  for (const auto& [dir, contents] : directories) {
    const std::string& id = ids.at(dir);
    tree.reset();
    tree.bind(1, repo).bind(2, id);
    KB_TRY(tree.run());
    if (changes(db) == 0) continue;  // held already, with all its entries and subtrees
    for (const auto& [name, file] : contents.files) {
      entry.reset();
      entry.bind(1, repo).bind(2, id).bind(3, name).bind(4, "").bind(5, static_cast<std::int64_t>(file->size));
      entry.bind(6, file->sha256).bind(7, file->blob_id).bind(8, std::int64_t{file->lfs});
      KB_TRY(entry.run());
    }
    for (const auto& [name, child] : contents.subdirectories) {
      entry.reset();
      entry.bind(1, repo).bind(2, id).bind(3, name).bind(4, child).bind(5, std::int64_t{0});
      entry.bind(6, "").bind(7, "").bind(8, std::int64_t{0});
      KB_TRY(entry.run());
    }
  }
  return ids.at("");
}

Result<FileMap> read_tree(sqlite3* db, std::int64_t repo, std::string_view tree) {
  // Walks the subdirectories from the root, then lists the files of every directory reached.
  KB_TRY_ASSIGN(auto stmt, Statement::prepare(db, R"sql(
    WITH RECURSIVE walk(tree, prefix) AS (
      SELECT ?2, ''
      UNION ALL
      SELECT e.child, walk.prefix || e.name || '/' FROM tree_entries e JOIN walk
        ON e.repo = ?1 AND e.tree = walk.tree WHERE e.child != '')
    SELECT walk.prefix || e.name, e.size, e.sha256, e.blob_id, e.lfs FROM walk JOIN tree_entries e
      ON e.repo = ?1 AND e.tree = walk.tree WHERE e.child = '')sql"));
  stmt.bind(1, repo).bind(2, tree);
  FileMap files;
  while (true) {
    KB_TRY_ASSIGN(bool row, stmt.step());
    if (!row) break;
    FileEntry entry{stmt.text(0), static_cast<std::uint64_t>(stmt.integer(1)), stmt.text(2), stmt.text(3),
                    stmt.integer(4) != 0};
    std::string path = entry.path;
    files.emplace(std::move(path), std::move(entry));
  }
  return files;
}

}  // namespace kbuild::server::db
