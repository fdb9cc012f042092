#pragma once
// `kbuild build` as a library function (the shape of usecase/services.hpp): kernel directory and
// options in, build/<variant>/ and a summary (as data) out.
//
//   1. load build.toml (diagnostics to the reporter; exit 2 on errors, nothing written);
//   2. the variants: the local toolchain's (usecase/local_variants.hpp), or the matrix's with pinned
//      toolchains provisioned from kbuild.lock (usecase/matrix_session.hpp);
//   3. the identity (ops id) and the job graph (plan/planner.hpp);
//   4. the executor runs what is stale, with the compile cache, and records the state;
//   5. failures and interrupts become errors (exit 1 and 130); success is a BuildOutcome.

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/config/diagnostic.hpp"
#include "kbuild/exec/command_runner.hpp"
#include "kbuild/exec/executor.hpp"
#include "kbuild/exec/reporter.hpp"
#include "kbuild/plan/matrix.hpp"
#include "kbuild/toolchain/provision.hpp"
#include "kbuild/usecase/services.hpp"
#include "kbuild/usecase/timings.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/process.hpp"
#include "kbuild/util/result.hpp"
#include "kbuild/util/system.hpp"

namespace kbuild::usecase {

struct BuildRequest {
  std::filesystem::path kernel_dir;  ///< absolute
  size_t jobs = 1;
  /// --memory: what running jobs may be expected to need at once ("12G", "auto", "unlimited");
  /// unset: $KBUILD_MEMORY, else what is available (exec/memory_budget.hpp).
  std::optional<std::string> memory;
  bool keep_going = false;
  std::string python = "python3";
  std::vector<std::string> backends;  ///< --backend (local builds)
  std::optional<std::string> unique_id;
  std::vector<std::string> launcher;  ///< --launcher, split into words
  bool matrix = false;                ///< --matrix, or a filter was given
  plan::MatrixFilter filter;
  bool locked = false;
  std::vector<std::string> cuda_toolkits;    ///< --cuda-toolkit VERSION=PATH
  std::vector<std::string> allowed_origins;  ///< --allow-toolchain-origin URL (toolchain/provenance.hpp)
  bool use_cache = true;
  /// Another build of the same kernel directory holds .kbuild/lock: wait for it (true), or fail.
  bool wait_for_lock = true;
  bool download_progress = false;            ///< let pip draw progress bars (a terminal)
  std::string manylinux = "manylinux_2_28";  ///< --manylinux: the ABI policy libraries must meet
  bool gate_libraries = true;                ///< see plan::PlanRequest::gate_libraries
  std::string builder_version;               ///< provenance."kernel-builder".version in metadata.json
  /// What CUDA variants compile (--cuda-archs): "native" (the GPUs of this machine; every declared
  /// capability when it has none), "all" (every capability build.toml declares), or a list "8.0,9.0".
  std::string cuda_archs = "native";
  /// A build apart from the kernel's own (`kbuild check --rebuild`): its intermediates and state
  /// (default <kernel>/.kbuild) and its variants (default <kernel>/build) go here instead.
  std::optional<std::filesystem::path> work_dir;
  std::optional<std::filesystem::path> output_dir;
};

struct BuildOutcome {
  std::vector<std::string> variants;  ///< built (or up to date), by name
  exec::ExecSummary summary;
  double seconds = 0;
  /// The capabilities CUDA variants were restricted to (empty: all that build.toml declares), and why.
  std::vector<std::string> cuda_archs;
  std::string cuda_archs_reason;
  /// Where the time went (usecase/timings.hpp): config, ops check, lock, variants, plan, execute.
  std::vector<BuildPhase> phases;
  std::vector<JobTime> slowest_jobs;  ///< the 10 longest jobs this build ran
  /// .kbuild/trace.json when this build ran jobs and wrote it; empty otherwise.
  std::filesystem::path trace;
};

/// Remote compile cache: configured by KBUILD_REMOTE_CACHE* (cache/remote.hpp), reached over
/// services.http; source archives are downloaded over it too.
Result<BuildOutcome> build(const BuildRequest& request, Services& services);

/// Takes the kernel directory's build lock (<work_dir>/lock): one build (or clean) of a directory
/// at a time. When another process holds it: with `wait`, says so through `waiting` and waits;
/// without, fails naming the holder.
Result<std::unique_ptr<util::FileLock>> lock_kernel_dir(util::FileSystem& fs, const std::filesystem::path& work_dir,
                                                        bool wait,
                                                        const std::function<void(const std::string&)>& waiting);

}  // namespace kbuild::usecase
