#pragma once
// Where a build's time goes: the phases of `usecase::build` (measured with PhaseTimer) and the jobs
// the executor ran (exec::JobTiming). `kbuild build --timings` prints them; every build that runs a
// job writes them to .kbuild/trace.json in Chrome's Trace Event Format, which chrome://tracing and
// ui.perfetto.dev open (docs/cli.md describes the file).

#include <chrono>
#include <string>
#include <vector>

#include "kbuild/exec/executor.hpp"
#include "kbuild/plan/graph.hpp"
#include "kbuild/util/system.hpp"

namespace kbuild::usecase {

struct BuildPhase {
  std::string name;
  double start = 0;    ///< seconds after the build started
  double seconds = 0;  ///< wall time
};

/// Splits a sequence of steps into phases: each mark() ends the phase that began at the previous
/// mark (or at construction).
class PhaseTimer {
 public:
  explicit PhaseTimer(const util::Clock& clock) : m_clock(clock), m_start(clock.now()) {}
  void mark(std::string name);
  /// Seconds from construction to the last mark.
  double elapsed() const { return m_last_end; }
  const std::vector<BuildPhase>& phases() const { return m_phases; }

 private:
  const util::Clock& m_clock;
  std::chrono::steady_clock::time_point m_start;
  double m_last_end = 0;
  std::vector<BuildPhase> m_phases;
};

/// The trace document: one "X" (complete) event per phase on thread 0 ("kbuild") and per job on
/// thread 1 + its lane, jobs placed at `jobs_start` (the executor's start, seconds after the build
/// started) plus their own offset; timestamps and durations in microseconds.
std::string chrome_trace(const plan::JobGraph& graph, const exec::ExecSummary& summary,
                         const std::vector<BuildPhase>& phases, double jobs_start);

struct JobTime {
  std::string description;  ///< the job's progress line
  double seconds = 0;
  bool cache_hit = false;
  std::uint64_t peak_rss_kib = 0;
};

/// The `count` longest jobs, longest first (ties by graph order).
std::vector<JobTime> slowest_jobs(const plan::JobGraph& graph, const exec::ExecSummary& summary, size_t count);

}  // namespace kbuild::usecase
