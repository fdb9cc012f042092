#include <gtest/gtest.h>

#include "kbuild/exec/build_state.hpp"
#include "kbuild/exec/depfile.hpp"
#include "kbuild/exec/executor.hpp"
#include "kbuild/exec/reporter.hpp"
#include "kbuild/util/interrupt.hpp"
#include "support/exec_fixture.hpp"
#include "support/fakes.hpp"

#include <cstdio>
#include <set>
#include <thread>

using namespace kbuild;
using namespace kbuild::exec;

TEST(Depfile, ParsesContinuationsEscapesAndSkipsTargets) {
  auto deps = parse_depfile(
      "obj/a.o: src/a.cpp /usr/include/x.h \\\n  /path/with\\ space.h $$dollar.h\n"
      "/usr/include/x.h:\n");
  ASSERT_TRUE(deps);
  EXPECT_EQ(*deps, (std::vector<std::string>{"src/a.cpp", "/usr/include/x.h", "/path/with space.h", "$dollar.h"}));
}

TEST(Depfile, NvccStyle) {
  auto deps = parse_depfile("x.o : k.cu \\\n    /cuda/include/cuda_runtime.h \\\n    k.h\n");
  ASSERT_TRUE(deps);
  EXPECT_EQ(*deps, (std::vector<std::string>{"k.cu", "/cuda/include/cuda_runtime.h", "k.h"}));
}

TEST(BuildState, SerialisationRoundTrips) {
  BuildState state;
  state.set("v/compile/a b.cpp",
            {"key1", {{"/o/a b.o", 10, 20}}, {{"/s/a b.cpp", 5, 6}, {"/h.h", 7, 8}}, "", std::nullopt, ""});
  std::string text = state.serialize();
  EXPECT_TRUE(text.starts_with("kbuild-state 2\n"));
  BuildState parsed = BuildState::parse(text);
  EXPECT_EQ(parsed.serialize(), text);
  ASSERT_TRUE(parsed.find("v/compile/a b.cpp"));
  EXPECT_EQ(parsed.find("v/compile/a b.cpp")->inputs[0].path, "/s/a b.cpp");
}

TEST(BuildState, UnknownVersionOrGarbageMeansEmpty) {
  EXPECT_EQ(BuildState::parse("kbuild-state 99\nJ x\n").size(), 0u);
  EXPECT_EQ(BuildState::parse("kbuild-state 2\nQ nonsense\n").size(), 0u);
  EXPECT_EQ(BuildState::parse("kbuild-state 2\nO 1 2 /x\n").size(), 0u);  // file before a job
}

namespace {

// A small graph: two compiles feeding a link, like one variant.
struct ExecFixture : fakes::ExecBase {
  void SetUp() override {
    ExecBase::SetUp();
    fs.put("/src/a.cpp", "a");
    fs.put("/src/b.cpp", "b");
    fs.put("/src/common.h", "h");
    add_compile("a");
    add_compile("b");
    plan::Job link;
    link.id = "link";
    link.kind = plan::JobKind::link;
    link.argv = {"g++", "-shared", "-o", "/out/lib.so.tmp", "/obj/a.o", "/obj/b.o"};
    link.inputs = {"/obj/a.o", "/obj/b.o"};
    link.outputs = {"/out/lib.so"};
    link.temp_output = "/out/lib.so.tmp";
    link.deps = {0, 1};
    link.key = "link-key";
    graph.add(link);
    runner.headers["/obj/a.o"] = {"/src/common.h"};
  }
  void add_compile(const std::string& name) {
    plan::Job job;
    job.id = "compile/" + name;
    job.argv = {
        "g++", "-MD", "-MF", "/obj/" + name + ".d", "-c", "/src/" + name + ".cpp", "-o", "/obj/" + name + ".o.tmp"};
    job.inputs = {"/src/" + name + ".cpp"};
    job.outputs = {"/obj/" + name + ".o"};
    job.temp_output = "/obj/" + name + ".o.tmp";
    job.depfile = "/obj/" + name + ".d";
    job.key = "compile-key-" + name;
    graph.add(job);
  }
  ExecSummary run(size_t jobs = 2, bool keep_going = false) {
    ExecutorOptions options;
    options.jobs = jobs;
    options.keep_going = keep_going;
    return run_with(options);
  }
};

}  // namespace

