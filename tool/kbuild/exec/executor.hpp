#pragma once
// Runs a JobGraph: decides what is stale, runs stale jobs in dependency order with at most N
// commands at once, records what each job read and wrote, and stops cleanly on failure or Ctrl-C.
//
// Staleness (like ninja, with exact comparison instead of "newer than"): a job is stale when it has
// no record, its key changed, an output is missing or differs in mtime/size from what was recorded,
// an input (explicit or listed in its depfile) differs from what was recorded, or one of its
// dependencies is stale. Everything is decided before the first job starts, so "[n/m]" counts only
// jobs that will run, and a no-op build does nothing but stat files. A stale job loses its record
// until it succeeds again, so the saved state never vouches for an output a failed or interrupted
// build did not remake (usecase/freshness.hpp reads it).
//
// Outputs: a command writes job.temp_output; on success it is renamed to outputs[0]; on failure or
// interrupt it is deleted. In-process jobs (generate, install) go to the ActionRunner, which writes
// atomically.

#include <cstddef>
#include <vector>

#include "kbuild/exec/action_runner.hpp"
#include "kbuild/exec/build_state.hpp"
#include "kbuild/exec/command_runner.hpp"
#include "kbuild/exec/job_cache.hpp"
#include "kbuild/exec/reporter.hpp"
#include "kbuild/plan/graph.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/system.hpp"

namespace kbuild::exec {

struct ExecutorOptions {
  size_t jobs = 1;          ///< maximum commands at once (-j)
  bool keep_going = false;  ///< keep starting independent jobs after a failure
  /// Prepended to compile commands when they run (ccache, sccache); not part of job keys, so
  /// turning a launcher on or off does not rebuild anything.
  std::vector<std::string> launcher;
  /// Nothing may be written (a read-only kernel directory): when any job is stale, none runs and
  /// ExecSummary::blocked_read_only says so; an up-to-date graph is a success.
  bool read_only = false;
  /// At most this much memory expected in use by running commands at once (KiB; 0: count jobs
  /// only), each job expected to need what memory_budget.hpp's expected_job_kib says.
  std::uint64_t memory_kib = 0;
};

/// When one job ran, relative to the start of the run: what `kbuild build --timings` reports and
/// .kbuild/trace.json draws.
struct JobTiming {
  size_t job = 0;      ///< index in the graph
  double start = 0;    ///< seconds after the executor started
  double seconds = 0;  ///< wall time (for a cache hit: the restore)
  size_t lane = 0;     ///< the -j slot it held (0-based): lanes of a trace never overlap
  bool cache_hit = false;
  bool success = true;
  std::uint64_t peak_rss_kib = 0;  ///< the command's peak memory (0: in-process job or cache hit)
};

struct ExecSummary {
  size_t total = 0;  ///< jobs in the graph
  size_t stale = 0;  ///< jobs that needed work
  size_t ran = 0;    ///< commands and actions executed (cache hits excluded)
  size_t cache_hits = 0;
  size_t failed = 0;
  size_t not_run = 0;  ///< stale jobs skipped after a failure or interrupt
  bool interrupted = false;
  bool blocked_read_only = false;  ///< stale jobs in a read-only run (ExecutorOptions::read_only)
  double staleness_seconds = 0;    ///< deciding what is stale (stat and compare), before any job starts
  size_t files_checked = 0;        ///< distinct files stat'ed to decide it
  std::vector<JobTiming> timings;  ///< jobs that finished (succeeded or failed), in finishing order
  /// Times a free job slot stayed empty because no ready job fitted the memory budget.
  size_t memory_holds = 0;
  size_t killed = 0;                    ///< commands killed by SIGKILL (the OOM killer, most often)
  std::uint64_t memory_budget_kib = 0;  ///< ExecutorOptions::memory_kib (0: none)
  std::uint64_t peak_expected_kib = 0;  ///< the most memory the running commands were expected to need at once
  /// Files compiles read from outside the kernel through a name inside it (Job::confine_to): those
  /// compiles failed; a refusal of the kernel's files, not of the code.
  std::vector<std::string> escaping_inputs;
  bool ok() const { return failed == 0 && !interrupted && not_run == 0; }
};

/// What the executor works with: where files are, how commands and in-process jobs run, what to
/// remember, whom to tell, and the clock for durations.
struct ExecutorServices {
  util::FileSystem& fs;
  CommandRunner& runner;
  ActionRunner& actions;
  BuildState& state;
  Reporter& reporter;
  const util::Clock& clock;
  JobCache* cache = nullptr;  ///< optional compile cache
};

class Executor {
 public:
  Executor(const plan::JobGraph& graph, ExecutorServices services, ExecutorOptions options)
      : m_graph(graph), m_services(services), m_options(std::move(options)) {}

  ExecSummary run();

 private:
  const plan::JobGraph& m_graph;
  ExecutorServices m_services;
  ExecutorOptions m_options;
};

}  // namespace kbuild::exec
