// `kbuild test` (usecase/test_variants.hpp) through fakes: which Python serves each variant, the test
// environments it creates (and reuses), what the tests are told, and how results are read.

#include <gtest/gtest.h>
#include <unistd.h>

#include "kbuild/toolchain/lock.hpp"
#include "kbuild/usecase/test_variants.hpp"
#include "kbuild/util/hash.hpp"
#include "kbuild/util/strings.hpp"
#include "support/services_fixture.hpp"

using namespace kbuild;

namespace {

const std::string k_cpu211 = "torch211-cxx11-cpu-x86_64-linux";
const std::string k_cpu215 = "torch215-cxx11-cpu-x86_64-linux";
const std::string k_cu132 = "torch211-cxx11-cu132-x86_64-linux";

std::string junit(int tests, int failures, int skipped) {
  return "<?xml version=\"1.0\"?><testsuites><testsuite name=\"pytest\" errors=\"0\" failures=\"" +
         std::to_string(failures) + "\" skipped=\"" + std::to_string(skipped) + "\" tests=\"" + std::to_string(tests) +
         "\" time=\"1.0\"></testsuite></testsuites>";
}

// What the probe prints for a Python: the --python one has Torch 2.11 for CUDA 13.0; a test environment
// ("/cache/test-envs/torch-<version>-<build>-py3.11-<key>/bin/python") the build its name says, PyPI's
// build of 2.15 being for CUDA 13.2.
std::string probe_answer(const std::string& python) {
  const std::string prefix = "/cache/test-envs/torch-";
  if (!python.starts_with(prefix)) return "2.11.0+cu130 13.0 3.11 - 0\n";
  auto fields = util::split(python.substr(prefix.size()), '-');
  std::string version = fields[0].size() == 4 ? fields[0] + ".0" : fields[0];
  std::string build = fields[1] == "pypi" ? "cu132" : fields[1];
  std::string cuda = build == "cpu" ? "-" : build.substr(2, 2) + "." + build.substr(4);
  return version + "+" + build + " " + cuda + " 3.11 - 0\n";
}

struct TestVariantsFixture : fakes::ServicesFixture {
  std::vector<std::map<std::string, std::string>> pytest_envs;  // the environment of each pytest run
  std::vector<std::map<std::string, std::string>> load_envs;    // ... and of each load check
  int pytest_exit = 0;
  int load_exit = 0;

  void SetUp() override {
    fs.put("/k/build.toml",
           "[general]\nname = \"relu\"\nversion = 1\nedition = 5\nlicense = \"apache-2.0\"\nbackends = [\"cpu\"]\n\n"
           "[general.hub]\nrepo-id = \"org/relu\"\n\n[torch]\nsrc = [\"torch-ext/torch_binding.cpp\"]\n\n"
           "[kernel.relu_cpu]\nbackend = \"cpu\"\ndepends = [\"torch\"]\nsrc = [\"relu_cpu/relu.cpp\"]\n");
    fs.put("/k/torch-ext/torch_binding.cpp", "// binding");
    fs.put("/k/torch-ext/relu/__init__.py", "");
    fs.put("/k/relu_cpu/relu.cpp", "// cpu");
    fs.put("/k/tests/test_relu.py", "def test(): pass\n");
    fs.put("/k/tests/requirements.txt", "torchvision\n");
    for (const auto& variant : {k_cpu211, k_cpu215, k_cu132}) fs.put("/k/build/" + variant + "/metadata.json", "{}");
    toolchain::LockFile lock;
    lock.toolchains["torch-2.15"] = {
        {"torch", "2.15.0", "torch-2.15.0-cp312-manylinux_2_28_x86_64.whl", std::string(64, 'a')}};
    fs.put("/k/kbuild.lock", lock.serialize());
    launcher.handler = [this](const std::vector<std::string>& argv,
                              const util::ProcessOptions& options) -> std::optional<util::ProcessResult> {
      if (argv.size() > 2 && argv[1] == "-c" && argv[2].find("add_op_namespace_prefix") != std::string::npos) {
        load_envs.push_back(options.env);
        return util::ProcessResult{
            load_exit, load_exit ? "import relu failed: OSError: libcudart.so.13\n" : "_relu_cuda_src1 relu relu_out\n",
            ""};
      }
      if (argv.size() > 1 && argv[1] == "-c") return util::ProcessResult{0, probe_answer(argv.front()), ""};
      if (argv.size() > 2 && argv[1] == "-m" && argv[2] == "venv") return util::ProcessResult{0, "", ""};
      if (argv.size() > 2 && argv[1] == "-m" && argv[2] == "pip") return util::ProcessResult{0, "", ""};
      if (argv.size() > 2 && argv[1] == "-m" && argv[2] == "pytest") {
        pytest_envs.push_back(options.env);
        for (const auto& arg : argv)
          if (arg.starts_with("--junitxml=")) fs.put(arg.substr(11), junit(10, pytest_exit == 1 ? 2 : 0, 3));
        return util::ProcessResult{pytest_exit, pytest_exit ? "FAILED tests/test_relu.py::test\n" : "10 passed\n", ""};
      }
      return std::nullopt;
    };
  }
  usecase::TestRequest request() const {
    usecase::TestRequest r;
    r.kernel_dir = "/k";
    r.create_env = true;
    return r;
  }
  size_t ran_containing(const std::string& part) const {
    size_t n = 0;
    for (const auto& line : launcher.ran) n += line.find(part) != std::string::npos;
    return n;
  }
};

}  // namespace

