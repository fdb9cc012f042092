#include "kbuild/lock/hf_cache.hpp"

#include <algorithm>

namespace kbuild::lock {

namespace {

std::string get(const std::map<std::string, std::string>& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() ? "" : it->second;
}

std::filesystem::path expand_home(const std::string& path, const std::map<std::string, std::string>& env) {
  if (path == "~" || path.starts_with("~/")) return get(env, "HOME") + path.substr(1);
  return path;
}

}  // namespace

HfCacheLocation resolve_hf_cache(const std::map<std::string, std::string>& env) {
  for (const char* name : {"KERNELS_CACHE", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"})
    if (!get(env, name).empty()) return {expand_home(get(env, name), env), name};
  if (!get(env, "HF_HOME").empty()) return {expand_home(get(env, "HF_HOME"), env) / "hub", "HF_HOME"};
  if (!get(env, "XDG_CACHE_HOME").empty())
    return {expand_home(get(env, "XDG_CACHE_HOME"), env) / "huggingface" / "hub", "XDG_CACHE_HOME"};
  return {std::filesystem::path(get(env, "HOME")) / ".cache" / "huggingface" / "hub", "default"};
}

std::string repo_folder_name(const std::string& repo_id) {
  std::string out = "kernels";
  size_t start = 0;
  while (true) {
    size_t slash = repo_id.find('/', start);
    out += "--" + repo_id.substr(start, slash == std::string::npos ? slash : slash - start);
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return out;
}

std::string snapshot_link_target(const std::string& path_in_repo, const std::string& etag) {
  // The link lives in snapshots/<commit>/<dirs of path_in_repo>/: two levels plus one per '/'.
  size_t depth = 2 + static_cast<size_t>(std::count(path_in_repo.begin(), path_in_repo.end(), '/'));
  std::string target;
  for (size_t i = 0; i < depth; ++i) target += "../";
  return target + "blobs/" + etag;
}

}  // namespace kbuild::lock
