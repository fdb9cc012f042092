#include <gtest/gtest.h>

#include "kbuild/toolchain/lock.hpp"
#include "kbuild/toolchain/probe.hpp"
#include "kbuild/toolchain/provision.hpp"
#include "support/fakes.hpp"

using namespace kbuild;
using namespace kbuild::toolchain;

TEST(Toolchain, ParsesNvccVersion) {
  auto version = parse_nvcc_version(
      "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 13.0, V13.0.88\n"
      "Build cuda_13.0.r13.0/compiler.36424714_0\n");
  ASSERT_TRUE(version);
  EXPECT_EQ(version->str(), "13.0.88");
  EXPECT_FALSE(parse_nvcc_version("gcc (Debian) 12.2.0"));
}

TEST(Toolchain, ParsesTorchVersionPy) {
  TorchInstall torch;
  ASSERT_TRUE(
      parse_torch_version_py("__version__ = '2.11.0+cu130'\ndebug = False\ncuda: Optional[str] = '13.0'\n"
                             "git_version = '70d99e9'\nhip: Optional[str] = None\n",
                             torch));
  EXPECT_EQ(torch.version.str(), "2.11.0");
  EXPECT_EQ(torch.cuda->str(), "13.0");
  EXPECT_EQ(torch.git_version, "70d99e9");
  TorchInstall cpu;
  ASSERT_TRUE(parse_torch_version_py("__version__ = '2.10.1+cpu'\ncuda: Optional[str] = None\n", cpu));
  EXPECT_FALSE(cpu.cuda.has_value());
}

TEST(Toolchain, ReadsATorchInstallation) {
  fakes::MemFileSystem fs;
  fs.put("/t/version.py", "__version__ = '2.11.0'\ncuda = '13.0'\ngit_version = 'abc'\n");
  fs.put("/t/include/torch/library.h", "");
  fs.put("/t/lib/libc10.so", std::string("\x7f"
                                         "ELF...") +
                                 "_ZNKSt7__cxx1112basic_string");
  auto torch = read_torch_install(fs, "/t");
  ASSERT_TRUE(torch) << torch.error().message;
  EXPECT_TRUE(torch->cxx11_abi);
  EXPECT_EQ(torch->include_dirs()[1], "/t/include/torch/csrc/api/include");
  fs.put("/t/lib/libc10.so", "no new abi here");
  EXPECT_FALSE(read_torch_install(fs, "/t")->cxx11_abi);
}

TEST(Toolchain, MissingTorchIsAToolchainErrorWithAHint) {
  fakes::MemFileSystem fs;
  fakes::FakeLauncher launcher;
  fs.put("/py/include/Python.h", "");
  launcher.answers["python3 -c " + std::string(python_probe_script())] = {
      0, R"({"version": "3.11", "include": "/py/include", "torch": null})", ""};
  PythonHeaders headers;
  auto torch = probe_torch_from_python(launcher, fs, "python3", headers);
  ASSERT_FALSE(torch);
  EXPECT_EQ(torch.error().code, ExitCode::toolchain);
  EXPECT_EQ(torch.error().message, "torch is not installed for \"python3\"");
  EXPECT_NE(torch.error().hint.find("--python"), std::string::npos);
  EXPECT_EQ(headers.version, "3.11");
}

