#pragma once
// `kbuild variants` as a use case: the variants of the kernel's matrix (kbuild.toml or kbuild's
// table, after the filters), each with whether its toolchains are here already; or, with `python`,
// what a local build with that interpreter's Torch and the system CUDA would make. What cannot be
// built is left out with its reason, never silently.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/config/variant.hpp"
#include "kbuild/plan/matrix.hpp"
#include "kbuild/usecase/services.hpp"
#include "kbuild/util/version.hpp"

namespace kbuild::usecase {

struct ListVariantsRequest {
  std::filesystem::path kernel_dir;   ///< absolute
  std::optional<std::string> python;  ///< local mode: what `kbuild build --python P` builds
  plan::MatrixFilter filter;          ///< matrix mode only
  std::vector<std::string> cuda_toolkits;
};

struct ListedVariant {
  config::Variant variant;
  std::optional<util::Version> torch;  ///< the Torch it is built against
  std::optional<util::Version> cuda;   ///< the CUDA toolkit it is built with
  bool toolchain_present = true;       ///< false: a build fetches it first
};

struct ListVariantsOutcome {
  std::string kernel;  ///< general.name
  std::string origin;  ///< where the list comes from: the matrix's origin, or "local (python, torch X)"
  std::vector<ListedVariant> variants;
  std::vector<std::string> left_out;  ///< "<variant or what>: <reason>"
};

Result<ListVariantsOutcome> list_variants(const ListVariantsRequest& request, Services& services);

}  // namespace kbuild::usecase
