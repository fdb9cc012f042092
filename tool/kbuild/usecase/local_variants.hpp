#pragma once
// The variants a plain `kbuild build` makes: one per backend of general.backends that the local
// toolchain can build (cpu always; cuda with a toolkit whose major matches Torch's), a noarch
// variant for a backend without components, a torch-stable-abi variant for a backend with a
// stable-ABI version (the local Torch must be at least that version), and errors for what cannot
// work here.

#include <functional>
#include <optional>
#include <string>
#include <utility>
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

/// Names a kernel's variants go by, under what makes them: "built in build/", "a local build here",
/// "the matrix".
using VariantNameGroups = std::vector<std::pair<std::string, std::vector<std::string>>>;

/// The usage error for the first of `wanted` that no group names, with the closest name of any
/// group ("did you mean …?") and every group; nullopt when each is known.
std::optional<Error> unknown_variant_error(const std::vector<std::string>& wanted, const VariantNameGroups& known);

}  // namespace kbuild::usecase
