#pragma once
// `kbuild versions` and `kbuild info` as library functions: what a kernel repository publishes,
// as data for the CLI to print (text or JSON).
//
// Versions are the branches vN (what `get_kernel(..., version=N)` loads); releases are the tags
// vX.Y.Z (what `revision="vX.Y.Z"` and version bounds in pyproject.toml resolve to). A release
// belongs to the version of its major; tags of a major without a branch are listed apart, since
// `kbuild lock` does not resolve bounds to them.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/layout/metadata.hpp"
#include "kbuild/lock/index.hpp"
#include "kbuild/lock/variant_select.hpp"

namespace kbuild::lock {

/// What a machine would load from one revision.
struct VariantChoice {
  std::vector<std::string> variants;       ///< build/ folders, sorted (unparseable ones included)
  std::vector<VariantDecision> decisions;  ///< with a known system: every parseable variant, ranked
  std::optional<std::string> chosen;       ///< the loader's pick
};

struct ReleaseInfo {
  std::string tag;
  std::string commit;
  VariantChoice choice;
};

struct VersionInfo {
  std::uint64_t major = 0;
  std::string commit;  ///< head of branch v<major>
  VariantChoice choice;
  std::vector<ReleaseInfo> releases;  ///< tags v<major>.Y.Z, oldest first
};

struct VersionsReport {
  std::string repo_id;
  std::vector<VersionInfo> versions;         ///< by major, ascending
  std::vector<ReleaseInfo> orphan_releases;  ///< release tags whose major has no branch
  std::vector<std::string> other_branches;   ///< e.g. main
  std::vector<std::string> other_tags;       ///< tags that are not vX.Y.Z
};

/// Lists versions and releases; with `system`, also what it would load from each.
Result<VersionsReport> list_versions(const std::string& repo_id, const std::optional<SystemFacts>& system,
                                     KernelIndex& index);

/// Which revision `kbuild info` describes.
struct RevisionSelector {
  std::optional<std::uint64_t> major;   ///< --version N
  std::optional<std::string> revision;  ///< --revision R (branch, tag or commit)
  // neither: the highest version branch
};

struct VariantDetails {
  std::string name;
  std::optional<layout::Metadata> metadata;
  std::string metadata_error;  ///< when metadata.json is missing or invalid
  bool has_signature = false;  ///< metadata.json.sigstore present
  std::size_t files = 0;
  std::uint64_t bytes = 0;
};

struct RevisionReport {
  std::string repo_id;
  std::string revision;  ///< as selected: "v1", "v1.2.0", a commit
  std::string source;    ///< "branch v1", "tag v1.2.0", "commit"
  std::string commit;
  std::vector<VariantDetails> variants;
  VariantChoice choice;
};

Result<RevisionReport> describe_revision(const std::string& repo_id, const RevisionSelector& selector,
                                         const std::optional<SystemFacts>& system, KernelIndex& index);

}  // namespace kbuild::lock