TEST(TestVariants, JunitCountsAreSummedOverSuites) {
  auto counts = usecase::parse_junit_counts(junit(10, 2, 3) + junit(5, 0, 1));
  EXPECT_EQ(counts.tests, 15);
  EXPECT_EQ(counts.failures, 2);
  EXPECT_EQ(counts.skipped, 4);
  EXPECT_EQ(usecase::parse_junit_counts("not xml").tests, 0);
}

TEST_F(TestVariantsFixture, EachVariantRunsWithItsOwnTorch) {
  auto results = usecase::test_variants(request(), services);
  ASSERT_TRUE(results) << results.error().message;
  ASSERT_EQ(results->size(), 3u);
  const auto& cpu211 = (*results)[0];
  const auto& cu132 = (*results)[1];
  const auto& cpu215 = (*results)[2];
  EXPECT_EQ(cpu211.variant, k_cpu211);
  EXPECT_EQ(cpu211.status, usecase::VariantTestResult::Status::passed);
  EXPECT_EQ(cpu211.python, "python3");  // the --python interpreter has Torch 2.11
  EXPECT_EQ(cpu211.tests, 10);
  EXPECT_EQ(cpu211.skipped, 3);
  // Torch 2.11 here is built for CUDA 13.0: the CUDA 13.2 variant gets Torch 2.11 built for CUDA 13.2
  // from PyTorch's cu132 index (no pin: the newest 2.11), which then finds no GPU here.
  EXPECT_EQ(cu132.status, usecase::VariantTestResult::Status::not_tested);
  EXPECT_EQ(cu132.torch, "2.11.0+cu132");
  EXPECT_EQ(cu132.reason, "no GPU here (torch.cuda.is_available() is False): its CUDA kernels cannot run");
  EXPECT_EQ(ran_containing(" -m pip install --disable-pip-version-check --index-url "
                           "https://download.pytorch.org/whl/cu132 torch==2.11.* -q"),
            1u);
  // Torch 2.15 comes from a test environment with the version pinned in kbuild.lock, the CPU build.
  EXPECT_EQ(cpu215.status, usecase::VariantTestResult::Status::passed);
  EXPECT_TRUE(cpu215.python.string().starts_with("/cache/test-envs/torch-2.15.0-cpu-py3.11-")) << cpu215.python;
  EXPECT_EQ(cpu215.torch, "2.15.0+cpu");
  EXPECT_EQ(ran_containing("python3 -m venv /cache/test-envs/."), 2u);
  EXPECT_EQ(ran_containing(" -m pip install --disable-pip-version-check --index-url "
                           "https://download.pytorch.org/whl/cpu torch==2.15.0 -q"),
            1u);
  // kernels, pytest and the tests' requirements from pip's own indexes, once per environment.
  EXPECT_EQ(ran_containing(" -m pip install --disable-pip-version-check kernels pytest -q -r "
                           "/k/tests/requirements.txt"),
            2u);
  EXPECT_TRUE(fs.has(cpu215.python.parent_path().parent_path().string() + "/.complete"));
  // The tests are told which variant they test.
  ASSERT_EQ(pytest_envs.size(), 2u);
  EXPECT_EQ(pytest_envs[1].at("KBUILD_TEST_VARIANT"), k_cpu215);
  EXPECT_EQ(pytest_envs[1].at("KBUILD_TEST_VARIANT_DIR"), "/k/build/" + k_cpu215);
  EXPECT_EQ(pytest_envs[1].at("KBUILD_TEST_BACKEND"), "cpu");
  // As kernel-builder's testshell: get_kernel("org/relu") loads the variant under test, `import relu`
  // finds it, and nothing goes to the network.
  EXPECT_EQ(pytest_envs[1].at("LOCAL_KERNELS"), "org/relu=/k/build/" + k_cpu215);
  EXPECT_EQ(pytest_envs[1].at("HF_HUB_OFFLINE"), "1");
  auto pythonpath = util::split(pytest_envs[1].at("PYTHONPATH"), ':');
  ASSERT_EQ(pythonpath.size(), 2u);
  EXPECT_TRUE(pythonpath[0].starts_with("/cache/tmp/.pythonpath-" + k_cpu215)) << pythonpath[0];
  EXPECT_FALSE(fs.has(pythonpath[0]));  // removed after the run
  EXPECT_EQ(pythonpath[1], "/k/build/" + k_cpu215);

  // The environment is kept: a second run creates nothing.
  launcher.ran.clear();
  auto again = usecase::test_variants(request(), services);
  ASSERT_TRUE(again);
  EXPECT_EQ(ran_containing(" -m venv "), 0u);
  EXPECT_EQ(ran_containing(" -m pip "), 0u);
}

