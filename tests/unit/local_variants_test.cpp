// What a plain `kbuild build` builds with the local toolchain (usecase/local_variants.hpp): pure.

#include <gtest/gtest.h>

#include "kbuild/config/build_toml.hpp"
#include "kbuild/usecase/local_variants.hpp"

using namespace kbuild;

namespace {

config::KernelConfig kernel(const std::string& torch_extra) {
  std::string text =
      "[general]\nname = \"kk\"\nversion = 1\nedition = 5\nlicense = \"MIT\"\nbackends = [\"cpu\"]\n"
      "\n[torch]\nsrc = [\"b.cpp\"]\n" +
      torch_extra + "\n[kernel.c]\nbackend = \"cpu\"\ndepends = []\nsrc = [\"c.cpp\"]\n";
  auto outcome = config::parse_build_toml(text, "build.toml");
  EXPECT_TRUE(outcome.config) << config::format_diagnostics(outcome.diagnostics);
  return *outcome.config;
}

toolchain::Toolchain torch_2_11() {
  toolchain::Toolchain tc;
  tc.torch.version = util::Version({2, 11, 0});
  tc.cxx.machine = "x86_64-linux-gnu";
  return tc;
}

}  // namespace

TEST(LocalVariants, AStableAbiBackendBuildsItsStableVariantWithTheLocalTorch) {
  auto tc = torch_2_11();
  auto builds = usecase::select_local_variants(kernel("stable-abi = \"2.10\"\n"), tc, {}, [](const std::string&) {});
  ASSERT_TRUE(builds) << builds.error().message;
  ASSERT_EQ(builds->size(), 1u);
  EXPECT_EQ(builds->front().variant.name(), "torch-stable-abi210-cpu-x86_64-linux");
  EXPECT_EQ(builds->front().toolchain, &tc);
  auto plain = usecase::select_local_variants(kernel(""), tc, {}, [](const std::string&) {});
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->front().variant.name(), "torch211-cxx11-cpu-x86_64-linux");
}

TEST(LocalVariants, ATorchOlderThanTheStableAbiIsKernelBuildersVerdict) {
  auto tc = torch_2_11();
  auto refused = usecase::select_local_variants(kernel("stable-abi = \"2.12\"\n"), tc, {}, [](const std::string&) {});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ExitCode::toolchain);
  EXPECT_NE(refused.error().message.find("Torch 2.11.0 is less than the stable ABI version 2.12"), std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().hint.find("--python"), std::string::npos);
}

TEST(LocalVariants, ATvmFfiKernelNeedsNoTorchAndSkipsBackendsWithoutComponents) {
  auto outcome = config::parse_build_toml(
      "[general]\nname = \"kk\"\nversion = 1\nedition = 5\nlicense = \"MIT\"\nbackends = [\"cpu\", \"cuda\"]\n"
      "\n[tvm-ffi]\nsrc = [\"b.cpp\"]\n\n[kernel.c]\nbackend = \"cpu\"\ndepends = []\nsrc = [\"c.cpp\"]\n",
      "build.toml");
  ASSERT_TRUE(outcome.config) << config::format_diagnostics(outcome.diagnostics);
  toolchain::Toolchain no_torch;  // a probe without Torch
  no_torch.cxx.machine = "x86_64-linux-gnu";
  no_torch.cuda = toolchain::CudaToolkit{};
  no_torch.cuda->version = util::Version({13, 0, 88});
  std::vector<std::string> warnings;
  auto builds = usecase::select_local_variants(*outcome.config, no_torch, {},
                                               [&](const std::string& w) { warnings.push_back(w); });
  ASSERT_TRUE(builds) << builds.error().message;
  ASSERT_EQ(builds->size(), 1u);
  EXPECT_EQ(builds->front().variant.name(), "tvm-ffi01-cpu-x86_64-linux");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("no component for the cuda backend"), std::string::npos) << warnings[0];
}

TEST(LocalVariants, GeneralCudaBoundsApplyToTheLocalToolkitAsToTheMatrix) {
  auto build_toml = [](const std::string& bounds) {
    auto outcome = config::parse_build_toml(
        "[general]\nname = \"kk\"\nversion = 1\nedition = 5\nlicense = \"MIT\"\nbackends = [\"cpu\", \"cuda\"]\n\n"
        "[general.cuda]\n" +
            bounds +
            "\n[torch]\nsrc = [\"b.cpp\"]\n\n[kernel.c]\nbackend = \"cpu\"\ndepends = []\nsrc = [\"c.cpp\"]\n\n"
            "[kernel.g]\nbackend = \"cuda\"\ndepends = []\nsrc = [\"g.cu\"]\n",
        "build.toml");
    EXPECT_TRUE(outcome.config) << config::format_diagnostics(outcome.diagnostics);
    return *outcome.config;
  };
  auto tc = torch_2_11();
  tc.torch.cuda = util::Version({13, 0});
  tc.cuda = toolchain::CudaToolkit{
      util::Version({13, 0, 88}), "/cuda", "/cuda/bin/nvcc", "/cuda/include", "/cuda/lib64", "system"};
  std::vector<std::string> warnings;
  auto warn = [&](const std::string& w) { warnings.push_back(w); };
  // maxver 12.9: the cuda backend is skipped (the cpu variant remains), as kernel-builder does.
  auto skipped = usecase::select_local_variants(build_toml("maxver = \"12.9\""), tc, {}, warn);
  ASSERT_TRUE(skipped) << skipped.error().message;
  ASSERT_EQ(skipped->size(), 1u);
  EXPECT_EQ(skipped->front().variant.name(), "torch211-cxx11-cpu-x86_64-linux");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "the CUDA toolkit here is CUDA 13.0, above general.cuda.maxver 12.9: skipping the cuda backend, as "
            "kernel-builder does");
  // Asked for by --backend cuda, it is an error; minver likewise.
  auto refused = usecase::select_local_variants(build_toml("minver = \"13.1\""), tc, {"cuda"}, warn);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ExitCode::toolchain);
  EXPECT_NE(refused.error().message.find("below general.cuda.minver 13.1"), std::string::npos);
  // Within the bounds, both variants.
  auto within = usecase::select_local_variants(build_toml("minver = \"12.0\"\nmaxver = \"13.0\""), tc, {}, warn);
  ASSERT_TRUE(within);
  EXPECT_EQ(within->size(), 2u);
}

TEST(LocalVariants, AnUnknownVariantNameIsAnsweredWithEveryNameByWhereItComesFrom) {
  const usecase::VariantNameGroups known = {{"built in build/", {"torch211-cxx11-cpu-x86_64-linux"}},
                                            {"a local build here", {}},
                                            {"the matrix", {"torch214-cxx11-cpu-x86_64-linux"}}};
  EXPECT_FALSE(usecase::unknown_variant_error({"torch214-cxx11-cpu-x86_64-linux"}, known));
  auto typo = usecase::unknown_variant_error({"torch211-cxx11-cpu-x86_64-linx"}, known);
  ASSERT_TRUE(typo);
  EXPECT_EQ(typo->code, ExitCode::usage);
  EXPECT_EQ(typo->message, "unknown variant \"torch211-cxx11-cpu-x86_64-linx\"");
  EXPECT_EQ(typo->hint,
            "did you mean torch211-cxx11-cpu-x86_64-linux? built in build/: torch211-cxx11-cpu-x86_64-linux; the "
            "matrix: torch214-cxx11-cpu-x86_64-linux");  // the built one, not only the matrix's
  auto none = usecase::unknown_variant_error({"x"}, {});
  ASSERT_TRUE(none);
  EXPECT_EQ(none->hint, "this kernel has no variant here");
}
