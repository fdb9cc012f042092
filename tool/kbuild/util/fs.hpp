#pragma once
// The filesystem seam. Core logic (config loading, staleness checks, layout) talks to FileSystem;
// RealFileSystem is the only implementation in the tool, tests use tests/support/mem_fs.hpp.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/util/result.hpp"

namespace kbuild::util {

namespace fs = std::filesystem;

struct FileStat {
  bool exists = false;
  bool is_dir = false;
  bool is_file = false;     ///< a regular file (symlinks are followed by stat, not by lstat)
  bool is_symlink = false;  ///< only from lstat: the path itself is a symbolic link
  bool executable = false;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;  ///< modification time, nanoseconds since the epoch
};

struct DirEntry {
  std::string name;
  bool is_dir = false;   ///< a directory, or a symbolic link to one
  bool is_file = false;  ///< a regular file, or a symbolic link to one
  bool is_symlink = false;
};

/// An exclusive advisory lock on a file, held until destroyed; the OS releases it when the process
/// dies in any way, so a lock is never left behind.
class FileLock {
 public:
  virtual ~FileLock() = default;
  /// Replaces the lock file's content (who holds it: e.g. the pid), for others to report.
  virtual void set_owner(std::string_view text) = 0;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  /// Stat without failing: a missing path gives `exists == false`.
  virtual FileStat stat(const fs::path& path) const = 0;
  /// Stat of the path itself: a symbolic link is reported as one (is_symlink), never followed.
  virtual FileStat lstat(const fs::path& path) const { return stat(path); }
  /// Sets the permission bits of `path` (chmod; links are followed). Used to repair a directory of
  /// the cache made unreadable, and to keep private files private.
  virtual Result<void> set_mode(const fs::path& path, unsigned mode) {
    (void)path;
    (void)mode;
    return {};
  }
  /// The bytes of a regular file (after links). Anything else (a FIFO, a device, a directory) is an
  /// error, never a wait: reading a FIFO someone put in place of a file must not hang kbuild.
  virtual Result<std::string> read_file(const fs::path& path) const = 0;
  /// Writes `content` to a temporary sibling, then renames it over `path`: readers see the old or
  /// the new content, never a partial file. Creates missing parent directories.
  virtual Result<void> write_file_atomic(const fs::path& path, std::string_view content, bool executable = false) = 0;
  /// write_file_atomic, except that a regular file which already holds `content` is left alone (no
  /// rename, same inode and mtime): for the files every build rewrites, so that a no-op build writes
  /// nothing (on ext4, a rename over a file forces the new file's data out to disk).
  Result<void> write_file_if_changed(const fs::path& path, std::string_view content) {
    if (auto current = read_file(path); current && *current == content) return {};
    return write_file_atomic(path, content);
  }
  /// Entries of a directory, sorted by name. Error if it is not a readable directory.
  virtual Result<std::vector<DirEntry>> list_dir(const fs::path& path) const = 0;
  virtual Result<void> make_dirs(const fs::path& path) = 0;
  /// Removes a file or a whole tree. A missing path is not an error.
  virtual Result<void> remove_all(const fs::path& path) = 0;
  virtual Result<void> rename(const fs::path& from, const fs::path& to) = 0;
  /// Sets a file's modification time to now.
  virtual Result<void> touch(const fs::path& path) = 0;
  /// Creates a symbolic link at `link` whose content is `target` (typically relative); fails if
  /// `link` exists.
  virtual Result<void> create_symlink(const fs::path& target, const fs::path& link) = 0;
  /// The absolute path with every symbolic link resolved (the file must exist).
  virtual Result<fs::path> real_path(const fs::path& path) const = 0;
  /// Takes an exclusive lock on `path` (created if missing). With `wait`, blocks until it is free;
  /// without, returns nullptr when another process holds it.
  virtual Result<std::unique_ptr<FileLock>> lock_file(const fs::path& path, bool wait) = 0;
  /// A shared lock on `path`: any number of holders at once, none while an exclusive lock is held.
  /// The default takes an exclusive one (correct, less concurrent).
  virtual Result<std::unique_ptr<FileLock>> lock_file_shared(const fs::path& path, bool wait) {
    return lock_file(path, wait);
  }
  /// Calls `consume` with the file's bytes, in order, in pieces of bounded size: for hashing large
  /// files without holding them in memory. The default reads the whole file.
  virtual Result<void> read_chunks(const fs::path& path, const std::function<void(std::string_view)>& consume) const {
    KB_TRY_ASSIGN(std::string content, read_file(path));
    consume(content);
    return {};
  }
  /// Pulls a piece of the content, appended to `chunk`; false after the last piece (or an error).
  using ChunkSource = std::function<Result<bool>(std::string& chunk)>;
  /// Writes `path` (created or truncated; not atomic: for files inside a staging directory that is
  /// renamed into place afterwards) from the pieces `next` gives, in bounded memory: for extracting
  /// large archive members. The default collects the whole content and writes it atomically.
  virtual Result<void> write_chunks(const fs::path& path, const ChunkSource& next, bool executable = false) {
    std::string content;
    for (;;) {
      KB_TRY_ASSIGN(bool more, next(content));
      if (!more) break;
    }
    return write_file_atomic(path, content, executable);
  }
};

class RealFileSystem final : public FileSystem {
 public:
  FileStat stat(const fs::path& path) const override;
  FileStat lstat(const fs::path& path) const override;
  Result<void> set_mode(const fs::path& path, unsigned mode) override;
  Result<std::string> read_file(const fs::path& path) const override;
  Result<void> write_file_atomic(const fs::path& path, std::string_view content, bool executable = false) override;
  Result<void> write_chunks(const fs::path& path, const ChunkSource& next, bool executable = false) override;
  Result<std::vector<DirEntry>> list_dir(const fs::path& path) const override;
  Result<void> make_dirs(const fs::path& path) override;
  Result<void> remove_all(const fs::path& path) override;
  Result<void> rename(const fs::path& from, const fs::path& to) override;
  Result<void> touch(const fs::path& path) override;
  Result<std::unique_ptr<FileLock>> lock_file_shared(const fs::path& path, bool wait) override;
  Result<void> create_symlink(const fs::path& target, const fs::path& link) override;
  Result<std::unique_ptr<FileLock>> lock_file(const fs::path& path, bool wait) override;
  Result<fs::path> real_path(const fs::path& path) const override;
  Result<void> read_chunks(const fs::path& path, const std::function<void(std::string_view)>& consume) const override;

