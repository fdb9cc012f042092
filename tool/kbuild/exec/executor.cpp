#include "kbuild/exec/executor.hpp"

#include <chrono>
#include <deque>
#include <map>
#include <set>

#include "kbuild/exec/depfile.hpp"
#include "kbuild/exec/interrupt.hpp"

namespace kbuild::exec {

namespace {
FileRecord file_record(const std::string& path, StatCache& stats) {
  const util::FileStat& st = stats.stat(path);
  return {path, st.mtime_ns, st.size};
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

void Executor::record(size_t index, const std::vector<FileRecord>& explicit_inputs, StatCache& stats) {
  const plan::Job& job = m_graph.jobs[index];
  JobRecord record;
  record.key = job.key;
  for (const auto& output : job.outputs) {
    stats.forget(output.string());
    record.outputs.push_back(file_record(output.string(), stats));
  }
  record.inputs = explicit_inputs;
  std::set<std::string> known;
  for (const auto& input : explicit_inputs) known.insert(input.path);
  if (job.depfile) {
    if (auto text = m_fs.read_file(*job.depfile)) {
      if (auto prerequisites = parse_depfile(*text)) {
        for (const auto& path : *prerequisites)
          if (known.insert(path).second) record.inputs.push_back(file_record(path, stats));
      }
    }
  }
  m_state.set(job.id, std::move(record));
}

ExecSummary Executor::run() {
  ExecSummary summary;
  const auto& jobs = m_graph.jobs;
  summary.total = jobs.size();
  StatCache stats(m_fs);

  std::vector<bool> stale(jobs.size(), false);
  std::vector<std::vector<size_t>> dependents(jobs.size());
  std::vector<size_t> waiting_on(jobs.size(), 0);
  for (size_t i = 0; i < jobs.size(); ++i) {
    for (size_t dep : jobs[i].deps) {
      dependents[dep].push_back(i);
      if (stale[dep]) {
        stale[i] = true;
        ++waiting_on[i];
      }
    }
    if (!stale[i]) {
      if (auto reason = staleness_reason(jobs[i], m_state.find(jobs[i].id), stats)) {
        stale[i] = true;
        m_reporter.explain(jobs[i], *reason);
      }
    } else {
      m_reporter.explain(jobs[i], "a dependency is stale");
    }
    if (stale[i]) ++summary.stale;
  }
  if (summary.stale == 0) return summary;

  std::deque<size_t> ready;
  for (size_t i = 0; i < jobs.size(); ++i)
    if (stale[i] && waiting_on[i] == 0) ready.push_back(i);

  size_t finished = 0, started = 0;
  bool stop = false;
  std::map<size_t, std::vector<FileRecord>> in_flight;  // job -> explicit inputs as read at start

  auto complete = [&](size_t index, const JobOutcome& outcome) {
    const plan::Job& job = jobs[index];
    ++finished;
    if (outcome.success) {
      if (outcome.cache_hit)
        ++summary.cache_hits;
      else
        ++summary.ran;
      for (size_t next : dependents[index])
        if (stale[next] && --waiting_on[next] == 0) ready.push_back(next);
    } else {
      ++summary.failed;
      m_state.erase(job.id);
      if (!m_options.keep_going) stop = true;
    }
    m_reporter.job_finished(job, outcome, finished, summary.stale);
  };

  auto inputs_at_start = [&](size_t index) {
    std::vector<FileRecord> inputs;
    for (const auto& input : jobs[index].inputs) {
      stats.forget(input.string());
      inputs.push_back(file_record(input.string(), stats));
    }
    return inputs;
  };

  // After a failure (stop) nothing new starts, but running commands finish and are recorded.
  while (true) {
    while (!stop && !ready.empty() && m_runner.running() < std::max<size_t>(1, m_options.jobs)) {
      if (interrupted()) {
        stop = true;
        summary.interrupted = true;
        break;
      }
      size_t index = ready.front();
      ready.pop_front();
      const plan::Job& job = jobs[index];
      auto explicit_inputs = inputs_at_start(index);
      if (m_cache && job.cacheable && m_cache->restore(job)) {
        m_reporter.job_started(job, started++, summary.stale, true);
        record(index, explicit_inputs, stats);
        JobOutcome outcome;
        outcome.cache_hit = true;
        complete(index, outcome);
        continue;
      }
      m_reporter.job_started(job, started++, summary.stale, false);
      if (job.action) {
        auto start = std::chrono::steady_clock::now();
        auto result = job.action(m_fs);
        JobOutcome outcome;
        outcome.seconds = seconds_since(start);
        if (!result) {
          outcome.success = false;
          outcome.error = result.error().message;
        } else {
          record(index, explicit_inputs, stats);
        }
        complete(index, outcome);
        continue;
      }
      for (const auto& path : {job.outputs.front(), job.temp_output.value_or(job.outputs.front())})
        (void)m_fs.make_dirs(path.parent_path());
      if (job.temp_output) (void)m_fs.remove_all(*job.temp_output);
      std::vector<std::string> argv = job.command_line();
      bool compile = job.kind == plan::JobKind::compile_cxx || job.kind == plan::JobKind::compile_cuda;
      if (compile && !m_options.launcher.empty())
        argv.insert(argv.begin(), m_options.launcher.begin(), m_options.launcher.end());
      if (auto started = m_runner.start(index, argv); !started) {
        JobOutcome outcome;
        outcome.success = false;
        outcome.error = started.error().message;
        complete(index, outcome);
        continue;
      }
      in_flight[index] = std::move(explicit_inputs);
    }
    if (m_runner.running() == 0) break;
    auto result = m_runner.wait();
    if (!result) {
      if (interrupted()) summary.interrupted = true;
      break;
    }
    size_t index = result->token;
    const plan::Job& job = jobs[index];
    auto explicit_inputs = std::move(in_flight[index]);
    in_flight.erase(index);
    JobOutcome outcome;
    outcome.exit_code = result->exit_code;
    outcome.output = std::move(result->output);
    outcome.seconds = result->seconds;
    outcome.success = result->exit_code == 0;
    if (outcome.success && job.temp_output) {
      if (auto renamed = m_fs.rename(*job.temp_output, job.outputs.front()); !renamed) {
        outcome.success = false;
        outcome.error = renamed.error().message;
      }
    }
    if (outcome.success) {
      record(index, explicit_inputs, stats);
      if (m_cache && job.cacheable) {
        std::vector<std::string> prerequisites;
        for (const auto& input : m_state.find(job.id)->inputs) prerequisites.push_back(input.path);
        m_cache->store(job, prerequisites);
      }
    } else if (job.temp_output) {
      (void)m_fs.remove_all(*job.temp_output);
    }
    complete(index, outcome);
  }

  if (m_runner.running() > 0) {
    m_runner.abort_all();
    for (const auto& [index, inputs] : in_flight) {
      const plan::Job& job = jobs[index];
      if (job.temp_output) (void)m_fs.remove_all(*job.temp_output);
      m_state.erase(job.id);
    }
  }
  if (interrupted()) summary.interrupted = true;
  summary.not_run = summary.stale - finished;
  return summary;
}

}  // namespace kbuild::exec
