#pragma once
// kernels.lock, as the `kernels` package (0.17) reads and writes it: a JSON array with one object
// per locked kernel dependency,
//
//   [
//     {
//       "dependency": {
//         "repo-id": "org/name",
//         "version": 1                      (or "revision": "<tag, branch or commit>")
//       },
//       "lock": {
//         "commit": "<40 or 64 lowercase hex>"
//       }
//     }
//   ]
//
// sorted by repo id (bytewise), then integer versions (ascending) before revisions (bytewise);
// two-space indentation, no trailing newline. render() gives exactly the bytes `kernels lock`
// writes for the same entries; parse() is as strict as `KernelLocks.from_json` (unknown fields,
// duplicate dependencies and malformed commits are errors).

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "kbuild/util/result.hpp"

namespace kbuild::lock {

/// A dependency as the lock file keys it: a repository and a major version or a revision.
struct Dependency {
  std::string repo_id;
  std::variant<std::uint64_t, std::string> version;  ///< major version, or revision

  bool is_major() const { return std::holds_alternative<std::uint64_t>(version); }
  std::uint64_t major() const { return std::get<std::uint64_t>(version); }
  const std::string& revision() const { return std::get<std::string>(version); }
  /// "org/name@1" or "org/name@v1.2.0", for messages.
  std::string str() const;

  std::strong_ordering operator<=>(const Dependency& other) const;
  bool operator==(const Dependency& other) const { return (*this <=> other) == 0; }
};

struct LockEntry {
  Dependency dependency;
  std::string commit;
};

/// Sorts the entries (the file's order) and renders them; duplicates must have been removed.
std::string render_lockfile(std::vector<LockEntry> entries);

/// Parses kernels.lock text; `file` names it in error messages (exit code 2).
Result<std::vector<LockEntry>> parse_lockfile(std::string_view text, const std::string& file);

}  // namespace kbuild::lock
