// Whether build/<variant>/ matches the sources (usecase/freshness.hpp), after real builds through fakes:
// a finished build is current; an edit, a new header, a failed or an interrupted build make it stale.

#include <gtest/gtest.h>

#include "kbuild/usecase/freshness.hpp"
#include "kbuild/usecase/kernel_source.hpp"
#include "kbuild/util/strings.hpp"
#include "support/build_fixture.hpp"

using namespace kbuild;
using fakes::BuildFixture;

namespace {

const std::string k_cpu = "torch211-cxx11-cpu-x86_64-linux";

usecase::VariantFreshness judge(BuildFixture& f) {
  auto config = usecase::load_kernel(f.fs, "/k", {});
  EXPECT_TRUE(config);
  auto freshness = usecase::variant_freshness(f.fs, "/k", *config, {k_cpu});
  EXPECT_TRUE(freshness);
  return freshness->front();
}

using State = usecase::VariantFreshness::State;

}  // namespace

TEST_F(BuildFixture, AFinishedBuildIsCurrentAndAnEditMakesItStale) {
  EXPECT_EQ(judge(*this).state, State::unknown);  // never built here
  ASSERT_TRUE(usecase::build(request(), services));
  EXPECT_EQ(judge(*this).state, State::current) << judge(*this).reason;
  // Not build inputs: no change.
  fs.put("/k/README.md", "notes");
  fs.put("/k/tests/test_relu.py", "def test(): pass\n");
  EXPECT_EQ(judge(*this).state, State::current) << judge(*this).reason;
  // A source edit.
  fs.put("/k/relu_cpu/relu.cpp", "// cpu, edited");
  auto edited = judge(*this);
  EXPECT_EQ(edited.state, State::stale);
  EXPECT_EQ(edited.reason, "relu_cpu/relu.cpp changed since the build");
  ASSERT_TRUE(usecase::build(request(), services));
  EXPECT_EQ(judge(*this).state, State::current);
  // A new Python file of the package is a new build input.
  fs.put("/k/torch-ext/relu/layers.py", "");
  EXPECT_EQ(judge(*this).reason, "torch-ext/relu/layers.py is a new build input since the build");
  ASSERT_TRUE(usecase::build(request(), services));
  // An installed file modified by hand.
  fs.put("/k/build/" + k_cpu + "/__init__.py", "tampered");
  EXPECT_EQ(judge(*this).reason, "build/" + k_cpu + "/__init__.py was modified after the build");
}

TEST_F(BuildFixture, AnEditThatWasRevertedIsNoChange) {
  ASSERT_TRUE(usecase::build(request(), services));
  const std::string original = *fs.read_file("/k/relu_cpu/relu.cpp");
  fs.put("/k/relu_cpu/relu.cpp", "// cpu, edited");
  EXPECT_EQ(judge(*this).state, State::stale);
  fs.put("/k/relu_cpu/relu.cpp", original);  // same bytes, a newer mtime
  EXPECT_EQ(judge(*this).state, State::current) << judge(*this).reason;
}

TEST_F(BuildFixture, TheHubRepositoryCommentsAndLayoutOfBuildTomlAreNoBuildInput) {
  ASSERT_TRUE(usecase::build(request(), services));
  auto config = usecase::load_kernel(fs, "/k", {});
  ASSERT_TRUE(config);
  auto id = usecase::source_content_id(fs, "/k", *config).value();
  std::string text = fakes::k_build_toml;
  // What `kbuild init` leaves to fix before publishing, fixed; a comment; another layout.
  fs.put("/k/build.toml", "# relu\n" + text + "\n[general.hub]\nrepo-id = \"alice/relu\"\n");
  EXPECT_EQ(judge(*this).state, State::current) << judge(*this).reason;
  EXPECT_EQ(usecase::source_content_id(fs, "/k", *config).value(), id);
  fs.put("/k/build.toml", util::replace_all(text, "version = 1", "version    =   1"));
  EXPECT_EQ(judge(*this).state, State::current) << judge(*this).reason;
  // Any other value is a change.
  fs.put("/k/build.toml", util::replace_all(text, "license = \"apache-2.0\"", "license = \"mit\""));
  EXPECT_EQ(judge(*this).reason, "build.toml changed since the build");
  EXPECT_NE(usecase::source_content_id(fs, "/k", *config).value(), id);
}

TEST_F(BuildFixture, AFailedBuildLeavesTheVariantStaleEvenIfTheOldLibraryIsThere) {
  ASSERT_TRUE(usecase::build(request(), services));
  // The compiler now fails on the edited source: build/ still holds the last good library.
  fs.put("/k/relu_cpu/relu.cpp", "// broken");
  runner.failures["/k/.kbuild/" + k_cpu + "/obj/relu_cpu/relu.cpp.o"] = 1;
  ASSERT_FALSE(usecase::build(request(), services));
  EXPECT_TRUE(fs.has("/k/build/" + k_cpu + "/metadata.json"));
  auto after = judge(*this);
  EXPECT_EQ(after.state, State::stale);
  EXPECT_EQ(after.reason, "its last build did not finish (a failed or interrupted kbuild build)");
  auto refused = usecase::refuse_stale({after}, "check", "/k");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ExitCode::failure);
  EXPECT_NE(refused.error().message.find("build/" + k_cpu + ": its last build did not finish"), std::string::npos);
  EXPECT_NE(refused.error().hint.find("kbuild build /k"), std::string::npos);
  // Fixed: current again.
  runner.failures.clear();
  ASSERT_TRUE(usecase::build(request(), services));
  EXPECT_EQ(judge(*this).state, State::current);
}

TEST_F(BuildFixture, AnInterruptedBuildLeavesTheVariantStale) {
  ASSERT_TRUE(usecase::build(request(), services));
  fs.put("/k/torch-ext/torch_binding.cpp", "// binding, edited");
  util::raise_interrupt_for_testing();
  auto interrupted = usecase::build(request(), services);
  util::reset_interrupt_for_testing();
  ASSERT_FALSE(interrupted);
  EXPECT_EQ(interrupted.error().code, ExitCode::interrupted);
  // Even after the edit is undone, the variant's last build did not finish.
  fs.put("/k/torch-ext/torch_binding.cpp", "// binding");
  EXPECT_EQ(judge(*this).state, State::stale);
}

TEST_F(BuildFixture, AVariantBuiltElsewhereIsJudgedByTheSourcePartOfItsOpsId) {
  ASSERT_TRUE(usecase::build(request(), services));
  // As gathered from a CI runner: build/ without this checkout's record of building it.
  fs.remove_all("/k/.kbuild");
  auto gathered = judge(*this);
  EXPECT_EQ(gathered.state, State::current) << gathered.reason;
  EXPECT_NE(gathered.reason.find("built elsewhere from these sources"), std::string::npos) << gathered.reason;
  // The sources here moved on since that build: its ops id no longer matches them.
  fs.put("/k/relu_cpu/relu.cpp", "// cpu, edited after the CI run");
  auto older = judge(*this);
  EXPECT_EQ(older.state, State::stale);
  EXPECT_NE(older.reason.find("it was built from other sources"), std::string::npos) << older.reason;
  // A variant with a chosen --unique-id cannot be compared so: unknown, as before.
  auto chosen = request();
  chosen.unique_id = "v7";
  fs.put("/k/relu_cpu/relu.cpp", "// cpu");
  ASSERT_TRUE(usecase::build(chosen, services));
  fs.remove_all("/k/.kbuild");
  EXPECT_EQ(judge(*this).state, State::unknown);
}
