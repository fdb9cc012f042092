#pragma once
// The LFS-or-regular rule of the registry: git wildmatch, the filter=lfs rules of .gitattributes, the
// rules of .gitignore, and the decision for one file. Pure functions of text.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kbuild::server {

/// Files at or above this size are stored with LFS (§10.2 of docs/hub-api: 10 MiB).
inline constexpr std::uint64_t k_lfs_size_threshold = 10ull * 1024 * 1024;

/// Git wildmatch of one pattern against a '/'-separated path: '*' and '?' stay inside a component,
/// "[...]" classes ("!" or "^" negates), '\' escapes, and "**" as a whole component matches any number
/// of components ("**/x", "a/**/b", "a/**").
bool wildmatch(std::string_view pattern, std::string_view path);

/// The filter=lfs rules of a .gitattributes file. A pattern without '/' matches the basename at any
/// depth; one with '/' matches the whole path (a leading '/' is ignored). Later lines win;
/// "-filter", "!filter" and "filter=<other>" turn LFS off again.
class GitAttributes {
 public:
  GitAttributes() = default;
  explicit GitAttributes(std::string_view text);
  bool is_lfs(std::string_view path) const;

 private:
  struct Rule {
    std::string pattern;
    bool lfs = false;
  };
  std::vector<Rule> m_rules;
};

/// The .gitignore rules of a repo's root: "#" comments, "!" re-includes, a trailing '/' only matches
/// directories, a '/' elsewhere anchors the pattern at the root; a file inside an ignored directory
/// is ignored.
class GitIgnore {
 public:
  GitIgnore() = default;
  explicit GitIgnore(std::string_view text);
  bool is_ignored(std::string_view path) const;

 private:
  struct Rule {
    std::string pattern;
    bool negated = false;
    bool directory_only = false;
    bool anchored = false;
  };
  std::optional<bool> match(std::string_view path, bool is_directory) const;
  std::vector<Rule> m_rules;
};

/// Whether a file goes to LFS: never when empty; otherwise when its path matches a filter=lfs
/// pattern, when the first 512 bytes (`sample`) hold a NUL byte, or when it is at least
/// k_lfs_size_threshold bytes.
bool use_lfs(const GitAttributes& attributes, std::string_view path, std::uint64_t size, std::string_view sample);

/// The .gitattributes of a new repo: the Hub's default list of binary formats stored with LFS.
std::string_view default_gitattributes();

}  // namespace kbuild::server
