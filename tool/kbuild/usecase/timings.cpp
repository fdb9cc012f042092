#include "kbuild/usecase/timings.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace kbuild::usecase {

void PhaseTimer::mark(std::string name) {
  double end = m_clock.seconds_since(m_start);
  m_phases.push_back({std::move(name), m_last_end, end - m_last_end});
  m_last_end = end;
}

namespace {

std::int64_t microseconds(double seconds) { return static_cast<std::int64_t>(std::llround(seconds * 1e6)); }

nlohmann::ordered_json thread_name(size_t tid, const std::string& name) {
  return {{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", tid}, {"args", {{"name", name}}}};
}

}  // namespace

std::string chrome_trace(const plan::JobGraph& graph, const exec::ExecSummary& summary,
                         const std::vector<BuildPhase>& phases, double jobs_start) {
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  events.push_back(thread_name(0, "kbuild"));
  size_t lanes = 0;
  for (const auto& timing : summary.timings) lanes = std::max(lanes, timing.lane + 1);
  for (size_t lane = 0; lane < lanes; ++lane)
    events.push_back(thread_name(lane + 1, "job slot " + std::to_string(lane + 1)));
  for (const auto& phase : phases)
    events.push_back({{"name", phase.name},
                      {"cat", "phase"},
                      {"ph", "X"},
                      {"ts", microseconds(phase.start)},
                      {"dur", microseconds(phase.seconds)},
                      {"pid", 1},
                      {"tid", 0}});
  for (const auto& timing : summary.timings) {
    const plan::Job& job = graph.jobs.at(timing.job);
    events.push_back({{"name", job.description},
                      {"cat", plan::to_string(job.kind)},
                      {"ph", "X"},
                      {"ts", microseconds(jobs_start + timing.start)},
                      {"dur", microseconds(timing.seconds)},
                      {"pid", 1},
                      {"tid", timing.lane + 1},
                      {"args",
                       {{"variant", job.variant},
                        {"cache_hit", timing.cache_hit},
                        {"success", timing.success},
                        {"peak_rss_mib", static_cast<double>(timing.peak_rss_kib) / 1024.0}}}});
  }
  nlohmann::ordered_json trace = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  return trace.dump(1) + "\n";
}

std::vector<JobTime> slowest_jobs(const plan::JobGraph& graph, const exec::ExecSummary& summary, size_t count) {
  std::vector<exec::JobTiming> timings = summary.timings;
  std::stable_sort(timings.begin(), timings.end(), [](const auto& a, const auto& b) {
    return a.seconds != b.seconds ? a.seconds > b.seconds : a.job < b.job;
  });
  if (timings.size() > count) timings.resize(count);
  std::vector<JobTime> jobs;
  for (const auto& timing : timings)
    jobs.push_back({graph.jobs.at(timing.job).description, timing.seconds, timing.cache_hit, timing.peak_rss_kib});
  return jobs;
}

}  // namespace kbuild::usecase