TEST_F(ExecFixture, FirstBuildRunsEverythingThenNothing) {
  auto first = run();
  EXPECT_TRUE(first.ok());
  EXPECT_EQ(first.ran, 3u);
  EXPECT_TRUE(fs.has("/out/lib.so"));
  EXPECT_FALSE(fs.has("/out/lib.so.tmp"));
  EXPECT_EQ(runner.max_concurrent, 2u);
  auto second = run();
  EXPECT_EQ(second.stale, 0u);
  EXPECT_TRUE(runner.started.empty());
}

TEST_F(ExecFixture, TimingsGiveEachRunningJobItsOwnLaneAndTheNoOpNone) {
  auto first = run();
  ASSERT_EQ(first.timings.size(), 3u);
  std::set<size_t> compile_lanes;
  for (const auto& timing : first.timings) {
    EXPECT_TRUE(timing.success);
    EXPECT_LT(timing.lane, 2u);
    if (timing.job < 2) compile_lanes.insert(timing.lane);
  }
  EXPECT_EQ(compile_lanes.size(), 2u);      // the two compiles ran at once
  EXPECT_EQ(first.timings.back().job, 2u);  // the link finished last
  auto second = run();
  EXPECT_TRUE(second.timings.empty());
  EXPECT_GE(second.files_checked, 6u);  // sources, header, objects, library
}

TEST_F(ExecFixture, ChangedSourceRebuildsOnlyWhatDependsOnIt) {
  run();
  fs.touch("/src/b.cpp");
  auto summary = run();
  EXPECT_EQ(summary.ran, 2u);
  ASSERT_EQ(runner.started.size(), 2u);
  EXPECT_EQ(runner.started[0][5], "/src/b.cpp");
  EXPECT_EQ(runner.started[1][0] + " " + runner.started[1][1], "g++ -shared");
}

TEST_F(ExecFixture, HeaderFromDepfileIsTracked) {
  run();
  fs.put("/src/common.h", "changed");
  auto summary = run();
  EXPECT_EQ(summary.ran, 2u);  // a.cpp includes it, b.cpp does not
  EXPECT_EQ(runner.started[0][5], "/src/a.cpp");
}

TEST_F(ExecFixture, ChangedKeyReruns) {
  run();
  graph.jobs[1].key = "compile-key-b-new-flags";
  EXPECT_EQ(run().ran, 2u);
}

TEST_F(ExecFixture, ModifiedOrDeletedOutputReruns) {
  run();
  (void)fs.remove_all("/obj/a.o");
  EXPECT_EQ(run().ran, 2u);
  fs.put("/out/lib.so", "tampered");
  EXPECT_EQ(run().ran, 1u);
}

TEST_F(ExecFixture, FailureStopsDependentsAndRemovesPartialOutput) {
  runner.failures["/obj/a.o"] = 1;
  auto summary = run(1, false);
  EXPECT_EQ(summary.failed, 1u);
  EXPECT_FALSE(summary.ok());
  EXPECT_FALSE(fs.has("/obj/a.o.tmp"));
  EXPECT_FALSE(fs.has("/out/lib.so"));
  EXPECT_EQ(summary.not_run, 2u);  // b was not started after the failure with -j1, link never
  runner.failures.clear();
  EXPECT_TRUE(run().ok());
}

TEST_F(ExecFixture, KeepGoingBuildsIndependentJobs) {
  runner.failures["/obj/a.o"] = 1;
  auto summary = run(1, true);
  EXPECT_EQ(summary.failed, 1u);
  EXPECT_EQ(summary.ran, 1u);  // b.o
  EXPECT_TRUE(fs.has("/obj/b.o"));
  EXPECT_EQ(summary.not_run, 1u);  // link
}

TEST_F(ExecFixture, InterruptStopsBeforeStartingMore) {
  util::raise_interrupt_for_testing();
  auto summary = run();
  EXPECT_TRUE(summary.interrupted);
  EXPECT_TRUE(runner.started.empty());
  util::reset_interrupt_for_testing();
}

