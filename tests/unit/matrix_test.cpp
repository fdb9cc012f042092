#include <gtest/gtest.h>

#include "kbuild/config/build_toml.hpp"
#include "kbuild/plan/matrix.hpp"
#include "kbuild/util/strings.hpp"

using namespace kbuild;
using namespace kbuild::plan;
using config::default_matrix;
using config::parse_kbuild_toml;

namespace {

config::KernelConfig kernel(const std::string& extra_torch = "", const std::string& extra_general = "") {
  std::string text =
      "[general]\nname = \"kk\"\nversion = 1\nedition = 5\nlicense = \"MIT\"\nbackends = [\"cpu\", \"cuda\"]\n" +
      extra_general + "\n[torch]\nsrc = [\"b.cpp\"]\n" + extra_torch +
      "\n[kernel.a]\nbackend = \"cuda\"\ndepends = []\nsrc = [\"a.cu\"]\n"
      "\n[kernel.c]\nbackend = \"cpu\"\ndepends = []\nsrc = [\"c.cpp\"]\n";
  auto outcome = config::parse_build_toml(text, "build.toml");
  EXPECT_TRUE(outcome.config) << config::format_diagnostics(outcome.diagnostics);
  return *outcome.config;
}

std::string names(const std::vector<MatrixEntry>& entries) {
  std::vector<std::string> out;
  for (const auto& e : entries) out.push_back(e.variant.name());
  return util::join(out, " ");
}

MatrixSpec spec(std::vector<util::Version> torch, std::vector<util::Version> cuda, bool cpu = true) {
  return {std::move(torch), std::move(cuda), cpu, "test"};
}

}  // namespace

TEST(Matrix, DefaultTableIsTheLastTwoTorchReleasesWithCuda13) {
  MatrixSpec d = default_matrix();
  ASSERT_EQ(d.torch.size(), 2u);
  EXPECT_EQ(d.torch[1].major_minor(), "2.15");
  EXPECT_EQ(d.cuda.front().major_minor(), "13.0");
  EXPECT_TRUE(d.cpu);
}

TEST(Matrix, ExpandsTorchTimesCudaAndCpuSortedByName) {
  auto entries = expand_matrix(kernel(), spec({util::Version({2, 15}), util::Version({2, 11})},
                                              {util::Version({13, 0}), util::Version({13, 2})}));
  EXPECT_EQ(names(entries),
            "torch211-cxx11-cpu-x86_64-linux torch211-cxx11-cu130-x86_64-linux torch211-cxx11-cu132-x86_64-linux "
            "torch215-cxx11-cpu-x86_64-linux torch215-cxx11-cu130-x86_64-linux torch215-cxx11-cu132-x86_64-linux");
  EXPECT_EQ(entries[2].cuda->major_minor(), "13.2");
  EXPECT_EQ(entries[2].torch.major_minor(), "2.11");
}

TEST(Matrix, BuildTomlBoundsFilter) {
  std::vector<std::string> notes;
  auto entries = expand_matrix(
      kernel("minver = \"2.12\"\n", "\n[general.cuda]\nmaxver = \"13.1\"\n"),
      spec({util::Version({2, 11}), util::Version({2, 15})}, {util::Version({13, 0}), util::Version({13, 2})}, false),
      &notes);
  EXPECT_EQ(names(entries), "torch215-cxx11-cu130-x86_64-linux");
  EXPECT_EQ(notes.size(), 2u);
}

TEST(Matrix, ComponentCudaMinverDropsOlderToolkits) {
  auto config = kernel();
  config.kernels[0].cuda_minver = util::Version({13, 2});
  auto entries =
      expand_matrix(config, spec({util::Version({2, 15})}, {util::Version({13, 0}), util::Version({13, 2})}, false));
  EXPECT_EQ(names(entries), "torch215-cxx11-cu132-x86_64-linux");
}

TEST(Matrix, BackendsWithoutComponentsAreNoarchOnce) {
  auto config = kernel();
  config.kernels.erase(config.kernels.begin());  // no CUDA component
  auto entries =
      expand_matrix(config, spec({util::Version({2, 11}), util::Version({2, 15})}, {util::Version({13, 0})}));
  EXPECT_EQ(names(entries), "torch-cuda torch211-cxx11-cpu-x86_64-linux torch215-cxx11-cpu-x86_64-linux");
}

