// Settings chosen the same way by every command (config/user_config.hpp), the CUDA capabilities a
// local build compiles (plan/cuda_archs.hpp, toolchain/gpu.hpp), and the whole-cache accounting and
// pruning (cache/usage.hpp).

#include <gtest/gtest.h>

#include "kbuild/cache/usage.hpp"
#include "kbuild/config/user_config.hpp"
#include "kbuild/plan/cuda_archs.hpp"
#include "kbuild/toolchain/gpu.hpp"
#include "kbuild/usecase/doctor.hpp"
#include "support/services_fixture.hpp"

using namespace kbuild;

TEST(UserConfig, OptionThenEnvironmentThenFileThenDefault) {
  fakes::MemFileSystem fs;
  util::MapEnvironment env{{{"HOME", "/home/u"}}};
  EXPECT_EQ(config::user_config_path(env), "/home/u/.config/kbuild/config.toml");
  EXPECT_EQ(config::choose_python("", fs, env)->value, "python3");
  EXPECT_EQ(config::choose_python("", fs, env)->source, "default");
  fs.put("/home/u/.config/kbuild/config.toml", "python = \"/opt/t/bin/python\"\ncuda-archs = \"9.0\"\n");
  EXPECT_EQ(config::choose_python("", fs, env)->value, "/opt/t/bin/python");
  EXPECT_EQ(config::choose_cuda_archs("", "native", fs, env)->value, "9.0");
  env.values["KBUILD_PYTHON"] = "/env/python";
  env.values["KBUILD_CUDA_ARCHS"] = "all";
  EXPECT_EQ(config::choose_python("", fs, env)->value, "/env/python");
  EXPECT_EQ(config::choose_cuda_archs("", "native", fs, env)->value, "all");
  EXPECT_EQ(config::choose_python("/opt/py", fs, env)->value, "/opt/py");
  EXPECT_EQ(config::choose_python("/opt/py", fs, env)->source, "--python");
  // XDG_CONFIG_HOME moves the file.
  env.values = {{"HOME", "/home/u"}, {"XDG_CONFIG_HOME", "/xdg"}};
  EXPECT_EQ(config::choose_python("", fs, env)->value, "python3");
  fs.put("/xdg/kbuild/config.toml", "python = \"/xdg/python\"\n");
  EXPECT_EQ(config::choose_python("", fs, env)->value, "/xdg/python");
}

TEST(UserConfig, TheTorchIndexIsAUrlTemplateOrPypi) {
  fakes::MemFileSystem fs;
  util::MapEnvironment env{{{"HOME", "/home/u"}}};
  EXPECT_EQ(config::choose_torch_index("", fs, env)->value, "https://download.pytorch.org/whl/{compute}");
  fs.put("/home/u/.config/kbuild/config.toml", "torch-index = \"pypi\"\n");
  EXPECT_EQ(config::choose_torch_index("", fs, env)->value, "pypi");
  env.values["KBUILD_TORCH_INDEX"] = "http://mirror.internal/torch/{compute}/";
  EXPECT_EQ(config::choose_torch_index("", fs, env)->value, "http://mirror.internal/torch/{compute}/");
  auto bad = config::choose_torch_index("download.pytorch.org", fs, env);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ExitCode::usage);
  EXPECT_NE(bad.error().message.find("--torch-index"), std::string::npos) << bad.error().message;
}

TEST(UserConfig, EveryProblemIsReportedWithItsLocation) {
  auto outcome = config::parse_user_config("pyhton = \"x\"\ncuda-archs = 9\n", "/c/config.toml");
  ASSERT_EQ(outcome.diagnostics.size(), 2u);
  EXPECT_EQ(config::format_diagnostic(outcome.diagnostics[0]),
            "/c/config.toml:1:1: error: unknown key \"pyhton\" in the kbuild user config\n"
            "  hint: did you mean \"python\"?\n");
  EXPECT_NE(config::format_diagnostic(outcome.diagnostics[1]).find("/c/config.toml:2:14: error: cuda-archs must be"),
            std::string::npos)
      << config::format_diagnostic(outcome.diagnostics[1]);
  fakes::MemFileSystem fs;
  fs.put("/h/.config/kbuild/config.toml", "python = [\n");
  util::MapEnvironment env{{{"HOME", "/h"}}};
  auto refused = config::choose_python("", fs, env);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ExitCode::usage);
  EXPECT_NE(refused.error().message.find("/h/.config/kbuild/config.toml:"), std::string::npos);
  EXPECT_EQ(config::choose_python("/explicit", fs, env)->value, "/explicit");  // not read when not needed
}

