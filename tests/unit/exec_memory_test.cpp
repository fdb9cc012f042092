// Memory-aware admission (exec/memory_budget.hpp): what a job is expected to need, the budget from
// --memory / KBUILD_MEMORY / cgroup / MemAvailable (read from a fake /proc and /sys), and the
// executor starting no more commands than the budget holds.

#include <gtest/gtest.h>

#include "kbuild/exec/executor.hpp"
#include "kbuild/exec/memory_budget.hpp"
#include "kbuild/util/interrupt.hpp"
#include "support/exec_fixture.hpp"
#include "support/fakes.hpp"

using namespace kbuild;
using namespace kbuild::exec;

namespace {

constexpr std::uint64_t k_gib = 1024 * 1024;  // in KiB

// A cgroup v1 hierarchy like Docker's: the process in /sys/fs/cgroup/memory/ci/job.
void cgroup_v1(fakes::MemFileSystem& fs, std::uint64_t job_limit, std::uint64_t parent_limit) {
  fs.put("/proc/self/cgroup", "12:pids:/ci/job\n4:memory:/ci/job\n0::/\n");
  fs.put("/sys/fs/cgroup/memory/ci/job/memory.limit_in_bytes", std::to_string(job_limit) + "\n");
  fs.put("/sys/fs/cgroup/memory/ci/job/memory.usage_in_bytes", std::to_string(1ull << 30) + "\n");
  fs.put("/sys/fs/cgroup/memory/ci/job/memory.stat", "cache 1\ntotal_inactive_file 536870912\n");
  fs.put("/sys/fs/cgroup/memory/ci/memory.limit_in_bytes", std::to_string(parent_limit) + "\n");
  fs.put("/sys/fs/cgroup/memory/ci/memory.usage_in_bytes", std::to_string(1ull << 30) + "\n");
  fs.put("/sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");  // v1's "no limit"
  fs.put("/sys/fs/cgroup/memory/memory.usage_in_bytes", "0\n");
}

}  // namespace

TEST(MemoryBudget, AJobIsExpectedToNeedItsLastPeakAndAQuarterOrItsKindsFigure) {
  EXPECT_EQ(expected_job_kib(plan::JobKind::compile_cuda, 0), 3 * k_gib);
  EXPECT_EQ(expected_job_kib(plan::JobKind::compile_cxx, 0), k_gib);
  EXPECT_EQ(expected_job_kib(plan::JobKind::link, 0), k_gib);
  EXPECT_EQ(expected_job_kib(plan::JobKind::compile_cuda, 400 * 1024), 500 * 1024);
  EXPECT_EQ(expected_job_kib(plan::JobKind::install, 400 * 1024), 0u);
  // nvcc --threads 4: four cicc at once, each as large as the largest wait4 saw.
  EXPECT_EQ(expected_job_kib(plan::JobKind::compile_cuda, 400 * 1024, 4), 2000u * 1024);
  plan::Job nvcc;
  nvcc.kind = plan::JobKind::compile_cuda;
  EXPECT_EQ(concurrent_processes(nvcc), 1u);
  nvcc.run_args = {"--threads", "4"};
  EXPECT_EQ(concurrent_processes(nvcc), 4u);
  nvcc.kind = plan::JobKind::compile_cxx;
  EXPECT_EQ(concurrent_processes(nvcc), 1u);
  EXPECT_EQ(format_kib(3 * k_gib / 2), "1.5 GiB");
  EXPECT_EQ(format_kib(512 * 1024), "512 MiB");
}