TEST_F(ExecFixture, InProcessJobsGoToTheActionRunnerAndAreRecorded) {
  plan::Job gen;
  gen.id = "gen";
  gen.kind = plan::JobKind::generate;
  gen.outputs = {"/gen/x.h"};
  gen.key = "k";
  gen.action = plan::WriteFiles{{{"/gen/x.h", "x"}}};
  graph.add(gen);
  run();
  run();
  EXPECT_EQ(actions.ran, std::vector<std::string>{"gen"});
  EXPECT_EQ(fs.content("/gen/x.h"), "x");
  actions.fail = true;  // a failing action is a failed job, and leaves no record
  fs.put("/gen/x.h", "changed");
  auto failed = run();
  EXPECT_EQ(failed.failed, 1u);
  EXPECT_EQ(state.find("gen"), nullptr);
}

TEST(Staleness, ReasonsAreSpecific) {
  fakes::MemFileSystem fs;
  fs.put("/o", "out");
  fs.put("/i", "in");
  StatCache stats(fs);
  plan::Job job;
  job.key = "k";
  job.outputs = {"/o"};
  job.inputs = {"/i"};
  EXPECT_EQ(*staleness_reason(job, nullptr, stats), "no record of a previous build");
  JobRecord record{"other", {{"/o", fs.stat("/o").mtime_ns, 3}}, {{"/i", fs.stat("/i").mtime_ns, 2}}, "", std::nullopt,
                   ""};
  EXPECT_EQ(*staleness_reason(job, &record, stats), "the command line or the toolchain changed");
  record.key = "k";
  EXPECT_FALSE(staleness_reason(job, &record, stats).has_value());
  record.inputs[0].mtime_ns -= 1;
  EXPECT_EQ(*staleness_reason(job, &record, stats), "input /i changed");
  // A header as the depfile names it is shown normalised.
  fs.put("/k/include/x.h", "h");
  record.inputs = {{"/k/torch-ext/../include/x.h", fs.stat("/k/include/x.h").mtime_ns + 1, 1}};
  EXPECT_EQ(*staleness_reason(job, &record, stats), "input /k/include/x.h changed");
}

// The terminal reporter shows how long a command has been running: in the live line on a terminal,
// as "still running" lines in a log. (Real time, with millisecond ticks.)
namespace {
std::string report_of_a_long_job(bool smart_terminal) {
  std::FILE* out = std::tmpfile();
  {
    TerminalOptions options;
    options.smart_terminal = smart_terminal;
    options.out = out;
    options.tick = std::chrono::milliseconds(5);
    options.long_after = std::chrono::seconds(0);
    options.log_every = std::chrono::seconds(0);
    TerminalReporter reporter(options);
    plan::Job job;
    job.id = "v/compile/a.cu";
    job.description = "CUDA a.cu  [v]";
    job.argv = {"nvcc"};
    reporter.job_started(job, 0, 2, false);
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    reporter.job_finished(job, {}, 1, 2);
  }
  std::string text;
  std::rewind(out);
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, out)) > 0;) text.append(buffer, n);
  std::fclose(out);
  return text;
}
}  // namespace

TEST(TerminalReporter, LongCommandsShowTheirElapsedTime) {
  EXPECT_EQ(with_elapsed("[3/12] CUDA a.cu", 7.9), "[3/12] CUDA a.cu  (7 s)");
  EXPECT_EQ(with_elapsed("[3/12] CUDA a.cu", 65), "[3/12] CUDA a.cu  (1 min 05 s)");
  std::string live = report_of_a_long_job(true);
  EXPECT_NE(live.find("\r[1/2] CUDA a.cu  [v]  (0 s)\x1b[K"), std::string::npos) << live;
  std::string log = report_of_a_long_job(false);
  EXPECT_NE(log.find("kbuild: still running: CUDA a.cu  [v]  (0 s)\n"), std::string::npos) << log;
}

