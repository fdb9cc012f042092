#pragma once
// A kernel directory and a Torch installation in a MemFileSystem, probes answered by a FakeLauncher,
// compile and link commands "run" by a FakeCommandRunner, no git, a fixed clock and randomness: the
// build use case driven whole through fakes (tests/unit/build_test.cpp, freshness_test.cpp).

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "kbuild/exec/reporter.hpp"
#include "kbuild/toolchain/host_toolchain.hpp"
#include "kbuild/toolchain/lock.hpp"
#include "kbuild/usecase/build.hpp"
#include "kbuild/util/interrupt.hpp"
#include "support/services_fixture.hpp"

namespace kbuild::fakes {

constexpr const char* k_build_toml = R"([general]
name = "relu"
version = 1
edition = 5
license = "apache-2.0"
backends = ["cpu", "cuda"]

[torch]
src = ["torch-ext/torch_binding.cpp"]

[kernel.relu_cpu]
backend = "cpu"
depends = ["torch"]
src = ["relu_cpu/relu.cpp"]

[kernel.relu_cuda]
backend = "cuda"
depends = ["torch"]
src = ["relu_cuda/relu.cu"]
)";

struct BuildFixture : ServicesFixture {
  void SetUp() override {
    util::reset_interrupt_for_testing();
    fs.put("/k/build.toml", k_build_toml);
    fs.put("/k/torch-ext/torch_binding.cpp", "// binding");
    fs.put("/k/torch-ext/relu/__init__.py", "from ._ops import ops\n");
    fs.put("/k/relu_cpu/relu.cpp", "// cpu");
    fs.put("/k/relu_cuda/relu.cu", "// cuda");
    // A CPU build of Torch 2.11 for the interpreter /py/bin/python3.
    fs.put("/py/site/torch/version.py", "__version__ = '2.11.0+cpu'\ngit_version = 'abc'\n");
    fs.put("/py/site/torch/include/torch/library.h", "");
    fs.put("/py/site/torch/include/ATen/Config.h", "#define AT_PARALLEL_OPENMP 0\n");
    fs.put("/py/site/torch/lib/libc10.so", "... St7__cxx11 ...");
    fs.put("/py/include/python3.11/Python.h", "");
    launcher.programs = {{"python3", "/py/bin/python3"}, {"g++", "/usr/bin/g++"}};
    launcher.prefix_answers.push_back(
        {"python3 -c ",
         {0, R"({"version": "3.11", "include": "/py/include/python3.11", "torch": "/py/site/torch"})", ""}});
    launcher.answers["/usr/bin/g++ -dumpfullversion"] = {0, "12.2.0\n", ""};
    launcher.answers["/usr/bin/g++ -dumpmachine"] = {0, "x86_64-linux-gnu\n", ""};
  }

  usecase::BuildRequest request() const {
    usecase::BuildRequest r;
    r.kernel_dir = "/k";
    r.jobs = 2;
    r.builder_version = "kbuild/test";
    r.gate_libraries = false;  // the fake compiler writes no ELF; tests/e2e check the gate with real ones
    return r;
  }

  // Copies the kernel's sources and settings (not build/ nor .kbuild/) from /k to `to`.
  void copy_kernel_to(const std::string& to) {
    for (const char* file : {"/build.toml", "/kbuild.toml", "/kbuild.lock", "/torch-ext/torch_binding.cpp",
                             "/torch-ext/relu/__init__.py", "/relu_cpu/relu.cpp", "/relu_cuda/relu.cu"})
      if (fs.has(std::string("/k") + file)) fs.put(to + file, fs.content(std::string("/k") + file));
  }

  // The ids of the commands the runner started.
  std::vector<std::string> started_outputs() const {
    std::vector<std::string> out;
    for (const auto& argv : runner.started)
      for (size_t i = 0; i + 1 < argv.size(); ++i)
        if (argv[i] == "-o") out.push_back(argv[i + 1]);
    return out;
  }
};

// A matrix build: Torch 2.10 and 2.11 pinned in kbuild.lock and already unpacked in the toolchain
// cache (a warm machine), so no download runs; each variant compiles against its own Torch.
struct MatrixBuildFixture : BuildFixture {
  static constexpr const char* k_sha_210 = "1010101010101010101010101010101010101010101010101010101010101010";
  static constexpr const char* k_sha_211 = "1111111111111111111111111111111111111111111111111111111111111111";

  void SetUp() override {
    BuildFixture::SetUp();
    fs.put("/k/kbuild.toml", "[matrix]\ntorch = [\"2.10\", \"2.11\"]\ncuda = []\ncpu = true\n");
    toolchain::LockFile lock;
    lock.toolchains["torch-2.10"] = {{"torch", "2.10.0", "torch-2.10.0-cp312-manylinux_2_28_x86_64.whl", k_sha_210}};
    lock.toolchains["torch-2.11"] = {{"torch", "2.11.0", "torch-2.11.0-cp312-manylinux_2_28_x86_64.whl", k_sha_211}};
    lock.toolchains["gcc-12.2"] = host_pins();
    fs.put("/k/kbuild.lock", lock.serialize());
    unpacked_host_toolchain();
    unpacked_torch("2.10.0", k_sha_210);
    unpacked_torch("2.11.0", k_sha_211);
  }

  static std::vector<toolchain::LockedArtifact> host_pins() {
    return {{"g++-12", "12.2.0-14", "g++-12_12.2.0-14_amd64.deb", std::string(64, 'c'),
             "https://deb.debian.org/debian/pool/main/g/gcc-12/g++-12_12.2.0-14_amd64.deb"}};
  }

  // What Provisioner::host_compiler leaves in the cache: the unpacked root and its .complete marker.
  std::string unpacked_host_toolchain() {
    const auto dir =
        toolchain::host_toolchain_dir(util::CacheLayout{"/cache"}, toolchain::bookworm_gcc12_recipe(), host_pins());
    fs.put((dir / "root/usr/bin/x86_64-linux-gnu-g++-12").string(), "");
    fs.put((dir / ".complete").string(), "host toolchain\n");
    return dir.string();
  }

  // What Provisioner::torch leaves in the cache for a wheel: headers, libraries, version.py, .complete.
  void unpacked_torch(const std::string& version, const std::string& sha) {
    std::string root = "/cache/toolchains/torch-" + version + "-" + sha.substr(0, 12);
    fs.put(root + "/torch/version.py", "__version__ = '" + version + "+cu130'\ngit_version = 'abc'\n");
    fs.put(root + "/torch/include/torch/library.h", "");
    fs.put(root + "/torch/include/ATen/Config.h", "#define AT_PARALLEL_OPENMP 1\n");
    fs.put(root + "/torch/lib/libc10.so", "... St7__cxx11 ...");
    fs.put(root + "/.complete", "torch wheel\n");
  }

  usecase::BuildRequest matrix_request() const {
    auto r = request();
    r.matrix = true;
    r.locked = true;
    return r;
  }

  // The include directories of Torch on the command lines that produced `output_part`.
  std::set<std::string> torch_roots_for(const std::string& output_part) const {
    std::set<std::string> roots;
    for (const auto& argv : runner.started) {
      bool match = false;
      for (const auto& arg : argv) match = match || arg.find(output_part) != std::string::npos;
      if (!match) continue;
      for (const auto& arg : argv)
        if (arg.find("/cache/toolchains/torch-") != std::string::npos)
          roots.insert(
              arg.substr(arg.find("/cache/toolchains/"), std::string("/cache/toolchains/torch-2.1x.0").size()));
    }
    return roots;
  }
};

}  // namespace kbuild::fakes
