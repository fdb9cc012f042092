// The smaller use cases through usecase::Services of fakes: clean (usecase/clean.hpp), the CI
// workflow (usecase/ci_workflow.hpp), toolchains lock and fetch (usecase/toolchains.hpp), the cache
// commands (usecase/cache_admin.hpp), check (usecase/check_variants.hpp), variants
// (usecase/list_variants.hpp).

#include <gtest/gtest.h>

#include "kbuild/cache/usage.hpp"
#include "kbuild/usecase/cache_admin.hpp"
#include "kbuild/usecase/check_variants.hpp"
#include "kbuild/usecase/ci_workflow.hpp"
#include "kbuild/usecase/clean.hpp"
#include "kbuild/usecase/list_variants.hpp"
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

using CacheFixture = fakes::BuildFixture;

TEST_F(CacheFixture, StatsPruneVerifyAndClean) {
  ASSERT_TRUE(usecase::build(request(), services));
  auto stats = usecase::cache_stats({}, services);
  ASSERT_TRUE(stats) << stats.error().message;
  EXPECT_EQ(stats->directory, "/cache");
  EXPECT_EQ(stats->summary.counters.stores, 4u);
  EXPECT_GT(stats->usage.total_bytes(), 0u);
  EXPECT_FALSE(stats->remote);

  auto bad = usecase::cache_prune({"lots", false, true}, services);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ExitCode::usage);
  auto dry = usecase::cache_prune({"0", true, true}, services);
  ASSERT_TRUE(dry) << dry.error().message;
  EXPECT_FALSE(dry->report.removed.empty());
  EXPECT_EQ(usecase::cache_stats({}, services)->usage.total_bytes(), stats->usage.total_bytes());  // nothing removed

  fs.put("/cache/objects/ab/" + std::string(64, 'a'), "not what its name says");
  auto verified = usecase::cache_verify({}, services);
  ASSERT_TRUE(verified) << verified.error().message;
  EXPECT_EQ(verified->report.removed, 1u);

  // Clean, like prune, never takes what a running build uses: with one holding the cache, --no-wait
  // fails and removes nothing.
  usecase::CacheCleanRequest clean;
  clean.toolchains = true;
  clean.wait = false;
  {
    auto in_use = cache::hold_cache_in_use(fs, "/cache");
    ASSERT_TRUE(in_use);
    auto refused = usecase::cache_clean(clean, services);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().hint.find("--no-wait"), std::string::npos);
    EXPECT_TRUE(fs.stat("/cache/objects").exists);
  }
  ASSERT_TRUE(usecase::cache_clean(clean, services));
  EXPECT_FALSE(fs.stat("/cache/objects").exists);
}

using CheckFixture = fakes::BuildFixture;

TEST_F(CheckFixture, AVariantOlderThanItsSourcesIsAnErrorUnlessAllowed) {
  EXPECT_EQ(usecase::check_variants({"/k", "manylinux_2_28", false}, services).error().code, ExitCode::usage);
  ASSERT_TRUE(usecase::build(request(), services));
  EXPECT_EQ(usecase::check_variants({"/k", "manylinux_1", false}, services).error().code, ExitCode::usage);
  auto fresh = usecase::check_variants({"/k", "none", false}, services);
  ASSERT_TRUE(fresh) << fresh.error().message;
  ASSERT_EQ(fresh->variants.size(), 1u);
  auto stale_issues = [](const usecase::CheckOutcome& outcome) {
    size_t count = 0;
    for (const auto& issue : outcome.variants[0].issues)
      count += issue.message.starts_with("older than the sources") ? (issue.error ? 1 : 100) : 0;
    return count;
  };
  EXPECT_EQ(stale_issues(*fresh), 0u);
  fs.put("/k/relu_cpu/relu.cpp", "// edited");
  auto stale = usecase::check_variants({"/k", "none", false}, services);
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale_issues(*stale), 1u);  // an error
  EXPECT_GE(stale->errors, 1u);
  auto allowed = usecase::check_variants({"/k", "none", true}, services);
  ASSERT_TRUE(allowed);
  EXPECT_EQ(stale_issues(*allowed), 100u);  // a warning
}

using VariantsFixture = fakes::MatrixBuildFixture;

TEST_F(VariantsFixture, TheMatrixWithItsToolchainsOrWhatALocalBuildMakes) {
  auto matrix = usecase::list_variants({"/k", std::nullopt, {}, {}}, services);
  ASSERT_TRUE(matrix) << matrix.error().message;
  EXPECT_EQ(matrix->kernel, "relu");
  ASSERT_EQ(matrix->variants.size(), 2u);
  EXPECT_EQ(matrix->variants[0].variant.name(), "torch210-cxx11-cpu-x86_64-linux");
  EXPECT_TRUE(matrix->variants[0].toolchain_present);  // pinned and unpacked
  fs.remove_all("/cache/toolchains");
  auto cold = usecase::list_variants({"/k", std::nullopt, {}, {}}, services);
  ASSERT_TRUE(cold);
  EXPECT_FALSE(cold->variants[0].toolchain_present);

  auto local = usecase::list_variants({"/k", "python3", {}, {}}, services);
  ASSERT_TRUE(local) << local.error().message;
  ASSERT_EQ(local->variants.size(), 1u);  // no CUDA toolkit here: the CPU variant, the CUDA one left out
  EXPECT_EQ(local->variants[0].variant.name(), "torch211-cxx11-cpu-x86_64-linux");
  EXPECT_NE(local->origin.find("torch 2.11.0"), std::string::npos) << local->origin;

  plan::MatrixFilter filter;
  filter.torch = {"2.10"};
  EXPECT_EQ(usecase::list_variants({"/k", "python3", filter, {}}, services).error().code, ExitCode::usage);
  auto filtered = usecase::list_variants({"/k", std::nullopt, filter, {}}, services);
  ASSERT_TRUE(filtered);
  EXPECT_EQ(filtered->variants.size(), 1u);
}
