#include "kbuild/exec/executor.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <set>

#include "kbuild/exec/depfile.hpp"
#include "kbuild/exec/macro_scan.hpp"
#include "kbuild/exec/memory_budget.hpp"
#include "kbuild/util/interrupt.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::exec {

namespace {

FileRecord file_record(const std::string& path, StatCache& stats) {
  const util::FileStat& st = stats.stat(path);
  return {path, st.mtime_ns, st.size};
}

// A command, or the compiler process its driver ran (g++'s cc1plus, nvcc's cicc and ptxas), ended by
// SIGKILL: most often the kernel's (or a cgroup's) out-of-memory killer.
bool killed(const CommandResult& result) {
  return result.exit_code == 128 + 9 || result.output.find("Killed signal terminated program") != std::string::npos ||
         result.output.find("died due to signal 9") != std::string::npos;
}

// One run of the executor: the staleness decisions, the ready queue, the jobs in flight.
class Run {
 public:
  Run(const plan::JobGraph& graph, ExecutorServices& services, const ExecutorOptions& options)
      : m_jobs(graph.jobs),
        m_s(services),
        m_options(options),
        m_stats(services.fs),
        m_stale(m_jobs.size(), false),
        m_dependents(m_jobs.size()),
        m_waiting_on(m_jobs.size(), 0),
        m_peak_kib(m_jobs.size(), 0) {}

  ExecSummary execute() {
    m_summary.total = m_jobs.size();
    m_summary.memory_budget_kib = m_options.memory_kib;
    m_run_start = m_s.clock.now();
    decide_staleness();
    m_summary.staleness_seconds = m_s.clock.seconds_since(m_run_start);
    m_summary.files_checked = m_stats.size();
    if (m_summary.stale == 0) return m_summary;
    if (m_options.read_only) {
      m_summary.blocked_read_only = true;
      m_summary.not_run = m_summary.stale;
      return m_summary;
    }
    sweep_abandoned_temporaries();
    for (size_t i = 0; i < m_jobs.size(); ++i)
      if (m_stale[i] && m_waiting_on[i] == 0) m_ready.push_back(i);
    // After a failure (stop) nothing new starts, but running commands finish and are recorded.
    while (true) {
      start_ready_jobs();
      if (m_s.runner.running() == 0) break;
      auto result = m_s.runner.wait();
      if (!result) {
        if (util::interrupted()) m_summary.interrupted = true;
        break;
      }
      finish_command(std::move(*result));
    }
    abort_running();
    if (util::interrupted()) m_summary.interrupted = true;
    m_summary.not_run = m_summary.stale - m_finished;
    return m_summary;
  }

 private:
  // Everything is decided before the first job starts (see executor.hpp).
  void decide_staleness() {
    for (size_t i = 0; i < m_jobs.size(); ++i) {
      if (const JobRecord* record = m_s.state.find(m_jobs[i].id)) m_peak_kib[i] = record->peak_rss_kib;
      for (size_t dep : m_jobs[i].deps) {
        m_dependents[dep].push_back(i);
        if (m_stale[dep]) {
          m_stale[i] = true;
          ++m_waiting_on[i];
        }
      }
      if (m_stale[i]) {
        m_s.reporter.explain(m_jobs[i], "a dependency is stale");
      } else if (auto reason = staleness_reason(m_jobs[i], m_s.state.find(m_jobs[i].id), m_stats)) {
        m_stale[i] = true;
        m_s.reporter.explain(m_jobs[i], *reason);
      }
      if (m_stale[i]) {
        ++m_summary.stale;
        // Until it runs again its outputs are not current: a failed or interrupted build leaves no
        // record of it, so `kbuild check` and friends see the variant as unfinished.
        m_s.state.erase(m_jobs[i].id);
      }
    }
  }

  // Leftovers of commands killed before they could clean up (kill -9, a power loss): temporary
  // outputs and the intermediates nvcc -objtemp writes next to them (<temp>.<suffix>, tens of MB).
  // The kernel directory's lock keeps every other build of it out, so these are nobody's.
  void sweep_abandoned_temporaries() {
    std::map<std::filesystem::path, std::set<std::string>> temps_by_dir;
    for (const auto& job : m_jobs)
      if (job.temp_output) temps_by_dir[job.temp_output->parent_path()].insert(job.temp_output->filename().string());
    for (const auto& [dir, names] : temps_by_dir) {
      auto entries = m_s.fs.list_dir(dir);
      if (!entries) continue;
      for (const auto& entry : *entries) {
        size_t end = entry.name.find(".tmp");
        if (end == std::string::npos) continue;
        end += 4;
        bool ours = names.count(entry.name.substr(0, end)) && (entry.name.size() == end || entry.name[end] == '.');
        if (ours) (void)m_s.fs.remove_all(dir / entry.name);
      }
    }
  }

