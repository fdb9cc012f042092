#pragma once
// Whether build/<variant>/ is what a build of the current sources would install: `kbuild check`,
// `test` and `publish` refuse a stale variant rather than vouch for the .so of an older build.
//
// Read from the build state (.kbuild/state, exec/build_state.hpp) and the manifest of the last
// build's sources (.kbuild/sources, usecase/kernel_source.hpp), without planning or running anything:
// the variant's install job has a record only when the last build that touched the variant finished
// it (the executor drops the record of every job it finds stale); the build inputs now (build.toml,
// sources, include directories, the Python package) must be those of the manifest (an edit, a new
// header); and every record of the variant's jobs (compile, link, install) must still match the
// files it names (headers from depfiles, Torch's headers, objects, the installed files, and the
// manifest itself, which a later build rewrites when the sources differ).

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "kbuild/config/model.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::usecase {

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

/// Error (exit code 1) naming every stale variant, what changed, and the command that rebuilds them.
/// Variants that cannot be compared (unknown) are left to the caller: a warning.
Result<void> refuse_stale(const std::vector<VariantFreshness>& freshness, const std::string& command,
                          const std::filesystem::path& kernel_dir);

/// CUDA variants among `variant_dirs` built for fewer capabilities than build.toml declares for their
/// CUDA version (a local build for the GPU at hand, --cuda-archs): one line each, naming what is missing.
/// A release must serve every GPU it declares, so publish refuses them unless told otherwise.
std::vector<std::string> partial_cuda_variants(const util::FileSystem& fs, const config::KernelConfig& config,
                                               const std::vector<std::filesystem::path>& variant_dirs);

/// What `kbuild publish` releases must be: current (unless allow_stale; variants built elsewhere get
/// a warning) and built for every CUDA capability declared (unless allow_partial_archs).
struct ReleaseGate {
  bool allow_stale = false;
  bool allow_partial_archs = false;
  std::vector<std::filesystem::path> from;  ///< --from directories (empty: build/, which is judged for freshness)
  /// The commit being published (the checkout's HEAD; empty: not a git checkout). A variant whose
  /// metadata.json records another commit is refused unless `allow_other_commit`: gathered CI
  /// artifacts of an older run would otherwise be released under this commit's tag.
  std::string commit;
  bool allow_other_commit = false;
  /// Every variant must carry a metadata.json.sigstore that signs its metadata.json.
  bool require_signed = false;
};
/// Also warns about variants built from a dirty tree (`kernels` warns every consumer of such a release).
Result<void> check_release(const util::FileSystem& fs, const std::filesystem::path& kernel_dir,
                           const config::KernelConfig& config, const ReleaseGate& gate,
                           const std::function<void(const std::string&)>& warn);

/// The variant directories in <kernel_dir>/build, by name.
Result<std::vector<std::string>> built_variant_names(const util::FileSystem& fs,
                                                     const std::filesystem::path& kernel_dir);

}  // namespace kbuild::usecase