TEST(MemoryBudget, TheTightestOfMemAvailableAndEveryCgroupAboveUs) {
  fakes::MemFileSystem fs;
  EXPECT_EQ(available_memory(fs).kib, 0u);  // nothing readable: unlimited
  fs.put("/proc/meminfo", "MemTotal:       32000000 kB\nMemAvailable:   20000000 kB\n");
  EXPECT_EQ(available_memory(fs).kib, 20000000u);
  EXPECT_EQ(available_memory(fs).source, "MemAvailable");
  // The job's own limit, 4 GiB, with 1 GiB used of which 0.5 GiB is reclaimable page cache.
  cgroup_v1(fs, 4ull << 30, 64ull << 30);
  auto job = available_memory(fs);
  EXPECT_EQ(job.kib, 3 * k_gib + k_gib / 2);
  EXPECT_EQ(job.source, "cgroup /sys/fs/cgroup/memory/ci/job");
  // A parent's limit is tighter: 2 GiB with 1 GiB used.
  cgroup_v1(fs, 4ull << 30, 2ull << 30);
  EXPECT_EQ(available_memory(fs).kib, k_gib);
  EXPECT_EQ(available_memory(fs).source, "cgroup /sys/fs/cgroup/memory/ci");
  // cgroup v2: memory.max, "max" meaning none.
  fakes::MemFileSystem v2;
  v2.put("/proc/meminfo", "MemAvailable:   20000000 kB\n");
  v2.put("/proc/self/cgroup", "0::/user.slice/build\n");
  v2.put("/sys/fs/cgroup/cgroup.controllers", "cpu memory\n");
  v2.put("/sys/fs/cgroup/user.slice/build/memory.max", std::to_string(6ull << 30) + "\n");
  v2.put("/sys/fs/cgroup/user.slice/build/memory.current", std::to_string(2ull << 30) + "\n");
  v2.put("/sys/fs/cgroup/user.slice/memory.max", "max\n");
  v2.put("/sys/fs/cgroup/user.slice/memory.current", "1\n");
  EXPECT_EQ(available_memory(v2).kib, 4 * k_gib);
  EXPECT_EQ(available_memory(v2).source, "cgroup /sys/fs/cgroup/user.slice/build");
}

TEST(MemoryBudget, TheOptionThenTheEnvironmentThenWhatIsAvailable) {
  fakes::MemFileSystem fs;
  fs.put("/proc/meminfo", "MemAvailable:   1048576 kB\n");
  util::MapEnvironment env;
  EXPECT_EQ(memory_budget(std::nullopt, env, fs)->kib, k_gib);
  env.values["KBUILD_MEMORY"] = "12G";
  EXPECT_EQ(memory_budget(std::nullopt, env, fs)->kib, 12 * k_gib);
  EXPECT_EQ(memory_budget(std::nullopt, env, fs)->source, "KBUILD_MEMORY");
  EXPECT_EQ(memory_budget(std::string("512M"), env, fs)->kib, 512u * 1024);
  EXPECT_EQ(memory_budget(std::string("unlimited"), env, fs)->kib, 0u);
  EXPECT_EQ(memory_budget(std::string("auto"), env, fs)->kib, k_gib);
  auto bad = memory_budget(std::string("12 apples"), env, fs);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ExitCode::usage);
  EXPECT_EQ(bad.error().message, "--memory \"12 apples\" is not a memory size");
}

namespace {

// Four CUDA compiles feeding nothing, run by the fake runner (which completes them in start order).
struct MemoryFixture : fakes::ExecBase {
  void SetUp() override {
    ExecBase::SetUp();
    for (std::string name : {"a", "b", "c", "d"}) {
      fs.put("/src/" + name + ".cu", name);
      plan::Job job;
      job.id = "compile/" + name;
      job.kind = plan::JobKind::compile_cuda;
      job.argv = {"nvcc", "-c", "/src/" + name + ".cu", "-o", "/obj/" + name + ".o.tmp"};
      job.inputs = {"/src/" + name + ".cu"};
      job.outputs = {"/obj/" + name + ".o"};
      job.temp_output = "/obj/" + name + ".o.tmp";
      job.key = "key-" + name;
      graph.add(job);
    }
  }
  ExecSummary run(std::uint64_t memory_kib) {
    ExecutorOptions options;
    options.jobs = 4;
    options.memory_kib = memory_kib;
    return run_with(options);
  }
  void touch_sources() {
    for (std::string name : {"a", "b", "c", "d"}) fs.put("/src/" + name + ".cu", name + " edited");
  }
};

}  // namespace

