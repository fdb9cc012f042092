// The ops id's -D reaches the staleness and cache keys only of units that name the macro
// (plan::Job::VolatileDefine, exec/macro_scan.hpp), and --explain names what changed.
#include <gtest/gtest.h>

#include "kbuild/cache/compile_cache.hpp"
#include "kbuild/exec/build_state.hpp"
#include "kbuild/exec/executor.hpp"
#include "kbuild/exec/macro_scan.hpp"
#include "kbuild/exec/reporter.hpp"
#include "kbuild/util/interrupt.hpp"
#include "kbuild/util/strings.hpp"
#include "support/fakes.hpp"

using namespace kbuild;
using namespace kbuild::exec;

TEST(MacroScan, FindsTheIdentifierOutsideCommentsAndLiterals) {
  const std::string_view m = "TORCH_EXTENSION_NAME";
  EXPECT_TRUE(names_macro("TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {}", m));
  EXPECT_TRUE(names_macro("#define NAME STRINGIFY(TORCH_EXTENSION_NAME)\n", m));
  EXPECT_FALSE(names_macro("__global__ void k(float* x) { x[0] = 1; }\n", m));
  EXPECT_FALSE(names_macro("// the build defines TORCH_EXTENSION_NAME\nint a;\n", m));
  EXPECT_FALSE(names_macro("/* TORCH_EXTENSION_NAME\n spans */ int a;\n", m));
  EXPECT_FALSE(names_macro("const char* s = \"TORCH_EXTENSION_NAME\";\n", m));
  EXPECT_FALSE(names_macro("char c = '\"'; int TORCH_EXTENSION_NAMES;\n", m));   // a longer identifier
  EXPECT_FALSE(names_macro("int x = 1'000'000; // TORCH_EXTENSION_NAME\n", m));  // digit separators
  // A // inside a string does not start a comment that would hide a use on the same line.
  EXPECT_TRUE(names_macro("const char* u = \"http://x\"; REGISTER_EXTENSION(TORCH_EXTENSION_NAME)\n", m));
  EXPECT_TRUE(names_macro("auto c = u8'x'; TORCH_EXTENSION_NAME\n", m));
  EXPECT_TRUE(names_macro("// continued \\\nTORCH_EXTENSION_NAME\n", m) == false);  // still the comment
  // What cannot be lexed with certainty counts as naming it (a recompile, never a wrong object).
  EXPECT_TRUE(names_macro("/* never closed", m));
  EXPECT_TRUE(names_macro("const char* s = \"never closed\nint a;\n", m));
  EXPECT_TRUE(names_macro("#error don't\n", m));
  EXPECT_TRUE(names_macro("auto s = R\"(anything)\";\n", m));
}

TEST(BuildState, CommandAndVolatileValueRoundTrip) {
  BuildState state;
  JobRecord record{"k", {{"/o.o", 1, 2}}, {{"/s.cpp", 3, 4}}, "", std::nullopt, ""};
  record.command = "g++ -O3 '-DX=a b'";
  record.volatile_value = "_relu_cpu_src1234abcd";
  record.volatile_named_in = "/k/torch-ext/binding.cpp";
  state.set("v/compile/s.cpp", record);
  BuildState parsed = BuildState::parse(state.serialize());
  const JobRecord* back = parsed.find("v/compile/s.cpp");
  ASSERT_TRUE(back);
  EXPECT_EQ(back->command, record.command);
  EXPECT_EQ(back->volatile_value, record.volatile_value);
  EXPECT_EQ(back->volatile_named_in, record.volatile_named_in);
  EXPECT_EQ(parsed.serialize(), state.serialize());
}