  void start_ready_jobs() {
    while (!m_stop && !m_ready.empty() && m_s.runner.running() < std::max<size_t>(1, m_options.jobs)) {
      if (util::interrupted()) {
        m_stop = true;
        m_summary.interrupted = true;
        return;
      }
      auto index = next_that_fits();
      if (!index) {
        ++m_summary.memory_holds;
        return;
      }
      start(*index);
    }
  }

  // The first ready job whose expected memory fits beside the running commands' (memory_budget.hpp);
  // the first of all when nothing runs, so that a job larger than the budget runs alone.
  std::optional<size_t> next_that_fits() {
    auto fits = [&](size_t index) {
      return m_options.memory_kib == 0 || m_expected_kib + expected_kib(index) <= m_options.memory_kib;
    };
    auto it = std::find_if(m_ready.begin(), m_ready.end(), fits);
    if (it == m_ready.end()) {
      if (m_s.runner.running() > 0) return std::nullopt;
      it = m_ready.begin();
    }
    size_t index = *it;
    m_ready.erase(it);
    return index;
  }

  std::uint64_t expected_kib(size_t index) const {
    return expected_job_kib(m_jobs[index].kind, m_peak_kib[index], concurrent_processes(m_jobs[index]));
  }

  void start(size_t index) {
    const plan::Job& job = m_jobs[index];
    m_started_at[index] = {m_s.clock.seconds_since(m_run_start), take_lane()};
    auto explicit_inputs = inputs_at_start(index);
    if (m_s.cache && job.cacheable && !m_no_cache.count(index) && m_s.cache->restore(job)) {
      m_restored.insert(index);
      m_s.reporter.job_started(job, m_started++, m_summary.stale, true);
      record(index, explicit_inputs);
      JobOutcome outcome;
      outcome.cache_hit = true;
      complete(index, outcome);
      return;
    }
    m_s.reporter.job_started(job, m_started++, m_summary.stale, false);
    if (job.in_process()) {
      auto start_time = m_s.clock.now();
      auto result = m_s.actions.run(job);
      JobOutcome outcome;
      outcome.seconds = m_s.clock.seconds_since(start_time);
      if (!result) {
        outcome.success = false;
        outcome.error = result.error().message;
      } else {
        record(index, explicit_inputs);
      }
      complete(index, outcome);
      return;
    }
    for (const auto& path : {job.outputs.front(), job.temp_output.value_or(job.outputs.front())})
      (void)m_s.fs.make_dirs(path.parent_path());
    if (job.temp_output) (void)m_s.fs.remove_all(*job.temp_output);
    std::vector<std::string> argv = job.command_line();
    bool compile = job.kind == plan::JobKind::compile_cxx || job.kind == plan::JobKind::compile_cuda;
    if (compile && !m_options.launcher.empty())
      argv.insert(argv.begin(), m_options.launcher.begin(), m_options.launcher.end());
    if (auto started = m_s.runner.start(index, argv, job.env); !started) {
      JobOutcome outcome;
      outcome.success = false;
      outcome.error = started.error().message;
      complete(index, outcome);
      return;
    }
    m_in_flight[index] = std::move(explicit_inputs);
    m_expected_kib += expected_kib(index);
    m_summary.peak_expected_kib = std::max(m_summary.peak_expected_kib, m_expected_kib);
  }

  void finish_command(CommandResult result) {
    size_t index = result.token;
    const plan::Job& job = m_jobs[index];
    auto explicit_inputs = std::move(m_in_flight[index]);
    m_in_flight.erase(index);
    m_expected_kib -= std::min(m_expected_kib, expected_kib(index));
    if (result.peak_rss_kib > 0) m_peak_kib[index] = result.peak_rss_kib;  // what record() keeps
    JobOutcome outcome;
    if (killed(result)) {
      ++m_summary.killed;
      outcome.error =
          "killed (SIGKILL), most often for want of memory; its peak so far: " + format_kib(result.peak_rss_kib);
    }
    outcome.exit_code = result.exit_code;
    outcome.output = std::move(result.output);
    outcome.seconds = result.seconds;
    outcome.peak_rss_kib = result.peak_rss_kib;
    outcome.success = result.exit_code == 0;
    if (outcome.success && job.temp_output) {
      if (auto renamed = m_s.fs.rename(*job.temp_output, job.outputs.front()); !renamed) {
        outcome.success = false;
        outcome.error = renamed.error().message;
      }
    }
    if (outcome.success) refuse_escaping_headers(job, outcome);
    if (outcome.success) {
      record(index, explicit_inputs);
      if (m_s.cache && job.cacheable) {
        const JobRecord& recorded = *m_s.state.find(job.id);
        std::vector<std::string> prerequisites;
        for (const auto& input : recorded.inputs) prerequisites.push_back(input.path);
        m_s.cache->store(job, prerequisites, recorded.volatile_value.has_value());
      }
    } else if (job.temp_output) {
      (void)m_s.fs.remove_all(*job.temp_output);
    }
    complete(index, outcome);
  }