TEST(Toolchain, ADebianPythonsMultiarchPyconfigIsCarriedWithItsHeaders) {
  fakes::MemFileSystem fs;
  fakes::FakeLauncher launcher;
  fs.put("/usr/include/python3.12/Python.h", "");
  fs.put("/usr/include/python3.12/pyconfig.h", "#  include <x86_64-linux-gnu/python3.12/pyconfig.h>\n");
  fs.put("/usr/include/x86_64-linux-gnu/python3.12/pyconfig.h", "#define HAVE_X 1\n");
  const std::string probe = "python3 -c " + std::string(python_probe_script());
  launcher.answers[probe] = {
      0, R"({"version": "3.12", "include": "/usr/include/python3.12", "torch": null, "multiarch": "x86_64-linux-gnu"})",
      ""};
  std::optional<std::filesystem::path> torch_root;
  auto headers = probe_python(launcher, fs, "python3", torch_root);
  ASSERT_TRUE(headers) << headers.error().message;
  EXPECT_EQ(headers->multiarch_header, "x86_64-linux-gnu/python3.12/pyconfig.h");
  EXPECT_EQ(headers->multiarch_pyconfig, "#define HAVE_X 1\n");
  // A self-contained pyconfig.h (pyenv, python.org builds) needs nothing more...
  fs.put("/usr/include/python3.12/pyconfig.h", "#define HAVE_X 1\n");
  headers = probe_python(launcher, fs, "python3", torch_root);
  ASSERT_TRUE(headers);
  EXPECT_EQ(headers->multiarch_header, "");
  // ...and a redirect to a header that is not there is an error that names it.
  fs.put("/usr/include/python3.12/pyconfig.h", "#  include <x86_64-linux-gnu/python3.12/pyconfig.h>\n");
  ASSERT_TRUE(fs.remove_all("/usr/include/x86_64-linux-gnu/python3.12/pyconfig.h"));
  headers = probe_python(launcher, fs, "python3", torch_root);
  ASSERT_FALSE(headers);
  EXPECT_NE(headers.error().message.find("/usr/include/x86_64-linux-gnu/python3.12/pyconfig.h"), std::string::npos);
  EXPECT_NE(headers.error().hint.find("python3-dev"), std::string::npos);
}

TEST(Toolchain, IdentifiesACudaToolkit) {
  fakes::MemFileSystem fs;
  fakes::FakeLauncher launcher;
  fs.put("/cuda/bin/nvcc", "", true);
  fs.put("/cuda/targets/x86_64-linux/include/cuda_runtime_api.h", "");
  fs.put("/cuda/targets/x86_64-linux/lib/libcudart.so", "");
  launcher.answers["/cuda/bin/nvcc --version"] = {0, "Cuda compilation tools, release 13.2, V13.2.51\n", ""};
  auto cuda = identify_cuda(launcher, fs, "/cuda", "wheels");
  ASSERT_TRUE(cuda) << cuda.error().message;
  EXPECT_EQ(cuda->version.major_minor(), "13.2");
  EXPECT_EQ(cuda->include_dir, "/cuda/targets/x86_64-linux/include");
  EXPECT_EQ(cuda->lib_dir, "/cuda/targets/x86_64-linux/lib");
}

TEST(Toolchain, IdentityCoversCompilerVersions) {
  Toolchain a;
  a.torch.version_string = "2.11.0";
  Toolchain b = a;
  b.cxx.version = "13.1";
  EXPECT_NE(a.identity(), b.identity());
  EXPECT_EQ(cxx_standard_for(util::Version({2, 11})), "c++17");
  EXPECT_EQ(cxx_standard_for(util::Version({2, 12})), "c++20");
}

TEST(HeaderLibraries, CutlassDependenciesMapToKernelBuildersReleases) {
  using kbuild::toolchain::cutlass_release;
  using kbuild::toolchain::provided_dependency;
  struct Expected {
    std::string dependency, major_minor, release;
    bool on_pypi;
  };
  for (const auto& expected : std::vector<Expected>{{"cutlass_2_10", "2.10", "2.10.0", false},
                                                    {"cutlass_3_5", "3.5", "3.5.1", true},
                                                    {"cutlass_3_6", "3.6", "3.6.0", true},
                                                    {"cutlass_3_8", "3.8", "3.8.0", true},
                                                    {"cutlass_3_9", "3.9", "3.9.2", false},
                                                    {"cutlass_4_0", "4.0", "4.0.0", false},
                                                    {"cutlass_4_4", "4.4", "4.4.2", false},
                                                    {"cutlass_4_5", "4.5", "4.5.2", false}}) {
    auto provided = provided_dependency(expected.dependency);
    ASSERT_TRUE(provided) << expected.dependency;
    EXPECT_EQ(provided->first, "cutlass");
    EXPECT_EQ(provided->second.major_minor(), expected.major_minor);
    auto release = cutlass_release(expected.dependency);
    ASSERT_TRUE(release);
    EXPECT_EQ(release->version, expected.release);
    EXPECT_EQ(release->on_pypi, expected.on_pypi) << expected.dependency;
  }
  for (const char* missing : {"cutlass_4_1", "cutlass", "torch", "sycl_tla", "metal-cpp"})
    EXPECT_FALSE(provided_dependency(missing)) << missing;
  auto lock = kbuild::toolchain::LockFile::parse(
      R"({"version": 1, "python-tag": "cp312", "toolchains": {"cutlass-3.6": [{"package": "nvidia-cutlass", )"
      R"("version": "3.6.0.0", "file": "nvidia_cutlass-3.6.0.0-py3-none-any.whl", "sha256": ")" +
          std::string(64, 'a') + R"("}]}})",
      "kbuild.lock");
  ASSERT_TRUE(lock) << lock.error().message;
  EXPECT_TRUE(lock->find("cutlass-3.6"));
}

