// The build use case (tool/kbuild/build) driven whole through in-memory fakes, ninja-style: a kernel
// directory and a Torch installation in a MemFileSystem, probes answered by a FakeLauncher, compile
// and link commands "run" by a FakeCommandRunner, no git, a fixed clock and randomness.

#include <gtest/gtest.h>

#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "kbuild/exec/reporter.hpp"
#include "kbuild/toolchain/lock.hpp"
#include "kbuild/usecase/build.hpp"
#include "kbuild/usecase/kernel_source.hpp"
#include "kbuild/usecase/local_variants.hpp"
#include "kbuild/usecase/ops_check.hpp"
#include "kbuild/util/interrupt.hpp"
#include "kbuild/util/strings.hpp"
#include "support/build_fixture.hpp"
#include "support/fakes.hpp"

using namespace kbuild;
using fakes::BuildFixture;
using fakes::k_build_toml;

TEST_F(BuildFixture, ALocalBuildInstallsTheVariantThenHasNothingToDo) {
  auto outcome = usecase::build(request(), services);
  ASSERT_TRUE(outcome) << outcome.error().message << "\n" << outcome.error().hint;
  EXPECT_EQ(outcome->variants, std::vector<std::string>{"torch211-cxx11-cpu-x86_64-linux"});
  EXPECT_EQ(outcome->summary.failed, 0u);
  EXPECT_GT(outcome->summary.ran, 0u);
  // No CUDA toolkit here (no nvcc found): the cuda backend is skipped with a warning, not an error.
  ASSERT_FALSE(reporter.warnings.empty());
  EXPECT_NE(reporter.warnings.front().find("no CUDA toolkit found"), std::string::npos);
  // The variant directory as the loader expects it, with the ops id from the sources (no git here).
  std::string id =
      usecase::build_identity(fs, launcher, "/k", *usecase::load_kernel(fs, "/k", {}), std::nullopt)->unique_id;
  EXPECT_TRUE(fs.has("/k/build/torch211-cxx11-cpu-x86_64-linux/metadata.json"));
  EXPECT_TRUE(fs.has("/k/build/torch211-cxx11-cpu-x86_64-linux/__init__.py"));
  EXPECT_TRUE(fs.has("/k/build/torch211-cxx11-cpu-x86_64-linux/_relu_cpu_" + id + ".abi3.so"));
  // A compilation database for editors, one entry per compile job.
  auto database = nlohmann::json::parse(fs.content("/k/.kbuild/compile_commands.json"));
  ASSERT_EQ(database.size(), 3u);  // binding, glibc_compat, relu.cpp
  EXPECT_EQ(database[2]["file"], "/k/relu_cpu/relu.cpp");
  EXPECT_EQ(database[2]["directory"], "/k");
  EXPECT_EQ(database[2]["arguments"][0], "/usr/bin/g++");

  runner.started.clear();
  auto again = usecase::build(request(), services);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->summary.stale, 0u);  // a no-op build runs nothing
  EXPECT_TRUE(runner.started.empty());
}

TEST_F(BuildFixture, ABackendWithoutComponentsIsANoarchVariantAndTheBuildSaysSo) {
  std::string toml = k_build_toml;
  fs.put("/k/build.toml", toml.substr(0, toml.find("[kernel.relu_cuda]")));
  auto outcome = usecase::build(request(), services);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_EQ(outcome->variants, (std::vector<std::string>{"torch211-cxx11-cpu-x86_64-linux", "torch-cuda"}));
  EXPECT_TRUE(fs.has("/k/build/torch-cuda/__init__.py"));
  auto warned = std::find_if(reporter.warnings.begin(), reporter.warnings.end(), [](const std::string& w) {
    return w.find("the cuda backend has no [kernel.*] component: built as the noarch variant torch-cuda") !=
           std::string::npos;
  });
  EXPECT_NE(warned, reporter.warnings.end());
  // With components for every backend, nothing is said.
  reporter.warnings.clear();
  fs.put("/k/build.toml", k_build_toml);
  ASSERT_TRUE(usecase::build(request(), services));
  for (const auto& warning : reporter.warnings) EXPECT_EQ(warning.find("no [kernel.*] component"), std::string::npos);
}