namespace {

class ExplainingReporter final : public Reporter {
 public:
  std::map<std::string, std::string> reasons;
  void job_started(const plan::Job&, size_t, size_t, bool) override {}
  void job_finished(const plan::Job&, const JobOutcome&, size_t, size_t) override {}
  void explain(const plan::Job& job, const std::string& reason) override { reasons[job.id] = reason; }
  void info(std::string_view) override {}
  void warning(std::string_view) override {}
};

// Two units of one variant: the binding names TORCH_EXTENSION_NAME, the kernel does not.
struct VolatileFixture : ::testing::Test {
  fakes::MemFileSystem fs;
  fakes::FakeCommandRunner runner{fs};
  BuildState state;
  ExplainingReporter reporter;
  fakes::RecordingActions actions{fs};
  util::ManualClock clock;
  std::optional<cache::CompileCache> cache;

  void SetUp() override {
    util::reset_interrupt_for_testing();
    fs.put("/k/binding.cpp", "#include \"registration.h\"\nTORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {}\n");
    fs.put("/k/kernel.cpp", "#include \"kernel.h\"\nvoid relu(float* x) {}\n");
    fs.put("/k/kernel.h", "// kernel.h: no ops id here (TORCH_EXTENSION_NAME in a comment)\n");
    fs.put("/torch/include/library.h", "TORCH_EXTENSION_NAME is not scanned outside the roots\n");
    runner.headers["/w/kernel.o"] = {"/k/kernel.h", "/torch/include/library.h"};
  }
  plan::JobGraph graph(const std::string& ops, const std::string& extra_flag = "") {
    plan::JobGraph g;
    for (const std::string name : {"binding", "kernel"}) {
      plan::Job job;
      job.id = "v/compile/" + name;
      job.kind = plan::JobKind::compile_cxx;
      job.volatile_define = plan::Job::VolatileDefine{"TORCH_EXTENSION_NAME", ops, {"/k", "/w"}};
      job.argv = {"g++", "-O3", job.volatile_define->argument()};
      if (!extra_flag.empty()) job.argv.push_back(extra_flag);
      for (const std::string& arg : std::vector<std::string>{"-MD", "-MF", "/w/" + name + ".d", "-c",
                                                             "/k/" + name + ".cpp", "-o", "/w/" + name + ".o.tmp"})
        job.argv.push_back(arg);
      job.inputs = {"/k/" + name + ".cpp"};
      job.outputs = {"/w/" + name + ".o"};
      job.temp_output = "/w/" + name + ".o.tmp";
      job.depfile = "/w/" + name + ".d";
      job.key = util::shell_join(job.keyed_argv());
      job.cacheable = true;
      job.tool_identity = "g++ 12";
      job.path_roots = {{"$K", "/k"}, {"$W", "/w"}};
      g.add(job);
    }
    return g;
  }
  std::vector<std::string> run(const plan::JobGraph& g) {
    runner.started.clear();
    reporter.reasons.clear();
    Executor executor(g, {fs, runner, actions, state, reporter, clock, cache ? &*cache : nullptr}, {});
    EXPECT_TRUE(executor.run().ok());
    std::vector<std::string> compiled;
    for (const auto& argv : runner.started)
      for (size_t i = 0; i + 1 < argv.size(); ++i)
        if (argv[i] == "-c") compiled.push_back(argv[i + 1]);
    return compiled;
  }
};

}  // namespace

TEST_F(VolatileFixture, ANewOpsIdRecompilesOnlyTheUnitThatNamesIt) {
  EXPECT_EQ(run(graph("_relu_cpu_a")).size(), 2u);
  EXPECT_TRUE(run(graph("_relu_cpu_a")).empty());
  EXPECT_EQ(state.find("v/compile/binding")->volatile_value, "_relu_cpu_a");
  EXPECT_FALSE(state.find("v/compile/kernel")->volatile_value);
  EXPECT_EQ(run(graph("_relu_cpu_b")), std::vector<std::string>{"/k/binding.cpp"});
  EXPECT_EQ(reporter.reasons["v/compile/binding"],
            "the ops id changed (_relu_cpu_a -> _relu_cpu_b) and /k/binding.cpp names TORCH_EXTENSION_NAME");
  // The command that runs still carries the real value.
  EXPECT_EQ(runner.started[0][2], "-DTORCH_EXTENSION_NAME=_relu_cpu_b");
  // A header that starts naming the macro is an edited input: the unit recompiles and is then tied to the id.
  fs.put("/k/kernel.h", "#define NAME TORCH_EXTENSION_NAME\n");
  EXPECT_EQ(run(graph("_relu_cpu_b")), std::vector<std::string>{"/k/kernel.cpp"});
  EXPECT_EQ(state.find("v/compile/kernel")->volatile_named_in, "/k/kernel.h");
  EXPECT_EQ(run(graph("_relu_cpu_c")).size(), 2u);
}

