#pragma once
// `kbuild lock` as a library function: pyproject requirements (+ the existing kernels.lock) in,
// the locked dependency tree out, read through a KernelIndex (the Hub, or a fake in tests).
//
// Resolution, per dependency, in the order of `kernels lock` (kernels/locking.py):
//   1. the publisher (the repository's namespace) must be a trusted kernel publisher
//      (GET /api/organizations/<ns>/overview, trustedKernelPublisher), unless the options trust it;
//   2. the spec becomes a commit: a major N is the head of branch vN; bounds the highest release tag
//      vX.Y.Z that satisfies them and whose major X is a branch vX; a name the branch, else the tag,
//      of that name; a commit id itself. An entry of the existing lock for the same dependency is
//      kept as it is (a lock only moves on --upgrade, or when the spec no longer admits it);
//   3. every variant's build/<variant>/metadata.json at that commit is read, and the kernels its
//      `kernel-depends` name are locked the same way (a cycle is an error naming it).
// Top-level bounds and names are recorded as {"revision": "<tag or name>"}: the format has no field
// for the bound itself, so the bound stays in pyproject.toml and a kept entry is checked against it.

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kbuild/lock/index.hpp"
#include "kbuild/lock/lockfile.hpp"
#include "kbuild/lock/pyproject.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::lock {

struct LockOptions {
  bool upgrade_all = false;
  std::set<std::string> upgrade;                     ///< repository ids whose entries are resolved again
  std::set<std::string> trusted;                     ///< namespaces or repository ids trusted without asking the Hub
  std::function<void(const std::string&)> progress;  ///< one line per step
  std::function<void(const std::string&)> warn;
};

/// One locked dependency and how it was found.
struct ResolvedDependency {
  LockEntry entry;
  std::string requested;  ///< the spec as written ("1", "^1.2", "v1.2.0"), or the dependency for transitive ones
  std::string source;     ///< "branch v1", "tag v1.2.3", "commit", "branch main"
  bool kept = false;      ///< taken from the existing kernels.lock
  std::vector<std::string> variants;     ///< build/ folders at the commit, sorted
  std::vector<std::string> required_by;  ///< "pyproject.toml" and/or dependency strings
};

struct LockOutcome {
  std::vector<ResolvedDependency> dependencies;  ///< in lock-file order
  std::string text;                              ///< kernels.lock content
};

/// Resolves `requirements` (see above). Unsatisfiable specs, untrusted publishers, cycles and invalid
/// metadata are errors with exit code 1; Hub failures keep theirs (4).
Result<LockOutcome> resolve_lock(const std::vector<Requirement>& requirements, const std::vector<LockEntry>& existing,
                                 const LockOptions& options, KernelIndex& index);

}  // namespace kbuild::lock