TEST(Matrix, StableAbiBackendsBuildOncePerComputeWithTheNewestTorch) {
  auto entries = expand_matrix(kernel("stable-abi = \"2.11\"\n"),
                               spec({util::Version({2, 15}), util::Version({2, 11}), util::Version({2, 12})},
                                    {util::Version({13, 0}), util::Version({13, 2})}));
  EXPECT_EQ(names(entries),
            "torch-stable-abi211-cpu-x86_64-linux torch-stable-abi211-cu130-x86_64-linux "
            "torch-stable-abi211-cu132-x86_64-linux");
  for (const auto& entry : entries) EXPECT_EQ(entry.torch.major_minor(), "2.15") << entry.variant.name();
  // A table names the backends on the stable ABI; the others keep one variant per Torch.
  auto mixed = expand_matrix(kernel("\n[torch.stable-abi]\ncuda = \"2.10\"\n"),
                             spec({util::Version({2, 11}), util::Version({2, 15})}, {util::Version({13, 0})}));
  EXPECT_EQ(names(mixed),
            "torch-stable-abi210-cu130-x86_64-linux torch211-cxx11-cpu-x86_64-linux torch215-cxx11-cpu-x86_64-linux");
  // torch.maxver bounds the Torch it is compiled against.
  auto bounded = expand_matrix(kernel("stable-abi = \"2.11\"\nmaxver = \"2.12\"\n"),
                               spec({util::Version({2, 11}), util::Version({2, 15})}, {}));
  ASSERT_EQ(bounded.size(), 1u);
  EXPECT_EQ(bounded[0].torch.major_minor(), "2.11");
}

TEST(Matrix, AStableAbiNewerThanEveryTorchBuildsNothingAndSaysWhy) {
  std::vector<std::string> notes;
  auto entries =
      expand_matrix(kernel("stable-abi = \"2.16\"\n"),
                    spec({util::Version({2, 11}), util::Version({2, 15})}, {util::Version({13, 0})}), &notes);
  EXPECT_EQ(names(entries), "");
  ASSERT_EQ(notes.size(), 2u) << util::join(notes, "\n");
  EXPECT_NE(notes[0].find("the newest Torch of the matrix, 2.15, is less than the stable ABI version 2.16"),
            std::string::npos)
      << notes[0];
}

TEST(Matrix, FiltersAndSuggestions) {
  auto entries = expand_matrix(kernel(), spec({util::Version({2, 11}), util::Version({2, 15})},
                                              {util::Version({13, 0}), util::Version({13, 2})}));
  EXPECT_EQ(names(*filter_matrix(entries, {{}, {"2.15"}, {"cpu"}})), "torch215-cxx11-cpu-x86_64-linux");
  EXPECT_EQ(filter_matrix(entries, {{}, {}, {"13.2"}})->size(), 2u);
  EXPECT_EQ(names(*filter_matrix(entries, {{"torch211-cxx11-cu130-x86_64-linux"}, {}, {}})),
            "torch211-cxx11-cu130-x86_64-linux");
  auto unknown = filter_matrix(entries, {{"torch211-cxx11-cu13-x86_64-linux"}, {}, {}});
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().hint.find("did you mean torch211-cxx11-cu130-x86_64-linux"), std::string::npos);
  EXPECT_FALSE(filter_matrix(entries, {{}, {"2.9"}, {}}));
}

TEST(KbuildToml, ParsesTheMatrix) {
  auto outcome =
      parse_kbuild_toml("[matrix]\ntorch = [\"2.11\", \"2.15\"]\ncuda = [\"13.0\"]\ncpu = false\n", "kbuild.toml");
  ASSERT_TRUE(outcome.matrix);
  EXPECT_TRUE(outcome.diagnostics.empty());
  EXPECT_EQ(outcome.matrix->torch.size(), 2u);
  EXPECT_FALSE(outcome.matrix->cpu);
  EXPECT_EQ(outcome.matrix->origin, "kbuild.toml");
}

TEST(KbuildToml, ReportsEveryProblem) {
  auto outcome =
      parse_kbuild_toml("[matrix]\ntorch = [\"2\", \"2.15\"]\ncuda = \"13.0\"\ncpus = true\n[other]\n", "kbuild.toml");
  std::string text = config::format_diagnostics(outcome.diagnostics);
  EXPECT_NE(text.find("kbuild.toml:2:10: error: matrix.torch: expected a \"major.minor\" version"), std::string::npos)
      << text;
  EXPECT_NE(text.find("kbuild.toml:3:8: error: matrix.cuda must be an array"), std::string::npos) << text;
  EXPECT_NE(text.find("unknown key \"cpus\" in [matrix]"), std::string::npos) << text;
  EXPECT_NE(text.find("did you mean \"cpu\"?"), std::string::npos) << text;
  EXPECT_NE(text.find("unknown table \"other\""), std::string::npos) << text;
}
