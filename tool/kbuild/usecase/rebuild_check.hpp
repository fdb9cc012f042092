#pragma once
// `kbuild check --rebuild`: are the variants in build/ what their sources and pins give? Each is
// built again, apart (in <kernel>/.kbuild/rebuild/, without the compile cache), with what built it:
// a variant whose metadata.json records a pinned host toolchain from the matrix with --locked
// (kbuild.lock's pins), any other with the local toolchain; then the two trees are compared and the
// first differing file is reported.

#include <filesystem>
#include <string>
#include <vector>

#include "kbuild/usecase/services.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::usecase {

struct RebuildCheckRequest {
  std::filesystem::path kernel_dir;   ///< absolute
  std::vector<std::string> variants;  ///< empty: every variant in build/
  std::string python = "python3";
  size_t jobs = 1;
  std::string builder_version;  ///< as `kbuild build` records it
  std::string manylinux = "manylinux_2_28";
};

struct RebuiltVariant {
  std::string name;
  std::string difference;  ///< empty: byte-identical; else the first differing file and where
};

struct RebuildCheckOutcome {
  std::vector<RebuiltVariant> variants;
  size_t differing = 0;
};

/// The first difference between two variant directories, "" when they are byte-identical:
/// "_k.abi3.so differs from the rebuild's at byte 4213", "x.py is not in the rebuild", ...
std::string first_difference(const util::FileSystem& fs, const std::filesystem::path& built,
                             const std::filesystem::path& rebuilt);

Result<RebuildCheckOutcome> check_rebuild(const RebuildCheckRequest& request, Services& services);

}  // namespace kbuild::usecase
