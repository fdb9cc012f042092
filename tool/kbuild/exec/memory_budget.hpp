#pragma once
// Memory-aware admission of build jobs. A -j16 build of CUTLASS units can start 16 compiles that
// each peak at several GB; counting jobs alone runs the machine (or the CI runner's cgroup) out of
// memory. So each command is expected to need what it peaked at when it last ran (wait4's ru_maxrss,
// kept in the build state as `M`, build_state.hpp) plus a quarter, or, never measured, a
// conservative figure for its kind; the executor starts a command only while the expected needs of
// those running and its own fit the budget. One command may always run, so a job larger than the
// budget runs alone rather than never.
//
// The budget: --memory / KBUILD_MEMORY (a size such as 12G, or "unlimited"); else what is available
// when the build starts: /proc/meminfo's MemAvailable, and the tightest cgroup limit above kbuild
// (v2: memory.max - memory.current; v1: memory.limit_in_bytes - memory.usage_in_bytes), whichever
// is less; unlimited when none can be read.

#include <cstdint>
#include <optional>
#include <string>

#include "kbuild/plan/graph.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/result.hpp"
#include "kbuild/util/system.hpp"

namespace kbuild::exec {

struct MemoryBudget {
  std::uint64_t kib = 0;  ///< 0: unlimited
  std::string source;     ///< where it comes from, for messages: "--memory", "cgroup <dir>", "MemAvailable", ...
};

/// What a job of `kind` is expected to need at its peak: the last recorded peak plus a quarter, or
/// without one a conservative figure (CUDA compile 3 GiB, C++ compile and link 1 GiB); 0 for
/// in-process jobs. `processes` compiler processes at once (nvcc --threads: one cicc/ptxas per
/// architecture) each need that much: wait4 reports the largest one, not their sum.
std::uint64_t expected_job_kib(plan::JobKind kind, std::uint64_t recorded_peak_kib, unsigned processes = 1);

/// How many compiler processes `job` runs at once: nvcc's `--threads N` (the planner caps it at the
/// unit's architectures), else 1.
unsigned concurrent_processes(const plan::Job& job);

/// The memory available to this process now (see above), read through `fs` (/proc and /sys).
MemoryBudget available_memory(const util::FileSystem& fs);

/// The budget of a build: `option` (--memory), else $KBUILD_MEMORY, else available_memory. A value
/// that is neither a size nor "unlimited" is a usage error naming it.
Result<MemoryBudget> memory_budget(const std::optional<std::string>& option, const util::Environment& env,
                                   const util::FileSystem& fs);

/// "1.5 GiB", "512 MiB": a KiB count for messages.
std::string format_kib(std::uint64_t kib);

}  // namespace kbuild::exec
