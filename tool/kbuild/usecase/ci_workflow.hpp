#pragma once
// `kbuild ci github`: a GitHub Actions workflow (templates/ci/github.yml.in) that fans a kernel's
// matrix out to one build job per variant, shares the remote compile cache, and on a tag gathers
// the artifacts and publishes them (docs/scale.md).

#include <filesystem>
#include <string>

#include "kbuild/config/model.hpp"
#include "kbuild/usecase/services.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/process.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::usecase {

/// What the workflow reads from the repository's settings, one per line, for people to set up.
inline constexpr const char* k_workflow_settings =
    "  vars.KBUILD_WHEEL_URL + vars.KBUILD_WHEEL_SHA256   kbuild's wheel, pinned (or vars.KBUILD_REPO +\n"
    "                                                     vars.KBUILD_REF: kbuild built once per run)\n"
    "  secrets.HF_TOKEN                                   publishing on tags v* (environment \"release\")\n"
    "  vars.KBUILD_GPU_RUNNER                             optional: a runner label with a GPU, where the\n"
    "                                                     CUDA variants' tests run before a release\n"
    "  vars.KBUILD_SIGNING                                optional: required or off (default: sign where\n"
    "                                                     the job has an OIDC token, else say why not)\n"
    "  vars.KBUILD_TORCH_INDEX                            optional: where tests get Torch (--torch-index)\n"
    "  vars.KBUILD_REMOTE_CACHE, secrets.KBUILD_REMOTE_CACHE_TOKEN   optional: a shared compile cache\n";

struct CiWorkflow {
  std::filesystem::path path;  ///< <repository root>/.github/workflows/kbuild-<name>.yml
  std::string text;
};

/// The workflow for the kernel in `kernel_dir`: the repository root is the git top level of the
/// kernel directory (the kernel directory itself outside git), and the workflow names the kernel
/// by its path relative to that root ("." for a kernel at the root).
Result<CiWorkflow> github_workflow(util::ProcessLauncher& launcher, const util::FileSystem& fs,
                                   const config::KernelConfig& config, const std::filesystem::path& kernel_dir);

struct CiRequest {
  std::filesystem::path kernel_dir;  ///< absolute
  std::filesystem::path output;      ///< absolute; empty: the workflow's own path
  bool write = true;                 ///< false (--stdout): only render
  bool force = false;                ///< replace a workflow that differs (edited, or by an older kbuild)
};

struct CiOutcome {
  CiWorkflow workflow;
  std::filesystem::path written;  ///< where it was written; empty when not
  bool up_to_date = false;        ///< the file was already there with this content
};

/// `kbuild ci github`: renders the workflow and writes it, refusing (exit 2) to replace a file that
/// differs without `force`.
Result<CiOutcome> ci_workflow(const CiRequest& request, Services& services);

/// The same, pure: for a kernel at `kernel_rel` (relative, "." for the root) of `repo_root`.
Result<CiWorkflow> render_github_workflow(const config::KernelConfig& config, const std::filesystem::path& repo_root,
                                          const std::string& kernel_rel);

}  // namespace kbuild::usecase
