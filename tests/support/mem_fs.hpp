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
  Result<std::string> read_file(const std::filesystem::path& path) const override;
  Result<void> write_file_atomic(const std::filesystem::path& path, std::string_view content,
                                 bool executable = false) override;
  Result<std::vector<util::DirEntry>> list_dir(const std::filesystem::path& path) const override;
  Result<void> make_dirs(const std::filesystem::path& path) override;
  Result<void> remove_all(const std::filesystem::path& path) override;
  Result<void> rename(const std::filesystem::path& from, const std::filesystem::path& to) override;

 private:
  struct File {
    std::string content;
    std::int64_t mtime_ns = 0;
    bool executable = false;
  };
  bool is_dir(const std::string& path) const;
  std::map<std::string, File> m_files;
  std::set<std::string> m_dirs;
  std::vector<std::string> m_written;
  std::int64_t m_clock = 1'000'000'000;
};

}  // namespace kbuild::fakes