 private:
  Result<std::unique_ptr<FileLock>> flock_file(const fs::path& path, bool wait, int operation);
};

/// Reads an input file a user points kbuild at (build.toml, kbuild.toml, pyproject.toml, locks):
/// only a regular file (after links) of at most `max_bytes` is read, so a FIFO, a device or a
/// runaway file gives a clear error (exit code 2) instead of a hang or an exhausted memory.
Result<std::string> read_input_file(const FileSystem& fs, const fs::path& path, std::uint64_t max_bytes);

/// Lists every regular file below `root`, as sorted relative paths with '/' separators. Symbolic
/// links are neither listed nor followed (walk_tree reports them), so a link inside a tree can never
/// make a walk leave it.
Result<std::vector<std::string>> list_files_recursive(const FileSystem& fs, const fs::path& root);

/// One entry met by walk_tree.
struct TreeEntry {
  enum class Type { file, directory, symlink, other, unreadable };
  std::string rel;  ///< relative to the root, '/' separators
  Type type = Type::file;
};
/// Every entry below `root` in sorted order, directories before their contents, with lstat
/// semantics: symbolic links are reported, never followed; FIFOs, sockets and devices are `other`; a
/// directory that cannot be listed is `unreadable` (and the walk goes on). Fails only when `root`
/// itself cannot be listed.
Result<std::vector<TreeEntry>> walk_tree(const FileSystem& fs, const fs::path& root);

/// The bytes of the regular files under `root`, symbolic links neither followed nor counted.
Result<std::uint64_t> tree_size(const FileSystem& fs, const fs::path& root);

/// A unique name for a temporary sibling of `path` (same directory, so rename() is atomic): the
/// process id, a counter and random bits, so no two processes (or calls) ever share one.
fs::path temp_sibling(const fs::path& path);
/// The process id in a name made by temp_sibling (".<name>.tmp<pid>-<8 hex>-<n>"); nullopt for other names.
std::optional<long> temp_sibling_pid(std::string_view name);
/// True for a temp_sibling file or directory whose process no longer runs and in which nothing was
/// modified for a minute (a process of another PID namespace or host sharing the cache keeps writing).
bool abandoned_temp(const FileSystem& fs, const fs::path& path);

/// A private temporary directory (temp_sibling of parent/stem) that removes itself with its contents.
struct ScratchDir {
  FileSystem& fs;
  fs::path path;
  ScratchDir(FileSystem& f, const fs::path& parent, const std::string& stem)
      : fs(f), path(temp_sibling(parent / stem)) {
    (void)fs.make_dirs(path);
  }
  ~ScratchDir() { (void)fs.remove_all(path); }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
};

}  // namespace kbuild::util
