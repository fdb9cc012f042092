#pragma once
// `kbuild check` as a use case: every variant of build/ against the layout, metadata, digest and ABI
// rules (layout/check.hpp), and against the sources (usecase/freshness.hpp: a stale variant is an
// error, a warning with allow_stale; one built elsewhere a warning). Without a readable build.toml
// (a downloaded kernel) nothing is compared with sources.

#include <filesystem>
#include <string>
#include <vector>

#include "kbuild/layout/check.hpp"
#include "kbuild/usecase/services.hpp"

namespace kbuild::usecase {

struct CheckRequest {
  std::filesystem::path kernel_dir;  ///< absolute
  std::string manylinux = "manylinux_2_28";
  bool allow_stale = false;
};

struct CheckedVariant {
  std::string name;
  std::vector<layout::CheckIssue> issues;  ///< freshness first, then the layout's
  std::string signature;                   ///< "unsigned", "signed", "invalid" (metadata.json.sigstore)
};

struct CheckOutcome {
  std::filesystem::path build_dir;
  std::vector<CheckedVariant> variants;
  size_t errors = 0;
  size_t warnings = 0;
};

/// An outcome with errors is still an outcome (the caller prints every issue, then fails); a
/// missing or empty build/ and an unknown policy are errors (exit 2).
Result<CheckOutcome> check_variants(const CheckRequest& request, Services& services);

}  // namespace kbuild::usecase
