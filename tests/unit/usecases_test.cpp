// The smaller use cases through usecase::Services of fakes: clean (usecase/clean.hpp), the CI
// workflow (usecase/ci_workflow.hpp), toolchains lock and fetch (usecase/toolchains.hpp).

#include <gtest/gtest.h>

#include "kbuild/usecase/ci_workflow.hpp"
#include "kbuild/usecase/clean.hpp"
#include "kbuild/usecase/toolchains.hpp"
#include "support/build_fixture.hpp"

using namespace kbuild;

using CleanFixture = fakes::BuildFixture;

TEST_F(CleanFixture, IntermediatesThenVariantsAndADryRunRemovesNothing) {
  ASSERT_TRUE(usecase::build(request(), services));
  auto dry = usecase::clean({"/k", true, true}, services);
  ASSERT_TRUE(dry) << dry.error().message;
  EXPECT_EQ(dry->removed, (std::vector<std::filesystem::path>{"/k/.kbuild", "/k/build"}));
  EXPECT_TRUE(fs.stat("/k/build").is_dir);
  EXPECT_TRUE(fs.stat("/k/.kbuild/state").is_file);

  auto intermediates = usecase::clean({"/k", false, false}, services);
  ASSERT_TRUE(intermediates);
  EXPECT_EQ(intermediates->removed, std::vector<std::filesystem::path>{"/k/.kbuild"});
  EXPECT_FALSE(fs.stat("/k/.kbuild").exists);
  EXPECT_TRUE(fs.stat("/k/build").is_dir);
  auto everything = usecase::clean({"/k", true, false}, services);
  ASSERT_TRUE(everything);
  EXPECT_FALSE(fs.stat("/k/build").exists);
  auto nothing = usecase::clean({"/k", true, false}, services);
  ASSERT_TRUE(nothing);
  EXPECT_TRUE(nothing->removed.empty());

  auto elsewhere = usecase::clean({"/not-a-kernel", true, false}, services);
  ASSERT_FALSE(elsewhere);
  EXPECT_EQ(elsewhere.error().code, ExitCode::usage);
}

using CiFixture = fakes::BuildFixture;

TEST_F(CiFixture, TheWorkflowIsWrittenOnceAndAnEditedOneIsKept) {
  launcher.answers["git -C /k rev-parse --show-toplevel"] = {0, "/k\n", ""};
  auto written = usecase::ci_workflow({"/k", {}, true, false}, services);
  ASSERT_TRUE(written) << written.error().message;
  EXPECT_EQ(written->written, "/k/.github/workflows/kbuild-relu.yml");
  EXPECT_EQ(fs.content("/k/.github/workflows/kbuild-relu.yml"), written->workflow.text);
  EXPECT_NE(written->workflow.text.find("kbuild"), std::string::npos);

  auto again = usecase::ci_workflow({"/k", {}, true, false}, services);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->up_to_date);

  fs.put("/k/.github/workflows/kbuild-relu.yml", "# edited by hand\n");
  auto refused = usecase::ci_workflow({"/k", {}, true, false}, services);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ExitCode::usage);
  EXPECT_NE(refused.error().hint.find("--force"), std::string::npos);
  EXPECT_EQ(fs.content("/k/.github/workflows/kbuild-relu.yml"), "# edited by hand\n");
  auto only_shown = usecase::ci_workflow({"/k", {}, false, false}, services);  // --stdout
  ASSERT_TRUE(only_shown);
  EXPECT_TRUE(only_shown->written.empty());
  auto forced = usecase::ci_workflow({"/k", "/elsewhere/ci.yml", true, true}, services);
  ASSERT_TRUE(forced);
  EXPECT_EQ(fs.content("/elsewhere/ci.yml"), written->workflow.text);
}

using ToolchainsFixture = fakes::MatrixBuildFixture;

TEST_F(ToolchainsFixture, PinnedAndUnpackedToolchainsNeedNoDownload) {
  auto locked = usecase::lock_toolchains({"/k", "python3", false}, services);
  ASSERT_TRUE(locked) << locked.error().message;
  EXPECT_TRUE(locked->up_to_date);  // every Torch of the matrix is pinned already
  EXPECT_EQ(locked->lock_path, "/k/kbuild.lock");

  usecase::ToolchainsFetchRequest fetch;
  fetch.kernel_dir = "/k";
  fetch.python = "python3";
  fetch.locked = true;
  auto fetched = usecase::fetch_toolchains(fetch, services);
  ASSERT_TRUE(fetched) << fetched.error().message;
  EXPECT_EQ(fetched->variants, 2u);
  ASSERT_EQ(fetched->toolchains.size(), 2u);
  EXPECT_EQ(fetched->cache, "/cache/toolchains");
  for (const auto& command : launcher.ran) EXPECT_EQ(command.find("pip"), std::string::npos) << command;

  // A pin missing with --locked: refused, kbuild.lock untouched.
  std::string lock_text = fs.content("/k/kbuild.lock");
  fs.put("/k/kbuild.toml", "[matrix]\ntorch = [\"2.10\", \"2.11\", \"2.12\"]\ncuda = []\ncpu = true\n");
  auto refused = usecase::fetch_toolchains(fetch, services);
  ASSERT_FALSE(refused);
  EXPECT_EQ(fs.content("/k/kbuild.lock"), lock_text);
}