TEST_F(BuildFixture, AnEditedSourceRebuildsOnlyWhatDependsOnIt) {
  // (Without the cache: the fake compiler's object does not depend on the source, so the cache
  // would serve the link.)
  auto r = request();
  r.use_cache = false;
  ASSERT_TRUE(usecase::build(r, services));
  runner.started.clear();
  fs.put("/k/relu_cpu/relu.cpp", "// cpu, edited");
  auto outcome = usecase::build(r, services);
  ASSERT_TRUE(outcome);
  auto outputs = started_outputs();
  ASSERT_EQ(outputs.size(), 2u);  // that object, then the link
  EXPECT_NE(outputs[0].find("relu_cpu/relu.cpp.o"), std::string::npos) << outputs[0];
  EXPECT_NE(outputs[1].find(".abi3.so"), std::string::npos) << outputs[1];
}

TEST_F(BuildFixture, TheCompileCacheServesAFreshCheckout) {
  ASSERT_TRUE(usecase::build(request(), services));
  // Another copy of the same kernel (the same sources, so the same id): every command comes from the cache.
  copy_kernel_to("/k2");
  auto copy = request();
  copy.kernel_dir = "/k2";
  runner.started.clear();
  auto outcome = usecase::build(copy, services);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_TRUE(runner.started.empty());
  EXPECT_EQ(outcome->summary.cache_hits, 4u);  // three objects (binding, kernel, glibc_compat) and the library
  EXPECT_EQ(fs.content("/k2/build/torch211-cxx11-cpu-x86_64-linux/metadata.json"),
            fs.content("/k/build/torch211-cxx11-cpu-x86_64-linux/metadata.json"));
  // Without the cache, everything runs.
  fs.remove_all("/k2/build");
  fs.remove_all("/k2/.kbuild");
  copy.use_cache = false;
  auto uncached = usecase::build(copy, services);
  ASSERT_TRUE(uncached);
  EXPECT_EQ(uncached->summary.cache_hits, 0u);
  EXPECT_EQ(runner.started.size(), 4u);
}

TEST_F(BuildFixture, FailuresAndBadRequestsAreErrorsWithTheirExitCodes) {
  fs.put("/k/build.toml", std::string(k_build_toml) + "unknown = 1\n");
  auto invalid = usecase::build(request(), services);
  ASSERT_FALSE(invalid);
  EXPECT_EQ(invalid.error().code, ExitCode::usage);
  EXPECT_FALSE(reporter.found.empty());        // the diagnostics went to the reporter
  EXPECT_FALSE(fs.stat("/k/.kbuild").exists);  // nothing written for an invalid build.toml

  fs.put("/k/build.toml", k_build_toml);
  auto cuda_only = request();
  cuda_only.backends = {"cuda"};
  auto no_toolkit = usecase::build(cuda_only, services);
  ASSERT_FALSE(no_toolkit);
  EXPECT_EQ(no_toolkit.error().code, ExitCode::toolchain);

  auto unknown = request();
  unknown.backends = {"rocm"};
  EXPECT_EQ(usecase::build(unknown, services).error().code, ExitCode::usage);

  runner.failures["/k/.kbuild/torch211-cxx11-cpu-x86_64-linux/obj/relu_cpu/relu.cpp.o"] = 1;
  auto failed = usecase::build(request(), services);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, ExitCode::failure);
  EXPECT_NE(failed.error().message.find("build failed: 1 job failed"), std::string::npos) << failed.error().message;
  EXPECT_FALSE(fs.stat("/k/build/torch211-cxx11-cpu-x86_64-linux").exists);
}