  // A compile that read a header from outside the kernel through a name inside it (Job::confine_to)
  // fails, and its object goes: what it compiled is not the kernel's.
  void refuse_escaping_headers(const plan::Job& job, JobOutcome& outcome) {
    if (!job.confine_to || !job.depfile) return;
    auto text = m_s.fs.read_file(*job.depfile);
    auto prerequisites = text ? parse_depfile(*text) : Result<std::vector<std::string>>(std::vector<std::string>{});
    if (!prerequisites) return;
    auto escaping = escaping_prerequisites(m_s.fs, *prerequisites, *job.confine_to);
    if (escaping.empty()) return;
    outcome.success = false;
    outcome.error =
        "it read files from outside the kernel directory through names inside it:\n  " + util::join(escaping, "\n  ");
    for (const auto& output : job.outputs) (void)m_s.fs.remove_all(output);
    m_summary.escaping_inputs.insert(m_summary.escaping_inputs.end(), escaping.begin(), escaping.end());
  }

  void complete(size_t index, const JobOutcome& outcome) {
    const plan::Job& job = m_jobs[index];
    record_timing(index, outcome);
    ++m_finished;
    if (!outcome.success && retry_without_cache(index)) return;
    if (outcome.success) {
      ++(outcome.cache_hit ? m_summary.cache_hits : m_summary.ran);
      auto rerun = m_rerun_for.find(index);
      for (size_t next : m_dependents[index]) {
        if (rerun != m_rerun_for.end() && next != rerun->second) continue;  // they have had this output
        if (m_stale[next] && m_waiting_on[next] > 0 && --m_waiting_on[next] == 0) m_ready.push_back(next);
      }
      if (rerun != m_rerun_for.end()) m_rerun_for.erase(rerun);
    } else {
      ++m_summary.failed;
      m_s.state.erase(job.id);
      if (!m_options.keep_going) m_stop = true;
    }
    m_s.reporter.job_finished(job, outcome, m_finished, m_summary.stale);
  }

  size_t take_lane() {
    auto free = std::find(m_lane_busy.begin(), m_lane_busy.end(), false);
    if (free == m_lane_busy.end()) free = m_lane_busy.insert(m_lane_busy.end(), false);
    *free = true;
    return static_cast<size_t>(free - m_lane_busy.begin());
  }

  void record_timing(size_t index, const JobOutcome& outcome) {
    auto started = m_started_at.find(index);
    if (started == m_started_at.end()) return;  // (every job passes start() first)
    const auto [start, lane] = started->second;
    m_started_at.erase(started);
    m_lane_busy[lane] = false;
    m_summary.timings.push_back({index, start, m_s.clock.seconds_since(m_run_start) - start, lane, outcome.cache_hit,
                                 outcome.success, outcome.peak_rss_kib});
  }

  // A link that fails on objects restored from the compile cache may have been handed an entry the
  // cache could not tell from a right one (an entry with a consistent header under a wrong key): it is
  // retried once, after compiling those objects again without the cache (whose store then replaces
  // the entries). Only a failure that also happens with fresh objects is reported.
  bool retry_without_cache(size_t index) {
    const plan::Job& job = m_jobs[index];
    if (job.kind != plan::JobKind::link || m_stop || util::interrupted() || !m_link_retried.insert(index).second)
      return false;
    std::vector<size_t> restored;
    for (size_t dep : job.deps)
      if (m_restored.count(dep)) restored.push_back(dep);
    if (restored.empty()) return false;
    m_s.reporter.warning(job.description + " failed with " + std::to_string(restored.size()) +
                         " object(s) from the compile cache; compiling them again without it");
    m_summary.stale += restored.size() + 1;
    m_waiting_on[index] = restored.size();
    for (size_t dep : restored) {
      m_restored.erase(dep);
      m_no_cache.insert(dep);
      m_rerun_for[dep] = index;
      m_s.state.erase(m_jobs[dep].id);
      m_ready.push_back(dep);
    }
    return true;
  }

