#pragma once
// What git says about the directory a kernel lives in: the HEAD commit (provenance), the id of the
// kernel directory's tree at HEAD (the ops id's unique part), and whether tracked files under the
// kernel directory differ from HEAD.

#include <filesystem>
#include <optional>
#include <string>

#include "kbuild/util/process.hpp"

namespace kbuild::util {

struct GitState {
  std::string commit;  ///< HEAD, 40 hex
  std::string tree;    ///< tree id of the kernel directory at HEAD
  bool dirty = false;  ///< tracked files under the kernel directory changed (untracked files and build/ ignored)
};

/// nullopt when `dir` is not inside a git work tree, git is missing, or HEAD has no commit yet.
std::optional<GitState> git_state(ProcessLauncher& launcher, const std::filesystem::path& dir);

}  // namespace kbuild::util