TEST_F(MemoryFixture, AFirstBuildStartsNoMoreCompilesThanTheBudgetHoldsByTheirKind) {
  auto counted = run(0);  // job-count scheduling: all four at once
  EXPECT_EQ(runner.max_concurrent, 4u);
  EXPECT_EQ(counted.memory_holds, 0u);
  state = BuildState();
  auto budgeted = run(7 * k_gib);  // 3 GiB each, never measured: two fit
  EXPECT_TRUE(budgeted.ok());
  EXPECT_EQ(runner.max_concurrent, 2u);
  EXPECT_GT(budgeted.memory_holds, 0u);
  EXPECT_EQ(budgeted.peak_expected_kib, 6 * k_gib);
  EXPECT_EQ(budgeted.memory_budget_kib, 7 * k_gib);
}

TEST_F(MemoryFixture, MeasuredPeaksAreKeptInTheStateAndDecideTheNextBuild) {
  for (std::string name : {"a", "b", "c", "d"}) runner.peak_kib["/obj/" + name + ".o"] = k_gib;
  ASSERT_TRUE(run(7 * k_gib).ok());
  ASSERT_TRUE(state.find("compile/a"));
  EXPECT_EQ(state.find("compile/a")->peak_rss_kib, k_gib);
  EXPECT_NE(state.serialize().find("\nM 1048576\n"), std::string::npos);
  touch_sources();
  auto second = run(7 * k_gib);  // 1.25 GiB each now: all four fit
  EXPECT_EQ(runner.max_concurrent, 4u);
  EXPECT_EQ(second.memory_holds, 0u);
  // One unit grew: its measured peak holds the next build to fewer at once.
  runner.peak_kib["/obj/a.o"] = 5 * k_gib;
  touch_sources();
  ASSERT_TRUE(run(7 * k_gib).ok());
  touch_sources();
  auto fourth = run(7 * k_gib);
  EXPECT_GT(fourth.memory_holds, 0u);                          // while a runs, its 6.25 GiB leaves no room
  EXPECT_EQ(fourth.peak_expected_kib, 6 * k_gib + k_gib / 4);  // a alone, then b, c and d together
  EXPECT_EQ(runner.max_concurrent, 3u);
}

TEST_F(MemoryFixture, AJobLargerThanTheBudgetRunsAloneRatherThanNever) {
  auto summary = run(k_gib);  // each expects 3 GiB
  EXPECT_TRUE(summary.ok());
  EXPECT_EQ(summary.ran, 4u);
  EXPECT_EQ(runner.max_concurrent, 1u);
}

TEST(BuildState, ThePeakMemoryLineRoundTripsAndIsOptional) {
  auto parsed = BuildState::parse("kbuild-state 2\nJ x\nK k\nM 2048\nO 1 2 /o\n");
  ASSERT_TRUE(parsed.find("x"));
  EXPECT_EQ(parsed.find("x")->peak_rss_kib, 2048u);
  EXPECT_EQ(BuildState::parse(parsed.serialize()).find("x")->peak_rss_kib, 2048u);
  EXPECT_EQ(BuildState::parse("kbuild-state 2\nJ x\nK k\n").find("x")->peak_rss_kib, 0u);
  EXPECT_EQ(BuildState::parse("kbuild-state 2\nJ x\nM lots\n").size(), 0u);
}

TEST_F(MemoryFixture, ACommandKilledBySigkillIsCountedSoThatTheHintCanNameMemory) {
  runner.failures["/obj/b.o"] = 128 + 9;
  auto summary = run(0);
  EXPECT_FALSE(summary.ok());
  EXPECT_EQ(summary.killed, 1u);
  runner.failures = {{"/obj/c.o", 1}};
  touch_sources();
  EXPECT_EQ(run(0).killed, 0u);  // an ordinary compile error is not
}