  // Stops what still runs (interrupt, or a failed wait): partial outputs go, records are dropped.
  void abort_running() {
    if (m_s.runner.running() == 0) return;
    m_s.runner.abort_all();
    for (const auto& [index, inputs] : m_in_flight) {
      const plan::Job& job = m_jobs[index];
      if (job.temp_output) (void)m_s.fs.remove_all(*job.temp_output);
      m_s.state.erase(job.id);
      m_s.reporter.job_aborted(job);
    }
  }

  std::vector<FileRecord> inputs_at_start(size_t index) {
    std::vector<FileRecord> inputs;
    for (const auto& input : m_jobs[index].inputs) {
      m_stats.forget(input.string());
      inputs.push_back(file_record(input.string(), m_stats));
    }
    return inputs;
  }

  // Records what the job read (explicit inputs as they were at its start, plus its depfile's) and wrote.
  void record(size_t index, const std::vector<FileRecord>& explicit_inputs) {
    const plan::Job& job = m_jobs[index];
    JobRecord record;
    record.key = job.key;
    for (const auto& output : job.outputs) {
      m_stats.forget(output.string());
      record.outputs.push_back(file_record(output.string(), m_stats));
    }
    record.inputs = explicit_inputs;
    std::set<std::string> known;
    for (const auto& input : explicit_inputs) known.insert(input.path);
    if (job.depfile) {
      if (auto text = m_s.fs.read_file(*job.depfile)) {
        if (auto prerequisites = parse_depfile(*text)) {
          for (const auto& path : *prerequisites)
            if (known.insert(path).second) record.inputs.push_back(file_record(path, m_stats));
        }
      }
    }
    if (!job.in_process()) record.command = util::shell_join(job.keyed_argv());
    record.peak_rss_kib = m_peak_kib[index];  // measured now, or kept from before (a cache hit)
    if (job.volatile_define) {
      if (auto file = file_naming_define(*job.volatile_define, record.inputs)) {
        record.volatile_value = job.volatile_define->value;
        record.volatile_named_in = *file;
      }
    }
    m_s.state.set(job.id, std::move(record));
  }

  // The first file the unit read under the define's scan roots (its source, the kernel's headers,
  // generated ones) that names the macro; unreadable files count as naming it.
  std::optional<std::string> file_naming_define(const plan::Job::VolatileDefine& define,
                                                const std::vector<FileRecord>& inputs) {
    for (const auto& input : inputs) {
      std::string path = std::filesystem::path(input.path).lexically_normal().string();
      bool scanned = std::any_of(define.scan_roots.begin(), define.scan_roots.end(), [&](const auto& root) {
        return path.starts_with(root.lexically_normal().string() + "/");
      });
      if (!scanned) continue;
      auto memo = m_names_define.find(path);
      if (memo == m_names_define.end()) {
        auto text = m_s.fs.read_file(path);
        memo = m_names_define.emplace(path, !text || names_macro(*text, define.name)).first;
      }
      if (memo->second) return path;
    }
    return std::nullopt;
  }

  const std::vector<plan::Job>& m_jobs;
  ExecutorServices& m_s;
  const ExecutorOptions& m_options;
  StatCache m_stats;
  ExecSummary m_summary;
  std::vector<bool> m_stale;
  std::vector<std::vector<size_t>> m_dependents;
  std::vector<size_t> m_waiting_on;
  std::vector<std::uint64_t> m_peak_kib;  // per job: its last measured peak (KiB; 0 unknown)
  std::uint64_t m_expected_kib = 0;       // what the running commands are expected to need
  std::deque<size_t> m_ready;
  std::map<size_t, std::vector<FileRecord>> m_in_flight;  // job -> explicit inputs as read at start
  std::map<std::string, bool> m_names_define;             // path -> names the volatile define's macro (this run)
  std::set<size_t> m_restored;                            // jobs whose outputs came from the cache in this run
  std::set<size_t> m_no_cache;                            // jobs that run without the cache (see retry_without_cache)
  std::map<size_t, size_t> m_rerun_for;                   // a job run again -> the link that waits for it
  std::set<size_t> m_link_retried;
  std::map<size_t, std::pair<double, size_t>> m_started_at;  // job -> (start offset, lane) while it runs
  std::vector<bool> m_lane_busy;
  std::chrono::steady_clock::time_point m_run_start;
  size_t m_finished = 0, m_started = 0;
  bool m_stop = false;
};

}  // namespace

ExecSummary Executor::run() { return Run(m_graph, m_services, m_options).execute(); }

}  // namespace kbuild::exec