TEST_F(VolatileFixture, ExplainNamesTheArgumentsThatChanged) {
  run(graph("_relu_cpu_a"));
  run(graph("_relu_cpu_a", "-DFAST"));
  EXPECT_EQ(reporter.reasons["v/compile/kernel"], "the command line changed: added -DFAST");
  run(graph("_relu_cpu_a", "-DSLOW"));
  EXPECT_EQ(reporter.reasons["v/compile/kernel"], "the command line changed: added -DSLOW; removed -DFAST");
}

TEST_F(VolatileFixture, TheCacheServesUnitsThatDoNotNameTheIdAcrossIds) {
  cache.emplace(fs, "/cache", std::uint64_t{1} << 30, nullptr);
  run(graph("_relu_cpu_a"));
  // Another checkout state: no intermediates, a new ops id (say, after a commit and kbuild clean).
  state = BuildState();
  (void)fs.remove_all("/w");
  cache.emplace(fs, "/cache", std::uint64_t{1} << 30, nullptr);
  EXPECT_EQ(run(graph("_relu_cpu_b")), std::vector<std::string>{"/k/binding.cpp"});
  EXPECT_EQ(cache->run_counters().hits, 1u);  // kernel.cpp
  // Back to the first id: both come from the cache, the binding from its entry for that id.
  state = BuildState();
  (void)fs.remove_all("/w");
  cache.emplace(fs, "/cache", std::uint64_t{1} << 30, nullptr);
  EXPECT_TRUE(run(graph("_relu_cpu_a")).empty());
  EXPECT_EQ(cache->run_counters().hits, 2u);
  EXPECT_EQ(state.find("v/compile/binding")->volatile_value, "_relu_cpu_a");
}

namespace {
std::string read_all(std::FILE* file) {
  std::rewind(file);
  std::string text;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, file)) > 0;) text.append(buffer, n);
  return text;
}
}  // namespace

TEST(TerminalReporter, CompilerErrorsGoToStderrOnceWithTheCommandOnlyWhenVerbose) {
  for (bool verbose : {false, true}) {
    std::FILE* out = std::tmpfile();
    std::FILE* err = std::tmpfile();
    TerminalOptions options;
    options.out = out;
    options.err = err;
    options.verbose = verbose;
    {
      TerminalReporter reporter(options);
      plan::Job job;
      job.id = "a";
      job.description = "CXX relu.cpp  [torch211-cpu]";
      job.argv = {"g++", "-c", "relu.cpp"};
      JobOutcome failed;
      failed.success = false;
      failed.output = "relu.cpp:3:1: error: expected ';'\n";
      reporter.job_finished(job, failed, 1, 2);
      job.description = "CXX relu.cpp  [torch211-cu130]";  // the same source in another variant
      reporter.job_finished(job, failed, 2, 2);
    }
    std::string stdout_text = read_all(out), stderr_text = read_all(err);
    std::fclose(out);
    std::fclose(err);
    EXPECT_EQ(stdout_text.find("error"), std::string::npos) << stdout_text;
    EXPECT_EQ(stderr_text.find("expected ';'"), stderr_text.rfind("expected ';'")) << stderr_text;  // once
    EXPECT_NE(stderr_text.find("FAILED: CXX relu.cpp  [torch211-cu130] (the same errors as above)"), std::string::npos)
        << stderr_text;
    EXPECT_EQ(stderr_text.find("g++ -c relu.cpp") != std::string::npos, verbose) << stderr_text;
  }
}
