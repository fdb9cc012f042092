#pragma once
// An in-memory FileSystem for unit tests: files with contents and modification times, directories
// implied by file paths or created explicitly, and a log of what was written.

#include <map>
#include <set>
#include <string>
#include <vector>

#include "kbuild/util/fs.hpp"

namespace kbuild::fakes {

class MemFileSystem final : public util::FileSystem {
 public:
  /// Creates or replaces a file; mtime advances on every write, like a real clock would.
  void put(const std::string& path, std::string content, bool executable = false);
  /// Changes only the mtime (like `touch`).
  Result<void> touch(const std::filesystem::path& path) override;
  bool has(const std::string& path) const { return m_files.count(path) > 0; }
  const std::string& content(const std::string& path) const { return m_files.at(path).content; }
  /// Paths written through write_file_atomic, in order.
  const std::vector<std::string>& written() const { return m_written; }
  void clear_log() { m_written.clear(); }

  util::FileStat stat(const std::filesystem::path& path) const override;
  util::FileStat lstat(const std::filesystem::path& path) const override;
  Result<std::string> read_file(const std::filesystem::path& path) const override;
  Result<void> write_file_atomic(const std::filesystem::path& path, std::string_view content,
                                 bool executable = false) override;
  Result<std::vector<util::DirEntry>> list_dir(const std::filesystem::path& path) const override;
  Result<void> make_dirs(const std::filesystem::path& path) override;
  Result<void> remove_all(const std::filesystem::path& path) override;
  Result<void> rename(const std::filesystem::path& from, const std::filesystem::path& to) override;
  /// Links are followed by stat and read_file (target resolved against the link's directory).
  Result<void> create_symlink(const std::filesystem::path& target, const std::filesystem::path& link) override;
  /// Locks held by handles alive now (a second lock on one path is refused, as another process's
  /// would be; waiting is not modelled: `wait` on a held lock is an error).
  Result<std::unique_ptr<util::FileLock>> lock_file(const std::filesystem::path& path, bool wait) override;
  Result<std::filesystem::path> real_path(const std::filesystem::path& path) const override;
  bool locked(const std::string& path) const { return m_locks.count(path) > 0; }
  /// The target of a link created with create_symlink, or "" if `path` is none.
  std::string link_target(const std::string& path) const;

 private:
  struct File {
    std::string content;
    std::int64_t mtime_ns = 0;
    bool executable = false;
    std::string link;  ///< non-empty: a symbolic link with this target
  };
  bool is_dir(const std::string& path) const;
  /// The path a link points to (resolved), or `path` itself when it is not a link.
  std::string follow(const std::string& path) const;
  std::map<std::string, File> m_files;
  std::set<std::string> m_locks;
  std::set<std::string> m_dirs;
  std::vector<std::string> m_written;
  std::int64_t m_clock = 1'000'000'000;
};

}  // namespace kbuild::fakes
