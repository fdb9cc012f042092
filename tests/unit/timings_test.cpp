#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <set>

#include "kbuild/usecase/timings.hpp"

using namespace kbuild;

namespace {

plan::JobGraph three_jobs() {
  plan::JobGraph graph;
  for (const char* name : {"CXX a.cpp", "CXX b.cpp", "LINK lib.so"}) {
    plan::Job job;
    job.id = name;
    job.description = name;
    job.variant = "torch211-cxx11-cpu-x86_64-linux";
    job.kind = std::string(name).starts_with("LINK") ? plan::JobKind::link : plan::JobKind::compile_cxx;
    graph.add(job);
  }
  return graph;
}

}  // namespace

TEST(PhaseTimer, EachMarkEndsThePhaseSinceThePreviousOne) {
  util::ManualClock clock;
  usecase::PhaseTimer timer(clock);
  clock.advance(0.002);
  timer.mark("config");
  clock.advance(0.5);
  timer.mark("execute");
  ASSERT_EQ(timer.phases().size(), 2u);
  EXPECT_EQ(timer.phases()[1].name, "execute");
  EXPECT_NEAR(timer.phases()[1].start, 0.002, 1e-9);
  EXPECT_NEAR(timer.phases()[1].seconds, 0.5, 1e-9);
  EXPECT_NEAR(timer.elapsed(), 0.502, 1e-9);
}

TEST(ChromeTrace, PhasesOnThreadZeroJobsOnTheirLanesAtTheExecutorsOffset) {
  plan::JobGraph graph = three_jobs();
  exec::ExecSummary summary;
  summary.timings = {{0, 0.0, 2.0, 0, false, true}, {1, 0.0, 1.5, 1, true, true}, {2, 2.0, 0.25, 0, false, false}};
  std::vector<usecase::BuildPhase> phases = {{"config", 0, 0.001}, {"execute", 0.004, 2.25}};
  auto trace = nlohmann::json::parse(usecase::chrome_trace(graph, summary, phases, 0.004));
  std::vector<nlohmann::json> complete, names;
  for (const auto& event : trace["traceEvents"]) (event["ph"] == "X" ? complete : names).push_back(event);
  ASSERT_EQ(complete.size(), 5u);
  ASSERT_EQ(names.size(), 3u);  // "kbuild" and two job slots
  EXPECT_EQ(names[2]["args"]["name"], "job slot 2");
  EXPECT_EQ(complete[0]["name"], "config");
  EXPECT_EQ(complete[0]["tid"], 0);
  const auto& link = complete[4];
  EXPECT_EQ(link["name"], "LINK lib.so");
  EXPECT_EQ(link["cat"], "LINK");
  EXPECT_EQ(link["tid"], 1);
  EXPECT_EQ(link["ts"], 2004000);  // 4 ms of phases before the executor, then 2 s into it
  EXPECT_EQ(link["dur"], 250000);
  EXPECT_EQ(link["args"]["success"], false);
  EXPECT_EQ(complete[3]["args"]["cache_hit"], true);
  EXPECT_EQ(complete[3]["args"]["variant"], "torch211-cxx11-cpu-x86_64-linux");
}

TEST(SlowestJobs, LongestFirstAndCapped) {
  plan::JobGraph graph = three_jobs();
  exec::ExecSummary summary;
  summary.timings = {{0, 0.0, 1.0, 0, false, true}, {1, 0.0, 3.0, 1, false, true}, {2, 3.0, 2.0, 0, true, true}};
  auto slowest = usecase::slowest_jobs(graph, summary, 2);
  ASSERT_EQ(slowest.size(), 2u);
  EXPECT_EQ(slowest[0].description, "CXX b.cpp");
  EXPECT_EQ(slowest[1].description, "LINK lib.so");
  EXPECT_TRUE(slowest[1].cache_hit);
}