TEST_F(BuildFixture, TheRemoteCacheIsReachedOverTheHttpSeam) {
  env.values["KBUILD_REMOTE_CACHE"] = "http://cache.test/kb";
  http.store_puts = true;
  ASSERT_TRUE(usecase::build(request(), services));
  size_t puts = 0;
  for (const auto& r : http.requests) puts += r.method == "PUT" && r.url.starts_with("http://cache.test/kb/");
  EXPECT_GE(puts, 4u);  // manifests and objects of the entries, each object once
  // Another machine: its own (empty) local cache, the same remote: nothing is compiled.
  copy_kernel_to("/k2");
  fs.remove_all("/cache/objects");
  auto copy = request();
  copy.kernel_dir = "/k2";
  runner.started.clear();
  auto outcome = usecase::build(copy, services);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_TRUE(runner.started.empty());
  EXPECT_EQ(outcome->summary.cache_hits, 4u);

  env.values["KBUILD_REMOTE_CACHE"] = "ftp://cache.test";  // refused before anything is built
  auto refused = usecase::build(request(), services);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ExitCode::usage);
}

TEST_F(BuildFixture, AnInvalidCacheSizeIsAUsageError) {
  env.values["KBUILD_CACHE_MAX_SIZE"] = "10 gigs";
  auto outcome = usecase::build(request(), services);
  ASSERT_FALSE(outcome);
  EXPECT_EQ(outcome.error().code, ExitCode::usage);
  EXPECT_NE(outcome.error().message.find("KBUILD_CACHE_MAX_SIZE"), std::string::npos);
}

TEST(BuildIdentity, ExplicitElseADigestOfTheBuildInputs) {
  fakes::MemFileSystem fs;
  fakes::FakeLauncher launcher;
  config::KernelConfig config;
  config.general.name = "relu";
  config.torch.src = {"torch-ext/binding.cpp"};
  config::KernelComponent component;
  component.name = "relu_cuda";
  component.backend = config::Backend::cuda;
  component.src = {"src/a.cu"};
  component.include = {"include"};
  config.kernels = {component};
  auto write_kernel = [](fakes::MemFileSystem& into, const std::string& dir) {
    for (const auto& [rel, text] : std::map<std::string, std::string>{{"build.toml", "[general]\n"},
                                                                      {"src/a.cu", "int a;\n"},
                                                                      {"include/a.h", "int f();\n"},
                                                                      {"torch-ext/binding.cpp", "// b\n"},
                                                                      {"torch-ext/relu/__init__.py", "\n"}})
      ASSERT_TRUE(into.write_file_atomic(dir + "/" + rel, text));
  };
  write_kernel(fs, "/k");
  auto id = [&](fakes::MemFileSystem& of, const std::string& dir) {
    return usecase::build_identity(of, launcher, dir, config, std::nullopt)->unique_id;
  };
  auto explicit_id = usecase::build_identity(fs, launcher, "/k", config, std::string("abc_1"));
  EXPECT_EQ(explicit_id->unique_id, "abc_1");
  EXPECT_FALSE(usecase::build_identity(fs, launcher, "/k", config, std::string("a-b")));
  const std::string first = id(fs, "/k");
  EXPECT_TRUE(std::regex_match(first, std::regex("src[0-9a-f]{8}"))) << first;
  EXPECT_EQ(*usecase::build_input_files(fs, "/k", config),
            (std::vector<std::string>{"build.toml", "include/a.h", "src/a.cu", "torch-ext/binding.cpp",
                                      "torch-ext/relu/__init__.py"}));
  // What is not a build input does not count: outputs, intermediates, bytecode, README, tests, the
  // lock file, notes; so kbuild clean, a new test or a README edit keep the id.
  for (const char* other : {"build/v/x.so", ".kbuild/obj/a.o", "torch-ext/relu/__pycache__/m.cpython-311.pyc",
                            "README.md", "tests/test_relu.py", "kbuild.lock", "notes/todo.txt", "include/notes.txt"})
    ASSERT_TRUE(fs.write_file_atomic(std::string("/k/") + other, "x"));
  EXPECT_EQ(id(fs, "/k"), first);
  fakes::MemFileSystem copy;  // another checkout with the same sources
  write_kernel(copy, "/elsewhere");
  EXPECT_EQ(id(copy, "/elsewhere"), first);
  // Any change to what is compiled or installed gives a new id: a source, a header of an include
  // directory, a Python file, build.toml.
  for (const char* input : {"src/a.cu", "include/a.h", "include/new.cuh", "torch-ext/relu/ops.py", "build.toml"}) {
    fakes::MemFileSystem edited;
    write_kernel(edited, "/k");
    ASSERT_TRUE(edited.write_file_atomic(std::string("/k/") + input, "changed\n"));
    EXPECT_NE(id(edited, "/k"), first) << input;
  }
  // In git, the commit and dirty flag are provenance; the id stays the digest of the inputs.
  launcher.programs["git"] = "/usr/bin/git";
  launcher.answers
      ["git --no-optional-locks -C /k status --porcelain=v2 --branch --untracked-files=no --ignore-submodules=all -- . "
       ":(exclude)build"] = {
      0, "# branch.oid " + std::string(40, 'c') + "\n# branch.head main\n1 .M N... 100644 100644 100644 a b x\n", ""};
  auto git = usecase::build_identity(fs, launcher, "/k", config, std::nullopt);
  ASSERT_TRUE(git);
  EXPECT_EQ(git->unique_id, first);
  ASSERT_TRUE(git->kernel_git);
  EXPECT_TRUE(git->kernel_git->dirty);
  EXPECT_EQ(git->kernel_git->commit, std::string(40, 'c'));
}