TEST_F(TestVariantsFixture, FailuresAreResultsAndBadRequestsAreErrors) {
  auto only = request();
  only.variants = {k_cpu211};
  pytest_exit = 1;
  auto failed = usecase::test_variants(only, services);
  ASSERT_TRUE(failed);
  ASSERT_EQ(failed->size(), 1u);
  EXPECT_EQ(failed->front().status, usecase::VariantTestResult::Status::failed);
  EXPECT_EQ(failed->front().failures, 2);
  EXPECT_NE(failed->front().output.find("FAILED tests/test_relu.py::test"), std::string::npos);
  pytest_exit = 5;
  EXPECT_EQ(usecase::test_variants(only, services)->front().reason, "pytest collected no tests");

  auto unknown = request();
  unknown.variants = {"torch299-cxx11-cpu-x86_64-linux"};
  auto refused = usecase::test_variants(unknown, services);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ExitCode::usage);
  EXPECT_NE(refused.error().hint.find(k_cpu211), std::string::npos);

  // pip cannot reach the index: a toolchain error naming the setting, and no half environment is kept.
  std::string pip_says =
      "WARNING: Retrying after connection broken by 'NewConnectionError'\n"
      "ERROR: No matching distribution found for torch==2.15.0";
  launcher.handler = [inner = launcher.handler, &pip_says](
                         const std::vector<std::string>& argv,
                         const util::ProcessOptions& options) -> std::optional<util::ProcessResult> {
    if (argv.size() > 2 && argv[2] == "pip") return util::ProcessResult{1, "", pip_says};
    return inner(argv, options);
  };
  auto pip_failed = usecase::test_variants(request(), services);
  ASSERT_FALSE(pip_failed);
  EXPECT_EQ(pip_failed.error().code, ExitCode::toolchain);
  EXPECT_NE(pip_failed.error().message.find("NewConnectionError"), std::string::npos);
  EXPECT_NE(pip_failed.error().hint.find("--torch-index"), std::string::npos);
  auto envs = fs.list_dir("/cache/test-envs");
  EXPECT_TRUE(!envs || envs->empty());
  // The index has no such build: the variant is not tested, with that reason, and nothing is kept.
  pip_says = "ERROR: No matching distribution found for torch==2.15.0";
  auto missing = usecase::test_variants(request(), services);
  ASSERT_TRUE(missing) << missing.error().message;
  EXPECT_EQ(missing->back().variant, k_cpu215);
  EXPECT_EQ(missing->back().status, usecase::VariantTestResult::Status::not_tested);
  EXPECT_EQ(missing->back().reason, "no Torch 2.15.0 (cpu) at https://download.pytorch.org/whl/cpu");
  envs = fs.list_dir("/cache/test-envs");
  EXPECT_TRUE(!envs || envs->empty());

  fs.remove_all("/k/tests");
  EXPECT_EQ(usecase::test_variants(request(), services).error().code, ExitCode::usage);
}

