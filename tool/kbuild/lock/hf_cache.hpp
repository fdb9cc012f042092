#pragma once
// The Hugging Face cache layout that huggingface_hub and the `kernels` loader read, so that files
// kbuild downloads are found by `get_locked_kernel` and `load_kernel` offline:
//
//   <cache>/kernels--<namespace>--<name>/
//     blobs/<etag>                                  file contents; etag = LFS sha256, else git blob id
//     snapshots/<commit>/<path in repo>             relative symbolic links to ../../blobs/<etag>
//
// <cache> is $KERNELS_CACHE (the `kernels` package's own override), else $HF_HUB_CACHE, else
// $HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
// ~/.cache/huggingface/hub. kbuild writes no refs/ or trees/ files: a snapshot downloaded by commit
// has no ref, and a tree listing would make huggingface_hub treat a one-variant snapshot as incomplete.

#include <filesystem>
#include <map>
#include <string>

namespace kbuild::lock {

struct HfCacheLocation {
  std::filesystem::path root;
  std::string origin;  ///< the variable it came from, or "default"
};

HfCacheLocation resolve_hf_cache(const std::map<std::string, std::string>& env);

/// "kernels--org--name" (huggingface_hub's repo_folder_name for repo type "kernel").
std::string repo_folder_name(const std::string& repo_id);

/// The link target, relative to the link's directory, for a snapshot file `path_in_repo`
/// ("build/v/x.so" -> "../../../../blobs/<etag>").
std::string snapshot_link_target(const std::string& path_in_repo, const std::string& etag);

}  // namespace kbuild::lock
