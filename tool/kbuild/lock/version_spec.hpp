#pragma once
// What a consumer asks for in `[tool.kernels.dependencies]`, and the release tags it is matched
// against (docs/lock.md has the user-facing grammar).
//
//   1                  Major: the head of branch v1 (exactly what `kernels lock` does)
//   ">=1.2,<2"         Bounds: the highest release tag vX.Y.Z that satisfies every clause
//   "v1.2.0", "main"   Revision: a tag (or branch) name, pinned to what it points at
//   "<40 or 64 hex>"   Revision: a commit id, pinned as is
//
// Bounds grammar (whitespace around clauses and operators is ignored):
//   bounds  := clause ("," clause)*
//   clause  := op? release ["." "*"]        the wildcard only after "==" or "!="
//   op      := ">=" | "<=" | ">" | "<" | "==" | "=" | "!=" | "~=" | "^" | "~"
//   release := N ("." N){0,2}               N a decimal number without sign
// Missing components are zero ("1.2" is 1.2.0). No operator means "==". "~=" (PEP 440) needs two
// components or more: "~=1.4" is ">=1.4,<2", "~=1.4.2" is ">=1.4.2,<1.5". "^" (Cargo) keeps the
// left-most non-zero component: "^1.2" is ">=1.2,<2", "^0.3" is ">=0.3,<0.4", "^0.0.3" is
// ">=0.0.3,<0.0.4". "~" (Cargo) keeps the given major and minor: "~1.2" is ">=1.2,<1.3", "~1" is
// ">=1,<2". Release tags are exactly "v" MAJOR "." MINOR "." PATCH; pre-release or build suffixes
// ("v1.2.0-rc1") are never matched by bounds, only pinned by name.

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "kbuild/util/result.hpp"

namespace kbuild::lock {

/// A release version MAJOR.MINOR.PATCH, as named by a release tag "vMAJOR.MINOR.PATCH".
struct Release {
  std::uint64_t major = 0, minor = 0, patch = 0;

  std::string str() const;  ///< "1.2.0"
  std::string tag() const { return "v" + str(); }
  auto operator<=>(const Release&) const = default;
};

/// Parses a release tag "v1.2.0" (no leading zeros, no suffix); nullopt for anything else.
std::optional<Release> parse_release_tag(std::string_view tag);

/// The major of a version branch "vN" (N decimal, at most 9 digits); nullopt for other names.
std::optional<std::uint64_t> parse_version_branch(std::string_view branch);

/// One clause of a bound, already normalised to a comparison (caret, tilde and ~= expand to two).
struct Comparison {
  enum class Op { ge, gt, le, lt, eq, ne, eq_prefix, ne_prefix };
  Op op = Op::eq;
  Release version;
  int components = 3;  ///< for the prefix operators: how many leading components must match
  bool matches(const Release& release) const;
};

struct Bounds {
  std::string text;  ///< as written
  std::vector<Comparison> comparisons;
  bool matches(const Release& release) const;
};

/// An error in a bound, with the 0-based offset of the offending character within the text.
struct BoundsError {
  std::string message;
  size_t offset = 0;
};

std::expected<Bounds, BoundsError> parse_bounds(std::string_view text);

/// Whether `text` is a full git object id (40 or 64 hex digits).
bool is_commit_id(std::string_view text);

struct MajorSpec {
  std::uint64_t major = 0;
};
struct BoundsSpec {
  Bounds bounds;
};
struct RevisionSpec {
  std::string revision;  ///< a commit id (lowercased) or a tag/branch name
  bool is_commit() const { return is_commit_id(revision); }
};

using VersionSpec = std::variant<MajorSpec, BoundsSpec, RevisionSpec>;

/// "1", ">=1.2,<2", "v1.2.0": the spec as a user would write it.
std::string describe(const VersionSpec& spec);

/// Classifies a string value of the dependency table: a commit id, a bound (starts with an operator
/// or a digit), else a revision name. A malformed bound or revision name is an error.
std::expected<VersionSpec, BoundsError> parse_version_string(std::string_view text);

}  // namespace kbuild::lock
