#pragma once
// `kbuild init` as a library function: a kernel project from templates/init/ (a relu op with a CPU
// and/or a CUDA component, its binding, Python package and tests, .gitignore, .clangd), the CI
// workflow of `kbuild ci github`, and a git repository on branch `main` (the branch the workflow
// builds) with everything staged. With the workflow, kbuild.lock too (`kbuild toolchains lock`: the
// workflow builds --locked, so the first push is locked); when the lock cannot be made (offline, no
// pip), the project is still created and the outcome says why. The project is assembled in a
// temporary sibling and renamed into place, so an interrupted or refused init leaves nothing behind.

#include <filesystem>
#include <string>
#include <vector>

#include "kbuild/usecase/services.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::usecase {

struct InitRequest {
  std::string name;              ///< the kernel name (general.name)
  std::filesystem::path target;  ///< absolute; must not exist, or be an empty directory
  std::string repo_id;  ///< [general.hub] repo-id; empty: <owner of the Hub token>/<name>, else your-org/<name>
  /// With an empty repo_id: ask the Hub whose token is configured (3 s at most, never offline).
  bool owner_from_token = true;
  std::string license = "Apache-2.0";
  std::vector<std::string> backends = {"cpu", "cuda"};  ///< a non-empty subset of cpu, cuda
  bool git = true;                                      ///< git init + add
  bool ci = true;                                       ///< .github/workflows/kbuild-<name>.yml
  bool overwrite = false;          ///< write into a target that is not empty (same-named files replaced, others kept)
  bool lock = true;                ///< with `ci`: write kbuild.lock (resolving needs pip and the network)
  std::string python = "python3";  ///< whose pip resolves the pins
};

struct InitOutcome {
  std::vector<std::string> files;  ///< written, relative to the target
  bool git_created = false;        ///< false also when git was asked for but is not available
  std::string repo_id;             ///< as written into build.toml
  bool owner_from_token = false;   ///< repo_id's owner came from the Hub token
  bool locked = false;             ///< kbuild.lock was written
  std::string lock_error;          ///< why it was not, when it was asked for ("" otherwise)
};

/// Validates the request (exit 2 for a bad name, license, backend list or a non-empty target), then
/// writes the project.
Result<InitOutcome> init_project(const InitRequest& request, Services& services);

}  // namespace kbuild::usecase