TEST(HeaderLibraries, SourceArchiveEntriesAndVersionHeader) {
  using kbuild::toolchain::cutlass_archive_entry;
  using kbuild::toolchain::cutlass_header_version;
  EXPECT_EQ(cutlass_archive_entry("cutlass-4.0.0/include/cute/tensor.hpp"), "include/cute/tensor.hpp");
  EXPECT_EQ(cutlass_archive_entry("mirror-top/tools/util/include/cutlass/util/packed_stride.hpp"),
            "tools/util/include/cutlass/util/packed_stride.hpp");
  EXPECT_FALSE(cutlass_archive_entry("cutlass-4.0.0/examples/00_basic_gemm/basic_gemm.cu"));
  EXPECT_FALSE(cutlass_archive_entry("include/cutlass/cutlass.h"));  // no top directory
  EXPECT_FALSE(cutlass_archive_entry("/include/cutlass/cutlass.h"));
  EXPECT_EQ(cutlass_header_version("#pragma once\n#define CUTLASS_MAJOR 4\n#define CUTLASS_MINOR 0\n"
                                   "  #define  CUTLASS_PATCH 0\n#define CUTLASS_BUILD 0\n"),
            "4.0.0");
  EXPECT_FALSE(cutlass_header_version("#define CUTLASS_MAJOR 4\n#define CUTLASS_MINOR 0\n"));
  EXPECT_FALSE(cutlass_header_version("#define CUTLASS_MAJOR x\n#define CUTLASS_MINOR 0\n#define CUTLASS_PATCH 0\n"));
  // A longer macro name is not the one asked for.
  EXPECT_FALSE(cutlass_header_version("#define CUTLASS_MAJOR_X 4\n#define CUTLASS_MINOR 0\n#define CUTLASS_PATCH 0\n"));
  // CUTLASS 2.x: the release from CMakeLists.txt (top level only), the header from its template.
  EXPECT_EQ(cutlass_archive_entry("cutlass-2.10.0/CMakeLists.txt"), "CMakeLists.txt");
  EXPECT_EQ(cutlass_archive_entry("cutlass-2.10.0/cmake/version.h.in"), "cmake/version.h.in");
  EXPECT_FALSE(cutlass_archive_entry("cutlass-2.10.0/examples/CMakeLists.txt"));
  using kbuild::toolchain::cutlass_cmake_version;
  EXPECT_EQ(cutlass_cmake_version("cmake_minimum_required(VERSION 3.12.4 FATAL_ERROR)\n\n"
                                  "project(CUTLASS VERSION 2.10.0 LANGUAGES CXX)\n"),
            "2.10.0");
  EXPECT_EQ(cutlass_cmake_version("project( CUTLASS VERSION 3.9.2)"), "3.9.2");
  EXPECT_FALSE(cutlass_cmake_version("cmake_minimum_required(VERSION 3.12.4)\nproject(Other VERSION 1.0.0)\n"));
  EXPECT_FALSE(cutlass_cmake_version("project(CUTLASS VERSION 2.10.0.1)"));
  EXPECT_EQ(
      kbuild::toolchain::render_cutlass_version_h(
          "#define CUTLASS_MINOR @CUTLASS_VERSION_MINOR@ @CUTLASS_VERSION_MINOR@\n\"@CUTLASS_REVISION@\"", "2.10.0"),
      "#define CUTLASS_MINOR 10 10\n\"\"");
  // One pass, as CMake's @ONLY: an emptied name does not join its neighbours into another one.
  EXPECT_EQ(kbuild::toolchain::render_cutlass_version_h("@CUTLASS_@CUTLASS_VERSION_BUILD@VERSION@ a@b.c @X@", "2.10.0"),
            "@CUTLASS_VERSION@ a@b.c @X@");
}
