#pragma once
// Whether build/<variant>/ is what a build of the current sources would install: `kbuild check`,
// `test` and `publish` refuse a stale variant rather than vouch for the .so of an older build.
//
// Read from the build state (.kbuild/state, exec/build_state.hpp), without planning or running
// anything: the variant's install job has a record only when the last build that touched the
// variant finished it (the executor drops the record of every job it finds stale); every record
// of the variant's jobs (compile, link, install) must still match the files it names (sources,
// headers from depfiles, Torch's headers, objects, the installed files); and the install job's
// inputs, which are all the kernel's build inputs (build.toml, sources, include directories, the
// Python package), must cover every build input there is now (a new header is a change too).

#include <filesystem>
#include <string>
#include <vector>

#include "kbuild/config/model.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::build {

struct VariantFreshness {
  enum class State {
    current,  ///< built from the sources as they are, by a build that finished it
    stale,    ///< older than its sources, or its last build did not finish
    unknown,  ///< no record of building it here (built elsewhere, or .kbuild/ was removed)
  };
  std::string variant;
  State state = State::unknown;
  std::string reason;  ///< for stale and unknown: what changed, in words
};

/// The freshness of each named variant of the kernel in `kernel_dir`.
Result<std::vector<VariantFreshness>> variant_freshness(const util::FileSystem& fs,
                                                        const std::filesystem::path& kernel_dir,
                                                        const config::KernelConfig& config,
                                                        const std::vector<std::string>& variants);

/// Error (exit code 1) naming every stale variant (and, with `unknown_too`, every one that cannot be
/// compared), what changed, and the command that rebuilds them.
Result<void> refuse_stale(const std::vector<VariantFreshness>& freshness, const std::string& command,
                          const std::filesystem::path& kernel_dir, bool unknown_too = false);

/// The variant directories in <kernel_dir>/build, by name.
Result<std::vector<std::string>> built_variant_names(const util::FileSystem& fs,
                                                     const std::filesystem::path& kernel_dir);

}  // namespace kbuild::build