TEST_F(BuildFixture, OneBuildOfAKernelDirectoryAtATime) {
  ASSERT_TRUE(fs.make_dirs("/k/.kbuild"));
  auto held = fs.lock_file("/k/.kbuild/lock", false);
  ASSERT_TRUE(held && *held);
  (*held)->set_owner("kbuild pid 4242\n");
  auto r = request();
  r.wait_for_lock = false;
  auto busy = usecase::build(r, services);
  ASSERT_FALSE(busy);
  EXPECT_NE(busy.error().message.find("kbuild pid 4242 is building /k"), std::string::npos) << busy.error().message;
  EXPECT_TRUE(runner.started.empty());
  held->reset();  // the other build finished
  ASSERT_TRUE(usecase::build(r, services));
  EXPECT_FALSE(fs.locked("/k/.kbuild/lock"));  // released when the build returns
}

TEST(RegistrationPrefix, ChecksEveryPythonSourceButOutputsAndCaches) {
  fakes::MemFileSystem fs;
  for (const char* path :
       {"/k/build.toml", "/k/torch-ext/relu/__init__.py", "/k/tests/test_relu.py", "/k/build/v/relu/__init__.py",
        "/k/.venv/lib/x.py", "/k/torch-ext/relu/__pycache__/a.py", "/k/benchmarks/bench.py", "/k/notes.txt"})
    ASSERT_TRUE(fs.write_file_atomic(path, ""));
  auto files = usecase::python_sources(fs, "/k");
  ASSERT_TRUE(files);
  EXPECT_EQ(*files,
            (std::vector<std::string>{"benchmarks/bench.py", "tests/test_relu.py", "torch-ext/relu/__init__.py"}));
}

TEST(RegistrationPrefix, VerdictCarriesKernelBuildersHeadingAndEveryLocation) {
  EXPECT_TRUE(usecase::registration_prefix_verdict({0, "", ""}, "/k"));
  auto bad = usecase::registration_prefix_verdict(
      {1, "torch-ext/relu/__init__.py:12:1 function _fake\ntests/t.py:3:1 class Op\n", ""}, "/k");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ExitCode::usage);
  EXPECT_EQ(bad.error().message,
            "Found Torch library registrations that do not use `add_op_namespace_prefix`:\n"
            "  /k/torch-ext/relu/__init__.py:12:1 function _fake\n  /k/tests/t.py:3:1 class Op");
  EXPECT_NE(bad.error().hint.find("add_op_namespace_prefix(\"my_op\")"), std::string::npos);
  auto syntax = usecase::registration_prefix_verdict({1, "a.py:2:5 unparsable invalid syntax\n", ""}, "/k");
  ASSERT_FALSE(syntax);
  EXPECT_NE(syntax.error().message.find("cannot be parsed:\n  /k/a.py:2:5 unparsable invalid syntax"),
            std::string::npos);
  auto broken = usecase::registration_prefix_verdict({127, "", "python: not found"}, "/k");
  ASSERT_FALSE(broken);
  EXPECT_EQ(broken.error().code, ExitCode::toolchain);
}

