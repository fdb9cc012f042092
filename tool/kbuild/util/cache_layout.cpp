#include "kbuild/util/cache_layout.hpp"

namespace kbuild::util {

CacheLayout CacheLayout::from_environment(const Environment& env) {
  if (auto dir = env.get("KBUILD_CACHE"); dir && !dir->empty()) return {*dir};
  if (auto xdg = env.get("XDG_CACHE_HOME"); xdg && !xdg->empty()) return {std::filesystem::path(*xdg) / "kbuild"};
  return {std::filesystem::path(env.get_or("HOME", "/tmp")) / ".cache" / "kbuild"};
}

const char* const* CacheLayout::compile_cache_parts() {
  static const char* const k_parts[] = {"objects", "manifests", "stats", "tmp", nullptr};
  return k_parts;
}

}  // namespace kbuild::util
