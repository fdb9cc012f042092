#pragma once
// What git says about the directory a kernel lives in, for metadata.json's provenance: the HEAD
// commit, and whether tracked files under the kernel directory differ from it. One `git status`
// process answers both (porcelain v2 with the branch header), so a no-op build pays for one spawn.

#include <filesystem>
#include <optional>
#include <string>

#include "kbuild/util/process.hpp"

namespace kbuild::util {

struct GitState {
  std::string commit;  ///< HEAD, 40 (or 64) hex
  bool dirty = false;  ///< tracked files under the kernel directory changed (untracked files and build/ ignored)
};

/// nullopt when `dir` is not inside a git work tree, git is missing, or HEAD has no commit yet.
std::optional<GitState> git_state(ProcessLauncher& launcher, const std::filesystem::path& dir);

/// Parses `git status --porcelain=v2 --branch` output (pure).
std::optional<GitState> parse_git_status(const std::string& porcelain_v2);

}  // namespace kbuild::util