using fakes::MatrixBuildFixture;

TEST_F(MatrixBuildFixture, EachVariantIsBuiltAgainstItsOwnPinnedTorch) {
  auto outcome = usecase::build(matrix_request(), services);
  ASSERT_TRUE(outcome) << outcome.error().message << "\n" << outcome.error().hint;
  EXPECT_EQ(outcome->variants,
            (std::vector<std::string>{"torch210-cxx11-cpu-x86_64-linux", "torch211-cxx11-cpu-x86_64-linux"}));
  EXPECT_EQ(torch_roots_for("torch210-cxx11-cpu"), std::set<std::string>{"/cache/toolchains/torch-2.10.0"});
  EXPECT_EQ(torch_roots_for("torch211-cxx11-cpu"), std::set<std::string>{"/cache/toolchains/torch-2.11.0"});
  // Torch's OpenMP (from its ATen/Config.h) reaches the compile of each variant.
  bool openmp = false;
  for (const auto& argv : runner.started)
    for (const auto& arg : argv) openmp = openmp || arg == "-fopenmp";
  EXPECT_TRUE(openmp);
  for (const char* variant : {"torch210-cxx11-cpu-x86_64-linux", "torch211-cxx11-cpu-x86_64-linux"}) {
    auto metadata = nlohmann::json::parse(fs.content(std::string("/k/build/") + variant + "/metadata.json"));
    EXPECT_EQ(metadata["version"], 1) << variant;
  }
  // Nothing was fetched: the lock and the unpacked toolchains served everything, and the lock is unchanged.
  for (const auto& call : launcher.ran) EXPECT_EQ(call.find("pip"), std::string::npos) << call;

  // Up to date: nothing runs. A filter builds only what it selects.
  runner.started.clear();
  auto again = usecase::build(matrix_request(), services);
  ASSERT_TRUE(again);
  EXPECT_TRUE(runner.started.empty());
  auto only = matrix_request();
  only.filter.torch = {"2.10"};
  fs.put("/k/relu_cpu/relu.cpp", "// cpu, edited");
  auto filtered = usecase::build(only, services);
  ASSERT_TRUE(filtered) << filtered.error().message;
  EXPECT_EQ(filtered->variants, std::vector<std::string>{"torch210-cxx11-cpu-x86_64-linux"});
  EXPECT_TRUE(torch_roots_for("torch211-cxx11-cpu").empty());
}

