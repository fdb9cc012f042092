#pragma once
// What `kbuild publish` uploads, read and checked before any request: the variant directories of
// build/ or of the directories given with --from (artifacts built on other machines), each matching
// the digest of its metadata.json, all of one kernel version and one ops id (the same sources), plus
// benchmarks/benchmark*.py. A variant's metadata.json.sigstore (a Sigstore bundle over its
// metadata.json, made by CI) travels with it; it is outside the digest, as in the `kernels` package.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "kbuild/hub/commit_plan.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::hub {

/// The validated variants and the kernel version they agree on.
struct BuildInventory {
  std::vector<std::string> variants;  ///< sorted
  std::int64_t version = 0;
  std::string unique_id;                     ///< the ops id's last part ("99fa3ee", "src1a2b3c4d"), shared by all
  std::vector<std::string> signed_variants;  ///< those with a metadata.json.sigstore
  std::vector<LocalFile> files;              ///< build/<variant>/... and benchmarks/benchmark*.py
};

/// Reads and verifies the variants of `sources` (empty: <kernel_dir>/build). A source holding a
/// metadata.json is one variant directory (named by its directory); any other source is a directory
/// of variant directories. One variant found twice must be the same build (same digest).
Result<BuildInventory> inventory_build(const util::FileSystem& fs, const std::filesystem::path& kernel_dir,
                                       const std::vector<std::filesystem::path>& sources = {});

/// The variants of `expected` (the kernel's matrix) that `present` lacks, in order.
std::vector<std::string> missing_variants(const std::vector<std::string>& expected,
                                          const std::vector<std::string>& present);

}  // namespace kbuild::hub