TEST(CudaArchs, ListsParseAndRestrictWhatIsDeclared) {
  EXPECT_EQ(*plan::parse_arch_list("8.0,9.0"), (std::vector<std::string>{"8.0", "9.0"}));
  EXPECT_EQ(*plan::parse_arch_list("9.0;10.0 12.0a"), (std::vector<std::string>{"9.0", "10.0", "12.0a"}));
  for (const char* bad : {"", "9", "sm_90", "9.0+PTX", "native", "9.0,,x"})
    EXPECT_FALSE(plan::parse_arch_list(bad)) << bad;
  std::vector<std::string> declared = {"7.5", "8.0", "9.0", "12.1+PTX"};
  EXPECT_EQ(plan::restrict_archs(declared, {"9.0"}), std::vector<std::string>{"9.0"});
  EXPECT_EQ(plan::restrict_archs(declared, {"12.1", "8.0"}), (std::vector<std::string>{"8.0", "12.1+PTX"}));
  EXPECT_TRUE(plan::restrict_archs(declared, {"8.6"}).empty());
}

TEST(Gpus, AskedOnlyWhenTheDriverListsOneAndRemembered) {
  fakes::MemFileSystem fs;
  fakes::FakeLauncher launcher;
  launcher.answers["nvidia-smi --query-gpu=compute_cap --format=csv,noheader"] = {0, "9.0\n9.0\n", ""};
  // No driver directory: no GPU, and nvidia-smi is not run.
  EXPECT_TRUE(toolchain::detect_gpu_capabilities(launcher, fs, "/k/.kbuild/gpus", "/proc/gpus").empty());
  EXPECT_TRUE(launcher.ran.empty());
  ASSERT_TRUE(fs.make_dirs("/proc/gpus/0000:19:00.0"));
  ASSERT_TRUE(fs.make_dirs("/proc/gpus/0000:3b:00.0"));
  EXPECT_EQ(toolchain::detect_gpu_capabilities(launcher, fs, "/k/.kbuild/gpus", "/proc/gpus"),
            std::vector<std::string>{"9.0"});
  EXPECT_EQ(launcher.ran.size(), 1u);
  EXPECT_EQ(toolchain::detect_gpu_capabilities(launcher, fs, "/k/.kbuild/gpus", "/proc/gpus"),
            std::vector<std::string>{"9.0"});
  EXPECT_EQ(launcher.ran.size(), 1u);  // remembered for this set of GPUs
  ASSERT_TRUE(fs.make_dirs("/proc/gpus/0000:5d:00.0"));
  launcher.answers["nvidia-smi --query-gpu=compute_cap --format=csv,noheader"] = {0, "9.0\n8.0\n9.0\n", ""};
  EXPECT_EQ(toolchain::detect_gpu_capabilities(launcher, fs, "/k/.kbuild/gpus", "/proc/gpus"),
            (std::vector<std::string>{"8.0", "9.0"}));
  EXPECT_EQ(launcher.ran.size(), 2u);
}