TEST_F(TestVariantsFixture, ThePinnedWheelKbuildDownloadedIsInstalledWhenItFitsThePython) {
  std::string wheel = "torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl";
  std::string sha = util::sha256_hex("wheel bytes");
  toolchain::LockFile lock;
  lock.toolchains["torch-2.15"] = {{"torch", "2.15.0", wheel, sha}};
  fs.put("/k/kbuild.lock", lock.serialize());
  fs.put("/cache/downloads/" + sha + "/" + wheel, "wheel bytes");
  auto only = request();
  only.variants = {k_cpu215};
  only.torch_index = "pypi";  // PyPI's own builds: the pin is one
  auto results = usecase::test_variants(only, services);
  ASSERT_TRUE(results);
  EXPECT_EQ(ran_containing(" -m pip install --disable-pip-version-check /cache/downloads/" + sha + "/" + wheel), 1u);
  EXPECT_EQ(results->front().torch, "2.15.0+cu132");  // a CUDA build serves a CPU variant too
  EXPECT_EQ(results->front().status, usecase::VariantTestResult::Status::passed);

  // A download that no longer matches its pin is not used: pip gets the version instead.
  fs.remove_all("/cache/test-envs");
  fs.put("/cache/downloads/" + sha + "/" + wheel, "tampered");
  launcher.ran.clear();
  ASSERT_TRUE(usecase::test_variants(only, services));
  EXPECT_EQ(ran_containing(" -m pip install --disable-pip-version-check torch==2.15.0 "), 1u);
}

TEST_F(TestVariantsFixture, StagingsOfKilledRunsAreSweptLiveOnesKept) {
  auto only = request();
  only.variants = {k_cpu215};
  auto first = usecase::test_variants(only, services);
  ASSERT_TRUE(first);
  std::filesystem::path env_dir = first->front().python.parent_path().parent_path();
  fs.remove_all(env_dir);
  std::string stale = "/cache/test-envs/." + env_dir.filename().string() + ".tmp99999999-aa-0";
  std::string live = "/cache/test-envs/." + env_dir.filename().string() + ".tmp" + std::to_string(::getpid()) + "-bb-0";
  fs.put(stale + "/bin/python", "");
  fs.put(live + "/bin/python", "");
  ASSERT_TRUE(usecase::test_variants(only, services));
  EXPECT_FALSE(fs.has(stale + "/bin/python"));  // its process is gone
  EXPECT_TRUE(fs.has(live + "/bin/python"));    // another run is creating it right now
}

TEST_F(TestVariantsFixture, StableAbiVariantsRunWithTheirOldestTorchOrTheOneAskedFor) {
  const std::string stable = "torch-stable-abi211-cpu-x86_64-linux";
  fs.put("/k/build/" + stable + "/metadata.json", "{}");
  auto only = request();
  only.variants = {stable};
  auto oldest = usecase::test_variants(only, services);
  ASSERT_TRUE(oldest) << oldest.error().message;
  EXPECT_EQ(oldest->front().status, usecase::VariantTestResult::Status::passed);
  EXPECT_EQ(oldest->front().torch, "2.11.0+cu130");  // the --python Torch is its stable-ABI version

  // --torch 2.15: the stable-ABI variant runs there; a torch211 variant cannot be loaded by it.
  only.variants = {stable, k_cpu211};
  only.torch = "2.15";
  auto newer = usecase::test_variants(only, services);
  ASSERT_TRUE(newer) << newer.error().message;
  ASSERT_EQ(newer->size(), 2u);
  EXPECT_EQ((*newer)[0].status, usecase::VariantTestResult::Status::passed);
  EXPECT_EQ((*newer)[0].torch, "2.15.0+cpu");
  EXPECT_EQ((*newer)[1].status, usecase::VariantTestResult::Status::not_tested);
  EXPECT_EQ((*newer)[1].reason, "the variant is built for Torch 2.11; Torch 2.15.0+cpu cannot load it");

  // A stable-ABI variant newer than the Torch asked for is not tested.
  const std::string stable215 = "torch-stable-abi215-cpu-x86_64-linux";
  fs.put("/k/build/" + stable215 + "/metadata.json", "{}");
  only.variants = {stable215};
  only.torch = "2.11";
  auto older = usecase::test_variants(only, services);
  ASSERT_TRUE(older);
  EXPECT_EQ(older->front().reason, "the variant needs Torch 2.15 or newer; Torch 2.11.0+cu130 cannot load it");
}

