#pragma once
// The git side of the data model: files as git would store them (content or LFS pointer), git tree and
// commit ids, and the hex spellings of ids. Pure functions; nothing here touches the disk.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "kbuild/util/system.hpp"

namespace kbuild::server {

/// 40 lowercase hex characters (a commit id as clients recognise it).
bool is_commit_oid(std::string_view text);
/// 64 lowercase hex characters.
bool is_sha256_hex(std::string_view text);

/// `bytes` bytes of `random` as lowercase hex (repo object ids, upload tokens, discussion ids).
std::string random_hex(util::Random& random, std::size_t bytes);
/// Whether two secrets are equal, in a time that depends only on their lengths.
bool equal_in_constant_time(std::string_view a, std::string_view b);

// ---------------------------------------------------------------------------------------------
// Files, git object ids and LFS pointers.

struct FileEntry {
  std::string path;
  std::uint64_t size = 0;  ///< content size (also for LFS files)
  std::string sha256;      ///< of the content; names the blob
  std::string blob_id;     ///< git blob id of the content, or of the LFS pointer when `lfs`
  bool lfs = false;
};

/// A commit's complete file list, by path.
using FileMap = std::map<std::string, FileEntry>;

/// The git-lfs pointer text, exactly:
///   "version https://git-lfs.github.com/spec/v1\n" "oid sha256:<64 hex>\n" "size <decimal>\n"
std::string lfs_pointer(std::string_view sha256, std::uint64_t size);
/// Entry for content stored as a regular git blob.
FileEntry regular_entry(std::string path, std::string_view content);
/// Entry for content stored with LFS (blob_id is the id of the pointer).
FileEntry lfs_entry(std::string path, std::string sha256, std::uint64_t size);

/// Git tree ids of every directory of `files`: "" for the root, "a/b" for subdirectories. Trees are
/// real git tree objects (mode 100644 for files, 40000 for trees, entries in git order).
std::map<std::string, std::string> tree_ids(const FileMap& files);

struct Commit {
  std::string oid;
  std::string parent;  ///< "" for a repo's first commit
  std::string tree;
  std::string title;
  std::string message;
  std::string author;
  std::int64_t time_ms = 0;
};

/// The id of a commit: the SHA-1 of a git commit object built from tree, parent, author, time
/// (seconds, UTC), title and message:
///   "tree <tree>\n" ["parent <parent>\n"] "author <a> <<a>@users.noreply.kbuild> <secs> +0000\n"
///   "committer <same>\n" "\n" "<title>\n" ["\n<message>\n"]
std::string commit_oid(const Commit& commit);

/// "2024-05-01T12:00:00.000Z"
std::string iso8601(std::int64_t time_ms);

}  // namespace kbuild::server
