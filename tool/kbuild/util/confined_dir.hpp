#pragma once
// A directory tree that untrusted archives are unpacked into (a pinned toolchain's .deb packages),
// written so that nothing can leave it: every path is walked from the root's descriptor one component
// at a time with O_NOFOLLOW, so no write, delete or read ever goes through a symbolic link, whatever
// links earlier entries made (a link is only ever created, replaced or removed itself). Names with
// "..", "." or empty components are refused before any system call.
//
// Links are judged against the tree as the kernel would resolve them: resolve() follows the links it
// meets inside the tree (".." after a link applies to where the link led, not to the link's name),
// and escaping_links() checks every link of the finished tree, since a link made earlier can be
// redirected by one made later (`c -> a/b/..` before `a/b -> ..`).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/util/result.hpp"

namespace kbuild::util {

class ConfinedDir {
 public:
  /// Opens `root` (created when missing, not through a link).
  static Result<ConfinedDir> open(const std::filesystem::path& root);
  ConfinedDir(ConfinedDir&& other) noexcept;
  ConfinedDir& operator=(ConfinedDir&&) = delete;
  ~ConfinedDir();

  const std::filesystem::path& root() const { return m_root; }

  /// Creates the directories of `rel` (each must be a directory, not a link to one).
  Result<void> make_dirs(std::string_view rel);
  /// Writes a regular file at `rel` from `next` (ChunkSource of util/fs.hpp), replacing what was
  /// there unless it is a directory; its directory must exist (make_dirs).
  Result<void> write_file(std::string_view rel, const std::function<Result<bool>(std::string&)>& next, bool executable);
  /// A symbolic link at `rel` to `target` (stored as given), replacing what was there unless it is a
  /// directory.
  Result<void> create_symlink(std::string_view rel, std::string_view target);
  /// The content of the regular file at `rel`, at most `limit` bytes (a link is refused).
  Result<std::string> read_file(std::string_view rel, std::uint64_t limit = 1ull << 32) const;

  /// Where `target`, read from the directory `from` (both relative to the root), leads inside the
  /// tree as it is now, following its links (at most 40, as the kernel); nullopt when it leaves the
  /// root or loops. A component that does not exist yet is taken as a name.
  std::optional<std::string> resolve(std::string_view from, std::string_view target) const;
  /// Every link of the tree whose target leaves the root (as resolve() judges it), relative paths.
  Result<std::vector<std::string>> escaping_links() const;

 private:
  ConfinedDir(std::filesystem::path root, int fd) : m_root(std::move(root)), m_fd(fd) {}
  /// The descriptor of the directory holding `rel`'s last component (walked without links), and that
  /// component; the caller closes the descriptor.
  Result<std::pair<int, std::string>> parent_of(std::string_view rel) const;

  std::filesystem::path m_root;
  int m_fd = -1;
};

}  // namespace kbuild::util
