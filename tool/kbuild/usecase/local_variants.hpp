#pragma once
// The variants a plain `kbuild build` makes: one per backend of general.backends that the local
// toolchain can build (cpu always; cuda with a toolkit whose major matches Torch's), a noarch
// variant for a backend without components, a torch-stable-abi variant for a backend with a
// stable-ABI version (the local Torch must be at least that version), and errors for what cannot
// work here.

#include <functional>
#include <string>
#include <vector>

#include "kbuild/config/model.hpp"
#include "kbuild/plan/planner.hpp"
#include "kbuild/toolchain/toolchain.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::usecase {

/// `wanted`: the --backend names (empty: every buildable backend). `warn` hears about backends
/// that are skipped.
Result<std::vector<plan::VariantBuild>> select_local_variants(const config::KernelConfig& config,
                                                              const toolchain::Toolchain& tc,
                                                              const std::vector<std::string>& wanted,
                                                              const std::function<void(const std::string&)>& warn);

}  // namespace kbuild::usecase