TEST_F(TestVariantsFixture, TvmFfiVariantsNeedTvmFfiOfTheirSeries) {
  const std::string tvm = "tvm-ffi01-cpu-x86_64-linux";
  fs.put("/k/build/" + tvm + "/metadata.json", "{}");
  auto only = request();
  only.variants = {tvm};
  auto missing = usecase::test_variants(only, services);  // the probe reports no tvm_ffi
  ASSERT_TRUE(missing) << missing.error().message;
  EXPECT_EQ(missing->front().status, usecase::VariantTestResult::Status::not_tested);
  EXPECT_NE(missing->front().reason.find("apache-tvm-ffi is not installed"), std::string::npos)
      << missing->front().reason;
  auto base_probe = launcher.handler;
  for (const char* version : {"0.1.15.post2", "0.2.0"}) {
    launcher.handler = [&, version](const std::vector<std::string>& argv,
                                    const util::ProcessOptions& options) -> std::optional<util::ProcessResult> {
      if (argv.size() > 1 && argv[1] == "-c")
        return util::ProcessResult{0, std::string("2.11.0+cu130 13.0 3.11 ") + version + " 0\n", ""};
      return base_probe(argv, options);
    };
    auto result = usecase::test_variants(only, services);
    ASSERT_TRUE(result);
    if (std::string(version) == "0.2.0") {
      EXPECT_EQ(result->front().reason, "tvm_ffi 0.2.0 here cannot load a tvm-ffi 0.1 variant");
    } else {
      EXPECT_EQ(result->front().status, usecase::VariantTestResult::Status::passed) << result->front().reason;
    }
  }
}

TEST_F(TestVariantsFixture, ACudaVariantWithoutAGpuIsNotTestedOrWithBestEffortLoaded) {
  const std::string cu130 = "torch211-cxx11-cu130-x86_64-linux";
  fs.put("/k/build/" + cu130 + "/metadata.json", "{}");
  auto only = request();
  only.variants = {cu130};
  auto result = usecase::test_variants(only, services);  // the probe says torch.cuda.is_available() is False
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->front().status, usecase::VariantTestResult::Status::not_tested);
  EXPECT_EQ(result->front().reason, "no GPU here (torch.cuda.is_available() is False): its CUDA kernels cannot run");
  EXPECT_TRUE(pytest_envs.empty());
  EXPECT_TRUE(load_envs.empty());

  // Best effort (a CI runner): the variant is imported with its Torch and its ops checked; no pytest.
  only.best_effort = true;
  auto loaded = usecase::test_variants(only, services);
  ASSERT_TRUE(loaded) << loaded.error().message;
  EXPECT_EQ(loaded->front().status, usecase::VariantTestResult::Status::loaded);
  EXPECT_EQ(usecase::to_string(loaded->front().status), "loaded");
  EXPECT_EQ(loaded->front().reason,
            "no GPU here, its tests were not run; it loads with Torch 2.11.0+cu130 and has a CUDA kernel for every "
            "op (relu, relu_out)");
  EXPECT_TRUE(pytest_envs.empty());
  ASSERT_EQ(load_envs.size(), 1u);
  EXPECT_EQ(load_envs[0].at("HF_HUB_OFFLINE"), "1");
  EXPECT_TRUE(load_envs[0].at("PYTHONPATH").starts_with("/cache/tmp/.pythonpath-" + cu130));
  EXPECT_FALSE(fs.has(load_envs[0].at("PYTHONPATH")));  // removed after the check

  // A variant that does not load, or lacks a CUDA kernel, fails: that is a defect, GPU or not.
  load_exit = 1;
  auto broken = usecase::test_variants(only, services);
  ASSERT_TRUE(broken);
  EXPECT_EQ(broken->front().status, usecase::VariantTestResult::Status::failed);
  EXPECT_EQ(broken->front().reason, "it does not load: import relu failed: OSError: libcudart.so.13");
}

