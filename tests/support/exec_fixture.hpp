#pragma once
// What an executor test drives: a graph run over an in-memory file system by the scripted command
// runner, with a silent reporter and a clock that stands still.

#include <gtest/gtest.h>

#include "kbuild/exec/executor.hpp"
#include "kbuild/util/interrupt.hpp"
#include "support/fakes.hpp"

namespace kbuild::fakes {

struct ExecBase : ::testing::Test {
  MemFileSystem fs;
  FakeCommandRunner runner{fs};
  exec::BuildState state;
  exec::NullReporter reporter;
  RecordingActions actions{fs};
  util::ManualClock clock;
  plan::JobGraph graph;

  void SetUp() override { util::reset_interrupt_for_testing(); }
  exec::ExecSummary run_with(const exec::ExecutorOptions& options) {
    runner.started.clear();
    runner.max_concurrent = 0;
    exec::Executor executor(graph, {fs, runner, actions, state, reporter, clock, nullptr}, options);
    return executor.run();
  }
};

}  // namespace kbuild::fakes
