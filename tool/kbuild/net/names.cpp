#include "kbuild/net/names.hpp"

#include <algorithm>

#include "kbuild/util/strings.hpp"

namespace kbuild::net {

bool is_valid_repo_name(std::string_view name) {
  if (name.empty() || name.size() > 96) return false;
  auto allowed = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.';
  };
  if (!std::all_of(name.begin(), name.end(), allowed)) return false;
  if (name.front() == '-' || name.front() == '.' || name.back() == '-' || name.back() == '.') return false;
  if (name.find("--") != std::string_view::npos || name.find("..") != std::string_view::npos) return false;
  return !name.ends_with(".git");
}

bool is_valid_namespace(std::string_view ns) {
  static constexpr std::string_view k_reserved[] = {"api", "datasets", "spaces", "kernels", "models", "lfs"};
  if (!is_valid_repo_name(ns)) return false;
  return std::find(std::begin(k_reserved), std::end(k_reserved), ns) == std::end(k_reserved);
}

// The floor shared by client and registry; the registry adds server/path_rules.hpp on top (names a clone
// could not check out: .git lookalikes, Windows-reserved names, non-NFC, case collisions).
bool is_valid_repo_path(std::string_view path) {
  if (path.empty() || path.size() > 4096 || path.front() == '/') return false;
  if (path.find_first_of(std::string_view("\0\r\n", 3)) != std::string_view::npos) return false;
  for (const auto& part : util::split(path, '/'))
    if (part.empty() || part == "." || part == ".." || part == ".git") return false;
  return true;
}

// git's own rules, so that a branch or tag made here can exist in a git clone: "x.lock" is the lock file
// git takes to update ref x, "@{" is reflog syntax, and git refuses "HEAD" as a branch name.
bool is_valid_ref_name(std::string_view name) {
  if (name.empty() || name.size() > 255 || name == "HEAD") return false;
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7f || c == ' ' ||
        std::string_view("~^:?*[\\").find(static_cast<char>(c)) != std::string_view::npos)
      return false;
  if (name.find("..") != std::string_view::npos || name.find("//") != std::string_view::npos ||
      name.find("@{") != std::string_view::npos)
    return false;
  if (name.front() == '-' || name.front() == '/' || name.back() == '/' || name.back() == '.' || name.ends_with(".lock"))
    return false;
  for (const auto& part : util::split(name, '/'))
    if (part.starts_with(".")) return false;
  return true;
}

// Split at the first '/': a second one lands in the name, whose character set refuses it.
bool is_valid_repo_id(std::string_view id) {
  size_t slash = id.find('/');
  return slash != std::string_view::npos && is_valid_namespace(id.substr(0, slash)) &&
         is_valid_repo_name(id.substr(slash + 1));
}

}  // namespace kbuild::net
