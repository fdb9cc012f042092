#include "kbuild/util/cache_layout.hpp"

namespace kbuild::util {

CacheLayout CacheLayout::from_environment(const Environment& env) {
  if (auto dir = env.get("KBUILD_CACHE"); dir && !dir->empty()) return {*dir};
  if (auto xdg = env.get("XDG_CACHE_HOME"); xdg && !xdg->empty()) return {std::filesystem::path(*xdg) / "kbuild"};
  // No fallback under a shared directory such as /tmp, where another user could have made the
  // directory first and fed this user's builds; without HOME the caller asks for KBUILD_CACHE.
  auto home = env.get("HOME");
  if (!home || home->empty() || !std::filesystem::path(*home).is_absolute()) return {};
  return {std::filesystem::path(*home) / ".cache" / "kbuild"};
}

const char* const* CacheLayout::compile_cache_parts() {
  static const char* const k_parts[] = {"objects", "manifests", "stats", "tmp", nullptr};
  return k_parts;
}

}  // namespace kbuild::util