TEST_F(TestVariantsFixture, WithPyPIsBuildsACudaVariantOfAnotherCudaIsNotTested) {
  const std::string cu130 = "torch215-cxx11-cu130-x86_64-linux";
  fs.put("/k/build/" + cu130 + "/metadata.json", "{}");
  auto only = request();
  only.variants = {k_cpu215, cu130};
  only.torch_index = "pypi";
  auto results = usecase::test_variants(only, services);
  ASSERT_TRUE(results) << results.error().message;
  ASSERT_EQ(results->size(), 2u);
  // Both use the one PyPI environment of Torch 2.15 (built for CUDA 13.2): made once.
  EXPECT_EQ(ran_containing(" -m venv "), 1u);
  EXPECT_EQ((*results)[0].variant, k_cpu215);
  EXPECT_EQ((*results)[0].status, usecase::VariantTestResult::Status::passed);
  EXPECT_EQ((*results)[1].status, usecase::VariantTestResult::Status::not_tested);
  EXPECT_EQ((*results)[1].reason,
            "Torch 2.15.0+cu132 here is built for CUDA 13.2; the variant needs one built for CUDA 13.0");
}

TEST_F(TestVariantsFixture, ATestEnvironmentIsCreatedOnlyWhenAskedOrConfirmed) {
  auto only = request();
  only.variants = {k_cpu215};
  only.create_env = false;
  auto refused = usecase::test_variants(only, services);  // nobody says yes
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ExitCode::toolchain);
  EXPECT_NE(refused.error().hint.find("--create-env"), std::string::npos);
  EXPECT_EQ(ran_containing(" -m venv "), 0u);
  ASSERT_EQ(reporter.questions.size(), 1u);  // asked, and refused without an answer
  EXPECT_NE(reporter.questions[0].find("Torch 2.15.0 (cpu, from https://download.pytorch.org/whl/cpu"),
            std::string::npos)
      << reporter.questions[0];
  reporter.confirm_answer = true;
  ASSERT_TRUE(usecase::test_variants(only, services));
  ASSERT_EQ(reporter.questions.size(), 2u);
  EXPECT_EQ(ran_containing(" -m venv "), 1u);
}

TEST_F(TestVariantsFixture, AVariantOlderThanItsSourcesIsRefused) {
  // A record of a build whose last run did not finish the variant (a compile failed).
  fs.put("/k/.kbuild/state", "kbuild-state 2\nJ " + k_cpu211 + "/link\nK k\n");
  auto only = request();
  only.variants = {k_cpu211};
  auto refused = usecase::test_variants(only, services);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ExitCode::failure);
  EXPECT_NE(refused.error().message.find("its last build did not finish"), std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().hint.find("--allow-stale"), std::string::npos);
  EXPECT_TRUE(pytest_envs.empty());
  only.allow_stale = true;
  ASSERT_TRUE(usecase::test_variants(only, services));
  EXPECT_EQ(pytest_envs.size(), 1u);
}

TEST(TestVariants, PytestArgumentsAddTestsUnlessOneNamesAPathOfTheKernel) {
  kbuild::usecase::TestRequest request;
  auto exists = [](const std::string& path) { return path == "tests/test_a.py" || path == "other"; };
  using Args = std::vector<std::string>;
  EXPECT_EQ(kbuild::usecase::pytest_arguments(request, "r.xml", exists),
            (Args{"-p", "no:cacheprovider", "--junitxml=r.xml", "-q", "tests"}));
  // -k's value is no path of the kernel: tests/ still runs, narrowed.
  request.pytest_args = {"-k", "relu", "-x"};
  EXPECT_EQ(kbuild::usecase::pytest_arguments(request, "r.xml", exists),
            (Args{"-p", "no:cacheprovider", "--junitxml=r.xml", "-q", "-k", "relu", "-x", "tests"}));
  // A file, or a test by node id: that alone; on a terminal pytest draws its own progress (no -q).
  request.pytest_args = {"tests/test_a.py::test_one"};
  request.pytest_progress = true;
  EXPECT_EQ(kbuild::usecase::pytest_arguments(request, "r.xml", exists),
            (Args{"-p", "no:cacheprovider", "--junitxml=r.xml", "tests/test_a.py::test_one"}));
}
