#pragma once
// What git, and the file systems a clone lands on, would refuse or conflate in a repo's file paths:
// the registry refuses such paths with a clear 400 instead of storing what no clone can check out
// (git's own rules for `.git` lookalikes, verify_path and is_ntfs_dotgit/is_hfs_dotgit, plus Windows'
// reserved names and characters, Unicode that is not NFC, and paths that differ only in case).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kbuild::server {

/// Why `path` (already is_valid_repo_path) cannot be stored, or nullopt: invalid UTF-8; a component
/// that is `.git` in any case or as HFS+ or NTFS read it (ignorable code points inside, trailing dots
/// or spaces, the short name `git~1`); Unicode that HFS+ ignores or that reorders text (zero-width
/// characters, bidirectional controls) anywhere; a path not in Unicode NFC (its NFD twin would be
/// another file on Linux and the same on macOS); a Windows-reserved component (CON, PRN, AUX, NUL,
/// COM0-9, LPT0-9, with or without an extension), a component ending in '.' or ' ', or one of
/// `<>:"|?*` or a control character.
std::optional<std::string> path_problem(std::string_view path);

/// The lowercase form of a path (Unicode lowercase mapping, NFC): two paths of one tree with the same
/// form are one file on case-insensitive file systems (macOS, Windows).
std::string case_fold(std::string_view path);

/// The first pair of `paths` that differ but fold to the same (case_fold), or nullopt.
std::optional<std::pair<std::string, std::string>> case_collision(const std::vector<std::string>& paths);

}  // namespace kbuild::server
