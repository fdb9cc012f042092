#pragma once
// CUDA architecture selection, following kernel-builder (its CMake preamble; table in docs/build-toml.md): a default
// capability list per CUDA toolkit version, and the "loose intersection" of a component's cuda-capabilities with it.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/util/version.hpp"

namespace kbuild::plan {

/// The default capability list for a CUDA toolkit version, e.g. {"7.5", ..., "12.1+PTX"} for 13.x.
std::vector<std::string> default_cuda_capabilities(const util::Version& cuda);

/// kernel-builder's cuda_archs_loose_intersection(requested, base): for each base arch, the highest
/// requested arch <= it with the same major (PTX-requested archs match across majors); "a"/"f"
/// suffixed requests kept when their base is in `base`; "+PTX" re-applied. Sorted naturally.
/// `base` must not carry +PTX suffixes. An empty result means "nothing to build".
std::vector<std::string> loose_intersection(const std::vector<std::string>& requested,
                                            const std::vector<std::string>& base);

/// The requested capabilities (as written, +PTX kept) that the effective list of CUDA `cuda` leaves out
/// (kernel-builder's loose intersection: a capability serves the toolkit's architectures of its major
/// version at or above it, unless a closer requested one does): kernel-builder drops them without a
/// word; kbuild's build warns.
std::vector<std::string> unsupported_cuda_capabilities(const std::vector<std::string>& requested,
                                                       const util::Version& cuda);

/// The effective capabilities of a component: `requested` intersected with the defaults, or the
/// defaults (with their +PTX) when nothing was requested.
std::vector<std::string> effective_cuda_capabilities(const std::vector<std::string>& requested,
                                                     const util::Version& cuda);

/// nvcc -gencode arguments for capabilities ("9.0" -> arch=compute_90,code=sm_90; "12.1+PTX" adds
/// code=compute_121). Returns the flat argv list.
std::vector<std::string> gencode_flags(const std::vector<std::string>& capabilities);

/// Removes a "+PTX" suffix.
std::string strip_ptx(const std::string& capability);

/// A list of capabilities as --cuda-archs and KBUILD_CUDA_ARCHS take it: "8.0,9.0", "8.0;9.0" or
/// "8.0 9.0" (TORCH_CUDA_ARCH_LIST's separators), each "major.minor" with an optional a/f suffix;
/// nullopt when malformed or empty.
std::optional<std::vector<std::string>> parse_arch_list(std::string_view text);

/// The capabilities of `archs` whose capability without +PTX is in `only`, in order.
std::vector<std::string> restrict_archs(const std::vector<std::string>& archs, const std::vector<std::string>& only);

}  // namespace kbuild::plan