TEST(CacheUsage, EveryPartIsCountedAndPruningGoesLeastRecentlyUsedFirst) {
  fakes::MemFileSystem fs;
  fs.put("/c/objects/ab/abcd", std::string(100, 'o'));
  fs.put("/c/manifests/ab/abcd", std::string(10, 'm'));
  fs.put("/c/toolchains/torch-2.11.0-x/.complete", "");
  fs.put("/c/toolchains/torch-2.11.0-x/lib/libtorch.so", std::string(1000, 't'));
  fs.put("/c/toolchains/torch-2.15.0-y/lib/libtorch.so", std::string(2000, 't'));  // no .complete: in progress
  fs.put("/c/downloads/" + std::string(64, 'a') + "/torch.whl", std::string(500, 'w'));
  fs.put("/c/test-envs/torch-2.15.0-py3.11-k/.complete", "");
  fs.put("/c/test-envs/torch-2.15.0-py3.11-k/lib/torch.so", std::string(3000, 'e'));
  fs.put("/c/stats", "{}");
  auto usage = cache::cache_usage(fs, "/c");
  ASSERT_TRUE(usage);
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> parts;
  for (const auto& part : usage->parts) parts[part.name] = {part.entries, part.bytes};
  EXPECT_EQ(parts["objects"], std::make_pair(std::uint64_t{1}, std::uint64_t{100}));
  EXPECT_EQ(parts["manifests"], std::make_pair(std::uint64_t{1}, std::uint64_t{10}));
  EXPECT_EQ(parts["toolchains"], std::make_pair(std::uint64_t{2}, std::uint64_t{3000}));
  EXPECT_EQ(parts["downloads"], std::make_pair(std::uint64_t{1}, std::uint64_t{500}));
  EXPECT_EQ(parts["test-envs"], std::make_pair(std::uint64_t{1}, std::uint64_t{3000}));
  EXPECT_EQ(parts["other"].second, 2u);
  EXPECT_EQ(usage->total_bytes(), 6612u);

  // Last used: the test environment first, then the download, the object... (the fs clock ticks per write)
  fs.touch("/c/downloads/" + std::string(64, 'a') + "/torch.whl");
  fs.touch("/c/objects/ab/abcd");
  fs.touch("/c/manifests/ab/abcd");
  fs.touch("/c/toolchains/torch-2.11.0-x/.complete");
  auto dry = cache::prune_cache(fs, "/c", 3200, true);
  ASSERT_TRUE(dry);
  ASSERT_EQ(dry->removed.size(), 2u);
  EXPECT_EQ(dry->removed[0].part, "test-envs");
  EXPECT_EQ(dry->removed[1].part, "downloads");
  EXPECT_TRUE(fs.has("/c/test-envs/torch-2.15.0-py3.11-k/.complete"));  // a dry run removes nothing
  auto pruned = cache::prune_cache(fs, "/c", 3200, false);
  ASSERT_TRUE(pruned);
  EXPECT_EQ(pruned->freed, 3500u);
  EXPECT_FALSE(fs.has("/c/test-envs/torch-2.15.0-py3.11-k/.complete"));
  // The toolchain in progress is never removed here, whatever the target.
  ASSERT_TRUE(cache::prune_cache(fs, "/c", 0, false));
  EXPECT_TRUE(fs.has("/c/toolchains/torch-2.15.0-y/lib/libtorch.so"));
  EXPECT_FALSE(fs.has("/c/toolchains/torch-2.11.0-x/lib/libtorch.so"));
}

using Doctor = fakes::ServicesFixture;

TEST_F(Doctor, ReportsWhatItFindsAndWhatToDo) {
  env.values["KBUILD_PYTHON"] = "/py/bin/python3";
  launcher.programs = {{"g++", "/usr/bin/g++"}, {"git", "/usr/bin/git"}};
  launcher.prefix_answers.push_back(
      {"/py/bin/python3 -c ", {0, R"({"version": "3.11", "include": "/py/include/python3.11", "torch": null})", ""}});
  launcher.answers["/usr/bin/g++ -dumpfullversion"] = {0, "12.2.0\n", ""};
  launcher.answers["/usr/bin/g++ -dumpmachine"] = {0, "x86_64-linux-gnu\n", ""};
  fs.put("/py/include/python3.11/Python.h", "");
  fs.put("/cache/objects/ab/abcd", std::string(2000, 'o'));
  auto findings = usecase::doctor({}, services);
  ASSERT_TRUE(findings) << findings.error().message;
  std::map<std::string, usecase::Finding> by_what;
  for (const auto& f : *findings) by_what[f.what] = f;
  EXPECT_EQ(by_what["python"].status, usecase::Finding::Status::ok);
  EXPECT_NE(by_what["python"].detail.find("(KBUILD_PYTHON)"), std::string::npos) << by_what["python"].detail;
  EXPECT_EQ(by_what["torch"].status, usecase::Finding::Status::missing);
  EXPECT_NE(by_what["torch"].hint.find("pip install torch"), std::string::npos);
  EXPECT_EQ(by_what["nvcc"].status, usecase::Finding::Status::warning);  // none on this fake machine
  EXPECT_EQ(by_what["host compiler"].detail, "/usr/bin/g++ 12.2.0 (x86_64-linux-gnu)");
  EXPECT_EQ(by_what["gpu"].status, usecase::Finding::Status::warning);
  EXPECT_EQ(by_what["git"].status, usecase::Finding::Status::ok);
  EXPECT_EQ(by_what["cache"].detail, "/cache, 2.0 kB (kbuild cache stats)");
  // A broken user config is the one thing doctor cannot go past: it says where.
  fs.put("/home/u/.config/kbuild/config.toml", "python = 3\n");
  auto broken = usecase::doctor({"/explicit/python"}, services);
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.error().message.find("/home/u/.config/kbuild/config.toml:1:10"), std::string::npos)
      << broken.error().message;
}
