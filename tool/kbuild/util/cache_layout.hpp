#pragma once
// Where kbuild keeps what it downloads, unpacks and compiles, in one place:
//
//   <root>/downloads/<sha256>/<file>         verified downloads (wheels), by content
//   <root>/toolchains/<name>/                unpacked toolchains (toolchain/provision.hpp names them);
//                                            complete when <name>/.complete exists
//   <root>/objects/<k2>/<key>                the compile cache (cache/compile_cache.hpp): outputs,
//   <root>/manifests/<k2>/<key>              manifests, counters and temporary files
//   <root>/test-envs/<name>/                 Python environments of `kbuild test`, one per Torch
//                                            version, Python version and test requirements
//                                            (usecase/test_variants.hpp); complete when .complete exists
//   <root>/stats, <root>/tmp/
//
// <root> is $KBUILD_CACHE, else $XDG_CACHE_HOME/kbuild, else ~/.cache/kbuild.

#include <filesystem>
#include <string>

#include "kbuild/util/system.hpp"

namespace kbuild::util {

struct CacheLayout {
  std::filesystem::path root;

  static CacheLayout from_environment(const Environment& env);

  std::filesystem::path downloads() const { return root / "downloads"; }
  std::filesystem::path toolchains() const { return root / "toolchains"; }
  std::filesystem::path objects() const { return root / "objects"; }
  std::filesystem::path manifests() const { return root / "manifests"; }
  std::filesystem::path stats() const { return root / "stats"; }
  std::filesystem::path temp() const { return root / "tmp"; }
  std::filesystem::path test_envs() const { return root / "test-envs"; }
  /// The parts `kbuild cache clean` removes (with toolchains: also downloads and toolchains).
  static const char* const* compile_cache_parts();  ///< null-terminated
};

}  // namespace kbuild::util