TEST_F(MatrixBuildFixture, CacheEntriesFollowTheTorchHeadersEachVariantRead) {
  // The compiler "reads" its variant's Torch header (the depfile says so), as a real one would.
  auto read_torch_header = [&](const std::string& kernel_dir, const std::string& torch_dir) {
    for (const char* variant : {"torch210-cxx11-cpu-x86_64-linux", "torch211-cxx11-cpu-x86_64-linux"}) {
      std::string dir =
          std::string(variant).starts_with("torch210") ? torch_dir : "/cache/toolchains/torch-2.11.0-111111111111";
      for (const char* object : {"relu_cpu/relu.cpp.o", "torch-ext/torch_binding.cpp.o"})
        runner.headers[kernel_dir + "/.kbuild/" + variant + "/obj/" + object] = {dir +
                                                                                 "/torch/include/torch/library.h"};
    }
  };
  read_torch_header("/k", "/cache/toolchains/torch-2.10.0-101010101010");
  fs.put("/cache/toolchains/torch-2.10.0-101010101010/torch/include/torch/library.h", "// 2.10");
  fs.put("/cache/toolchains/torch-2.11.0-111111111111/torch/include/torch/library.h", "// 2.11");
  ASSERT_TRUE(usecase::build(matrix_request(), services));

  // The same kernel elsewhere: every command of both variants comes from the cache.
  copy_kernel_to("/k2");
  read_torch_header("/k2", "/cache/toolchains/torch-2.10.0-101010101010");
  auto copy = matrix_request();
  copy.kernel_dir = "/k2";
  runner.started.clear();
  auto outcome = usecase::build(copy, services);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_TRUE(runner.started.empty());
  EXPECT_EQ(outcome->summary.cache_hits, 8u);  // 3 objects + 1 library, per variant

  // Torch 2.10 replaced by another build whose header differs: the objects that read it and the
  // library recompile; Torch 2.11's variant is still up to date.
  toolchain::LockFile lock = *toolchain::LockFile::parse(fs.content("/k2/kbuild.lock"), "kbuild.lock");
  std::string other = std::string(64, '2');
  lock.toolchains["torch-2.10"].front().sha256 = other;
  fs.put("/k2/kbuild.lock", lock.serialize());
  unpacked_torch("2.10.0", other);
  std::string other_dir = "/cache/toolchains/torch-2.10.0-" + other.substr(0, 12);
  fs.put(other_dir + "/torch/include/torch/library.h", "// 2.10, another build");
  read_torch_header("/k2", other_dir);
  runner.started.clear();
  ASSERT_TRUE(usecase::build(copy, services));
  auto outputs = started_outputs();
  EXPECT_EQ(outputs.size(), 3u) << util::join(outputs, "\n");  // relu.cpp.o, torch_binding.cpp.o, the library
  for (const auto& output : outputs) EXPECT_NE(output.find("torch210-cxx11-cpu"), std::string::npos) << output;
}

TEST_F(MatrixBuildFixture, LockedBuildsNeedTheLockAndNeverResolve) {
  fs.remove_all("/k/kbuild.lock");
  auto missing = usecase::build(matrix_request(), services);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ExitCode::usage);
  EXPECT_NE(missing.error().message.find("--locked but /k/kbuild.lock does not exist"), std::string::npos)
      << missing.error().message;
  // A pin whose toolchain is not unpacked here must be downloaded: pip is asked (and here fails),
  // and the build stops with a toolchain error, writing no variant.
  toolchain::LockFile lock;
  lock.toolchains["torch-2.10"] = {{"torch", "2.10.0", "torch-2.10.0-cp312-manylinux_2_28_x86_64.whl", k_sha_210}};
  lock.toolchains["torch-2.11"] = {
      {"torch", "2.11.0", "torch-2.11.0-cp312-manylinux_2_28_x86_64.whl", std::string(64, '3')}};
  fs.put("/k/kbuild.lock", lock.serialize());
  auto undownloadable = usecase::build(matrix_request(), services);
  ASSERT_FALSE(undownloadable);
  EXPECT_EQ(undownloadable.error().code, ExitCode::toolchain) << undownloadable.error().message;
  EXPECT_FALSE(fs.stat("/k/build/torch211-cxx11-cpu-x86_64-linux").exists);
}

TEST_F(BuildFixture, AVariantNameThatALocalBuildMakesIsBuiltLocally) {
  // `kbuild build` printed torch211-cxx11-cpu-x86_64-linux; --variant takes that name although the
  // matrix (kbuild's table: Torch 2.14/2.15) does not list it.
  auto r = request();
  r.matrix = true;
  r.filter.variants = {"torch211-cxx11-cpu-x86_64-linux"};
  auto outcome = usecase::build(r, services);
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_EQ(outcome->variants, std::vector<std::string>{"torch211-cxx11-cpu-x86_64-linux"});
  EXPECT_FALSE(fs.has("/k/kbuild.lock"));  // nothing was pinned: no matrix build
  // A name neither builds is refused by the matrix, with the valid names.
  r.filter.variants = {"torch299-cxx11-cpu-x86_64-linux"};
  auto unknown = usecase::build(r, services);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, ExitCode::usage);
  EXPECT_NE(unknown.error().message.find("unknown variant"), std::string::npos);
}
