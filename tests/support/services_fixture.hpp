#pragma once
// usecase::Services made of fakes, for unit tests that drive a use case whole: files in a
// MemFileSystem, programs answered by a FakeLauncher, compile commands by a FakeCommandRunner, the
// Hub and other HTTP servers by a FakeHttp table, a fixed clock and randomness, and a reporter that
// records what the use case said.

#include <gtest/gtest.h>

#include "kbuild/usecase/services.hpp"
#include "kbuild/util/interrupt.hpp"
#include "support/fakes.hpp"

namespace kbuild::fakes {

struct ServicesFixture : ::testing::Test {
  MemFileSystem fs;
  FakeLauncher launcher;
  FakeCommandRunner runner{fs};
  FakeHttp http;
  util::MapEnvironment env{{{"HOME", "/home/u"}, {"KBUILD_CACHE", "/cache"}}};
  util::ManualClock clock;
  util::SequenceRandom random;
  RecordingReporter reporter;
  usecase::Services services{fs, launcher, runner, http, env, clock, random, reporter};
};

}  // namespace kbuild::fakes