namespace {
// A compile cache as data: restores the outputs it was given, counts what it was asked.
struct ScriptedCache final : JobCache {
  fakes::MemFileSystem& fs;
  std::map<std::string, std::string> outputs;  ///< output path -> bytes it restores
  std::vector<std::string> stored;
  explicit ScriptedCache(fakes::MemFileSystem& f) : fs(f) {}
  bool restore(const plan::Job& job) override {
    auto it = outputs.find(job.outputs.front().string());
    if (it == outputs.end()) return false;
    fs.put(job.outputs.front().string(), it->second);
    if (job.depfile) fs.put(job.depfile->string(), job.outputs.front().string() + ": " + job.inputs.front().string());
    return true;
  }
  void store(const plan::Job& job, const std::vector<std::string>&, bool) override {
    stored.push_back(job.outputs.front().string());
  }
};
}  // namespace

TEST_F(ExecFixture, ALinkFailingOnCachedObjectsIsRetriedOnceWithFreshOnes) {
  for (auto& job : graph.jobs) job.cacheable = job.kind != plan::JobKind::link;
  ScriptedCache cache(fs);
  cache.outputs["/obj/a.o"] = "WRONG ENTRY";  // consistent to the cache, wrong for the linker
  runner.poison = "WRONG ENTRY";
  std::vector<std::string> warnings;
  struct Warnings final : Reporter {
    std::vector<std::string>& out;
    explicit Warnings(std::vector<std::string>& o) : out(o) {}
    void job_started(const plan::Job&, size_t, size_t, bool) override {}
    void job_finished(const plan::Job&, const JobOutcome&, size_t, size_t) override {}
    void explain(const plan::Job&, const std::string&) override {}
    void info(std::string_view) override {}
    void warning(std::string_view message) override { out.emplace_back(message); }
  } reporter_with_warnings(warnings);
  ExecutorOptions options;
  options.jobs = 1;
  Executor executor(graph, {fs, runner, actions, state, reporter_with_warnings, clock, &cache}, options);
  auto summary = executor.run();
  EXPECT_TRUE(summary.ok()) << summary.failed;
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("from the compile cache"), std::string::npos);
  EXPECT_NE(fs.content("/obj/a.o"), "WRONG ENTRY");  // compiled again, and stored again
  EXPECT_EQ(std::count(cache.stored.begin(), cache.stored.end(), "/obj/a.o"), 1);
  EXPECT_EQ(summary.not_run, 0u);
  // A link that fails with fresh objects too is reported, once retried.
  cache.outputs["/obj/a.o"] = "WRONG ENTRY";
  runner.failures["/out/lib.so"] = 1;
  fs.touch("/src/a.cpp");
  warnings.clear();
  Executor again(graph, {fs, runner, actions, state, reporter_with_warnings, clock, &cache}, options);
  auto failed = again.run();
  EXPECT_EQ(failed.failed, 1u);
  EXPECT_EQ(warnings.size(), 1u);
}

TEST_F(ExecFixture, TemporariesOfKilledCommandsAreSweptByTheNextBuild) {
  fs.put("/obj/a.o.tmp", "partial");
  fs.put("/obj/a.o.tmp.cpp4.ii", "nvcc intermediate");
  fs.put("/obj/a.o.tmp.fatbin.c", "nvcc intermediate");
  fs.put("/obj/notes.tmp.txt", "not ours");
  run();
  EXPECT_FALSE(fs.has("/obj/a.o.tmp.cpp4.ii"));
  EXPECT_FALSE(fs.has("/obj/a.o.tmp.fatbin.c"));
  EXPECT_TRUE(fs.has("/obj/notes.tmp.txt"));
}

TEST_F(ExecFixture, AReadOnlyRunSucceedsWhenUpToDateAndRunsNothingOtherwise) {
  run();
  ExecutorOptions options;
  options.read_only = true;
  runner.started.clear();
  auto fresh = Executor(graph, {fs, runner, actions, state, reporter, clock, nullptr}, options).run();
  EXPECT_TRUE(fresh.ok());
  fs.touch("/src/a.cpp");
  auto stale = Executor(graph, {fs, runner, actions, state, reporter, clock, nullptr}, options).run();
  EXPECT_TRUE(stale.blocked_read_only);
  EXPECT_FALSE(stale.ok());
  EXPECT_TRUE(runner.started.empty());
}
