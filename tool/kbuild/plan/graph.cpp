#include "kbuild/plan/graph.hpp"

#include <set>

namespace kbuild::plan {

// Also a field of every compile-cache key (cache/key.cpp): renaming a kind invalidates the cache.
const char* to_string(JobKind kind) {
  switch (kind) {
    case JobKind::compile_cxx:
      return "CXX";
    case JobKind::compile_cuda:
      return "CUDA";
    case JobKind::link:
      return "LINK";
    case JobKind::generate:
      return "GEN";
    case JobKind::install:
      return "INSTALL";
  }
  return "?";
}

std::vector<std::string> Job::command_line() const {
  std::vector<std::string> command = argv;
  command.insert(command.end(), run_args.begin(), run_args.end());
  return command;
}

// Masks only an argument equal to "-D<name>=<value>" as one element: the planner must emit the define that
// way (not as "-D" "<name>=<value>") for the ops id to stay out of job and cache keys.
std::vector<std::string> Job::keyed_argv() const {
  std::vector<std::string> out = argv;
  if (!volatile_define) return out;
  const std::string actual = volatile_define->argument();
  for (auto& arg : out)
    if (arg == actual) arg = volatile_define->masked_argument();
  return out;
}

// Dependencies may only point backwards, which proves the graph acyclic without a search and lets index
// order serve as a topological order. One producer per output: two jobs writing one file would race
// under -j, and the file would hold whichever finished last.
Result<void> JobGraph::validate() const {
  std::set<std::string> ids;
  std::set<fs::path> outputs;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& job = jobs[i];
    if (!ids.insert(job.id).second) return fail("internal error: duplicate job id " + job.id);
    for (const auto& output : job.outputs)
      if (!outputs.insert(output).second) return fail("internal error: two jobs write " + output.string());
    for (size_t dep : job.deps)
      if (dep >= i) return fail("internal error: job " + job.id + " depends on a later job");
    if (job.argv.empty() && !job.in_process()) return fail("internal error: job " + job.id + " has nothing to do");
  }
  return {};
}

}  // namespace kbuild::plan
