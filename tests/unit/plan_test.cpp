#include <gtest/gtest.h>

#include <algorithm>

#include "kbuild/config/build_toml.hpp"
#include "kbuild/config/variant.hpp"
#include "kbuild/plan/cuda_archs.hpp"
#include "kbuild/plan/planner.hpp"
#include "kbuild/util/strings.hpp"

using namespace kbuild;
using namespace kbuild::plan;
using config::flatten_version;
using config::normalize_cpu;

TEST(Variant, NamesFollowTheSpec) {
  Variant cuda;
  cuda.torch = util::Version({2, 11});
  cuda.backend = config::Backend::cuda;
  cuda.cuda = util::Version({13, 0});
  EXPECT_EQ(cuda.name(), "torch211-cxx11-cu130-x86_64-linux");
  Variant cpu = cuda;
  cpu.backend = config::Backend::cpu;
  EXPECT_EQ(cpu.name(), "torch211-cxx11-cpu-x86_64-linux");
  cpu.torch = util::Version({2, 9});
  cpu.cxx11_abi = false;
  cpu.cpu = "aarch64";
  EXPECT_EQ(cpu.name(), "torch29-cpu-aarch64-linux");
  Variant noarch;
  noarch.kind = Variant::Kind::noarch;
  noarch.backend = config::Backend::cuda;
  EXPECT_EQ(noarch.name(), "torch-cuda");
}

TEST(Variant, ParseRoundTrips) {
  for (const char* name : {"torch211-cxx11-cu130-x86_64-linux", "torch212-cxx11-cu132-aarch64-linux",
                           "torch29-cxx11-cpu-x86_64-linux", "torch-cpu", "torch-cuda"}) {
    auto variant = Variant::parse(name);
    ASSERT_TRUE(variant) << name;
    EXPECT_EQ(variant->name(), name);
  }
  // Every kind of the table: its names parse back to it, and its properties say what it needs.
  for (const char* name : {"torch-stable-abi211-cu130-x86_64-linux", "tvm-ffi01-cpu-aarch64-linux"}) {
    auto variant = Variant::parse(name);
    ASSERT_TRUE(variant) << name;
    EXPECT_EQ(variant->name(), name);
  }
  auto stable = *Variant::parse("torch-stable-abi211-cpu-x86_64-linux");
  EXPECT_EQ(stable.kind, Variant::Kind::stable_abi);
  EXPECT_TRUE(stable.traits().torch_target_version && stable.traits().stable_abi_gate);
  EXPECT_EQ(stable.traits().loads_with, config::TorchMatch::at_least);
  auto tvm = *Variant::parse("tvm-ffi01-cpu-x86_64-linux");
  EXPECT_EQ(tvm.kind, Variant::Kind::tvm_ffi);
  EXPECT_EQ(tvm.tvm_ffi, util::Version({0, 1}));
  EXPECT_TRUE(tvm.traits().tvm_ffi_toolchain && !tvm.traits().torch_toolchain);
  EXPECT_EQ(tvm.traits().library_suffix, ".so");
  EXPECT_FALSE(Variant::parse("torch-cpu")->compiled());
  EXPECT_FALSE(Variant::parse("tvm-ffi01-cxx11-cpu-x86_64-linux"));  // only Torch's C++ ABI has a tag
  EXPECT_FALSE(Variant::parse("torch-stable-abi211-cxx11-cpu-x86_64-linux"));
  EXPECT_FALSE(Variant::parse("torch211-cxx11-rocm71-x86_64-linux"));
  EXPECT_FALSE(Variant::parse("torch211-cxx11-cu130-x86_64"));
  EXPECT_FALSE(Variant::parse("build"));
  EXPECT_EQ(normalize_cpu("amd64"), "x86_64");
  EXPECT_EQ(normalize_cpu("arm64"), "aarch64");
}

TEST(OpsId, IsPythonNameBackendAndUniqueId) {
  EXPECT_EQ(ops_id("img2gray", config::Backend::cuda, "7a4e5a7"), "_img2gray_cuda_7a4e5a7");
  EXPECT_EQ(ops_id("flash_attn", config::Backend::cpu, "7645816_dirty"), "_flash_attn_cpu_7645816_dirty");
}

TEST(CudaArchs, DefaultsByToolkitVersion) {
  EXPECT_EQ(util::join(default_cuda_capabilities(util::Version({13, 0})), ";"),
            "7.5;8.0;8.6;8.7;8.9;9.0;10.0;11.0;12.0;12.1+PTX");
  EXPECT_EQ(util::join(default_cuda_capabilities(util::Version({12, 8})), ";"),
            "7.0;7.2;7.5;8.0;8.6;8.7;8.9;9.0;10.0;10.1;12.0+PTX");
  EXPECT_EQ(util::join(default_cuda_capabilities(util::Version({12, 6})), ";"), "7.0;7.2;7.5;8.0;8.6;8.7;8.9;9.0+PTX");
}

TEST(CudaArchs, LooseIntersectionExamplesOfKernelBuilder) {
  // The examples documented with cuda_archs_loose_intersection.
  EXPECT_EQ(util::join(loose_intersection({"7.5", "8.0", "8.6", "9.0", "9.0a"}, {"8.0", "8.9", "9.0"}), ";"),
            "8.0;8.6;9.0a");
  EXPECT_EQ(util::join(loose_intersection({"8.0+PTX"}, {"9.0"}), ";"), "8.0+PTX");
  // Same-major rule: 8.6 cannot serve 9.0 without PTX.
  EXPECT_EQ(util::join(loose_intersection({"8.6"}, {"8.0", "8.9", "9.0"}), ";"), "8.6");
  EXPECT_TRUE(loose_intersection({"6.0"}, {"7.5", "8.0"}).empty());
}

TEST(CudaArchs, EffectiveCapabilitiesAndGencode) {
  EXPECT_EQ(util::join(effective_cuda_capabilities({"9.0", "10.0"}, util::Version({13, 0})), ";"), "9.0;10.0");
  EXPECT_EQ(effective_cuda_capabilities({}, util::Version({13, 0})).size(), 10u);
  EXPECT_EQ(util::join(gencode_flags({"9.0", "12.1+PTX"}), " "),
            "-gencode arch=compute_90,code=sm_90 -gencode arch=compute_121,code=sm_121 "
            "-gencode arch=compute_121,code=compute_121");
  EXPECT_EQ(util::join(gencode_flags({"9.0a"}), " "), "-gencode arch=compute_90a,code=sm_90a");
}

TEST(Planner, CompileKinds) {
  EXPECT_EQ(compile_kind("a/b.cu"), JobKind::compile_cuda);
  EXPECT_EQ(compile_kind("a/b.cpp"), JobKind::compile_cxx);
  EXPECT_FALSE(compile_kind("a/b.h").has_value());
  EXPECT_FALSE(compile_kind("a/b.cuh").has_value());
}

namespace {

const char* k_config = R"([general]
name = "img2gray"
version = 1
edition = 5
license = "Apache-2.0"
backends = ["cpu", "cuda"]

[torch]
src = ["torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h"]

[kernel.gray_cuda]
backend = "cuda"
depends = ["torch"]
src = ["gray/gray.cu", "gray/cpu.cpp"]
cuda-capabilities = ["9.0", "10.0"]

[kernel.gray_cpu]
backend = "cpu"
depends = ["torch"]
src = ["gray/cpu.cpp"]
)";

toolchain::Toolchain fake_toolchain() {
  toolchain::Toolchain tc;
  tc.torch.version = util::Version({2, 11, 0});
  tc.torch.version_string = "2.11.0+cu130";
  tc.torch.root = "/venv/torch";
  tc.torch.cuda = util::Version({13, 0});
  toolchain::CudaToolkit cuda;
  cuda.version = util::Version({13, 0, 88});
  cuda.root = "/cuda";
  cuda.nvcc = "/cuda/bin/nvcc";
  cuda.include_dir = "/cuda/include";
  cuda.lib_dir = "/cuda/lib64";
  tc.cuda = cuda;
  tc.cxx = {"/usr/bin/g++", "12.2.0", "x86_64-linux-gnu"};
  tc.python.include_dir = "/py/include";
  tc.python.version = "3.11";
  return tc;
}

struct PlanFixture : ::testing::Test {
  config::KernelConfig config = *config::parse_build_toml(k_config, "build.toml").config;
  toolchain::Toolchain tc = fake_toolchain();

  PlanRequest request(std::vector<config::Backend> backends) {
    PlanRequest r;
    r.config = &config;
    r.kernel_dir = "/k";
    r.work_dir = "/k/.kbuild";
    r.output_dir = "/k/build";
    r.unique_id = "abc1234";
    r.package_files = {"__init__.py", "helpers.py", "types.pyi", "__pycache__/x.pyc"};
    r.builder_version = "kbuild/test";
    r.nvcc_threads = 4;
    for (auto backend : backends) {
      Variant v;
      v.torch = util::Version({2, 11});
      v.backend = backend;
      if (backend == config::Backend::cuda) v.cuda = util::Version({13, 0});
      r.variants.push_back({v, &tc});
    }
    return r;
  }
  static const Job* find(const JobGraph& graph, const std::string& id) {
    for (const auto& job : graph.jobs)
      if (job.id == id) return &job;
    return nullptr;
  }
  static bool has(const std::vector<std::string>& argv, const std::string& arg) {
    return std::find(argv.begin(), argv.end(), arg) != argv.end();
  }
};

}  // namespace

TEST_F(PlanFixture, OneJobPerTranslationUnitLinkAndInstallPerVariant) {
  auto graph = plan_build(request({config::Backend::cpu, config::Backend::cuda}));
  ASSERT_TRUE(graph) << graph.error().message;
  std::vector<std::string> ids;
  for (const auto& job : graph->jobs) ids.push_back(job.id);
  EXPECT_EQ(util::join(ids, "\n"),
            "generated\n"
            "torch211-cxx11-cpu-x86_64-linux/compile/torch-ext/torch_binding.cpp\n"
            "torch211-cxx11-cpu-x86_64-linux/compile/generated/glibc_compat.cpp\n"
            "torch211-cxx11-cpu-x86_64-linux/compile/gray/cpu.cpp\n"
            "torch211-cxx11-cpu-x86_64-linux/link\n"
            "torch211-cxx11-cpu-x86_64-linux/install\n"
            "torch211-cxx11-cu130-x86_64-linux/compile/torch-ext/torch_binding.cpp\n"
            "torch211-cxx11-cu130-x86_64-linux/compile/generated/glibc_compat.cpp\n"
            "torch211-cxx11-cu130-x86_64-linux/compile/gray/gray.cu\n"
            "torch211-cxx11-cu130-x86_64-linux/compile/gray/cpu.cpp\n"
            "torch211-cxx11-cu130-x86_64-linux/link\n"
            "torch211-cxx11-cu130-x86_64-linux/install");
}

TEST_F(PlanFixture, CompileConventions) {
  auto graph = plan_build(request({config::Backend::cuda}));
  ASSERT_TRUE(graph);
  const Job* binding = find(*graph, "torch211-cxx11-cu130-x86_64-linux/compile/torch-ext/torch_binding.cpp");
  ASSERT_TRUE(binding);
  for (const char* flag :
       {"-std=c++17", "-fno-gnu-unique", "-fPIC", "-DTORCH_EXTENSION_NAME=_img2gray_cuda_abc1234",
        "-DPy_LIMITED_API=0x03090000", "-D_GLIBCXX_USE_CXX11_ABI=1", "-DCUDA_KERNEL", "-I/k/.kbuild/generated"})
    EXPECT_TRUE(has(binding->argv, flag)) << flag;
  EXPECT_EQ(binding->argv.front(), "/usr/bin/g++");
  EXPECT_EQ(binding->deps, std::vector<size_t>{0});  // waits for registration.h

  const Job* cu = find(*graph, "torch211-cxx11-cu130-x86_64-linux/compile/gray/gray.cu");
  ASSERT_TRUE(cu);
  EXPECT_EQ(cu->argv.front(), "/cuda/bin/nvcc");
  EXPECT_TRUE(has(cu->argv, "arch=compute_90,code=sm_90"));
  EXPECT_TRUE(has(cu->argv, "arch=compute_100,code=sm_100"));
  EXPECT_FALSE(has(cu->argv, "arch=compute_75,code=sm_75"));
  EXPECT_TRUE(has(cu->command_line(), "--threads"));
  EXPECT_TRUE(has(cu->argv, "-MD"));
  // Flag parity with kernel-builder (docs/build-toml.md): Torch's CUDA flags and -DENABLE_FP8 on every .cu.
  for (const char* flag : {"--expt-relaxed-constexpr", "--expt-extended-lambda", "-DENABLE_FP8",
                           "-DONNX_NAMESPACE=onnx_c2", "-Xcudafe", "-DUSE_C10D_NCCL", "-DUSE_DISTRIBUTED"})
    EXPECT_TRUE(has(cu->argv, flag)) << flag;
  for (const char* flag : {"--expt-extended-lambda", "-DENABLE_FP8"})
    EXPECT_FALSE(has(binding->argv, flag)) << flag << " is for nvcc only";
  EXPECT_TRUE(has(binding->argv, "-DUSE_DISTRIBUTED"));
  EXPECT_EQ(cu->outputs.front(), "/k/.kbuild/torch211-cxx11-cu130-x86_64-linux/obj/gray/gray.cu.o");
  EXPECT_EQ(*cu->temp_output, "/k/.kbuild/torch211-cxx11-cu130-x86_64-linux/obj/gray/gray.cu.o.tmp");

  const Job* link = find(*graph, "torch211-cxx11-cu130-x86_64-linux/link");
  ASSERT_TRUE(link);
  EXPECT_EQ(link->deps.size(), 4u);
  EXPECT_TRUE(has(link->argv, "-lcudart"));
  EXPECT_TRUE(has(link->argv, "-shared"));
  EXPECT_EQ(link->outputs.front().filename(), "_img2gray_cuda_abc1234.abi3.so");
}

TEST_F(PlanFixture, ADebianPythonsMultiarchPyconfigIsWrittenInTheTreeForEveryCompile) {
  tc.python.multiarch_header = "x86_64-linux-gnu/python3.12/pyconfig.h";
  tc.python.multiarch_pyconfig = "#define X 1\n";
  auto graph = plan_build(request({config::Backend::cpu, config::Backend::cuda}));
  ASSERT_TRUE(graph) << graph.error().message;
  const Job* generate = find(*graph, "generated");
  ASSERT_TRUE(generate);
  const auto& files = std::get<WriteFiles>(generate->action).files;
  ASSERT_EQ(files.size(), 3u);  // registration.h, glibc_compat.cpp and the one header of both variants
  EXPECT_EQ(files[2].first, "/k/.kbuild/generated/python-multiarch/x86_64-linux-gnu/python3.12/pyconfig.h");
  EXPECT_EQ(files[2].second, "#define X 1\n");
  EXPECT_EQ(generate->outputs.size(), 3u);
  size_t compiles = 0;
  for (const auto& job : graph->jobs) {
    if (job.kind != JobKind::compile_cxx && job.kind != JobKind::compile_cuda) continue;
    ++compiles;
    auto line = util::shell_join(job.argv);
    EXPECT_NE(line.find("-isystem /k/.kbuild/generated/python-multiarch"), std::string::npos) << job.id;
    EXPECT_EQ(job.deps, std::vector<size_t>{0}) << job.id;  // the header is written first
  }
  EXPECT_EQ(compiles, 7u);
  // Another pyconfig.h is another generate key: the header is rewritten.
  std::string key = generate->key;
  tc.python.multiarch_pyconfig = "#define X 2\n";
  EXPECT_NE(find(*plan_build(request({config::Backend::cpu})), "generated")->key, key);
}

TEST_F(PlanFixture, EveryUnitSeesTheKernelsCsrcFirstAsWithKernelBuilder) {
  auto graph = plan_build(request({config::Backend::cpu, config::Backend::cuda}));
  ASSERT_TRUE(graph);
  size_t compiles = 0;
  for (const auto& job : graph->jobs) {
    if (job.kind != JobKind::compile_cxx && job.kind != JobKind::compile_cuda) continue;
    ++compiles;
    auto csrc = std::find(job.argv.begin(), job.argv.end(), "-I/k/csrc");
    ASSERT_NE(csrc, job.argv.end()) << job.id;
    auto first_include =
        std::find_if(job.argv.begin(), job.argv.end(), [](const auto& a) { return a.starts_with("-I"); });
    EXPECT_EQ(csrc, first_include) << job.id;
  }
  EXPECT_EQ(compiles, 7u);
}

TEST_F(PlanFixture, CxxFlagsReachTheCxxCompilerOnlyAndCudaFlagsNvccOnly) {
  std::string text = k_config;
  text.replace(text.find("cuda-capabilities"), 0, "cxx-flags = [\"-fopenmp-simd\"]\ncuda-flags = [\"-lineinfo\"]\n");
  config = *config::parse_build_toml(text, "build.toml").config;
  auto graph = plan_build(request({config::Backend::cuda}));
  ASSERT_TRUE(graph);
  const Job* cu = find(*graph, "torch211-cxx11-cu130-x86_64-linux/compile/gray/gray.cu");
  const Job* cpp = find(*graph, "torch211-cxx11-cu130-x86_64-linux/compile/gray/cpu.cpp");
  ASSERT_TRUE(cu && cpp);
  EXPECT_TRUE(has(cu->argv, "-lineinfo"));
  EXPECT_FALSE(has(cpp->argv, "-lineinfo"));
  EXPECT_TRUE(has(cpp->argv, "-fopenmp-simd"));
  for (const auto& arg : cu->argv) EXPECT_EQ(arg.find("-fopenmp-simd"), std::string::npos) << arg;
}

TEST_F(PlanFixture, CppStandardFollowsTorchVersion) {
  tc.torch.version = util::Version({2, 13, 0});
  auto graph = plan_build(request({config::Backend::cpu}));
  ASSERT_TRUE(graph);
  EXPECT_TRUE(has(graph->jobs[1].argv, "-std=c++20"));
}

TEST_F(PlanFixture, InstallShipsPythonFilesOpsAndLibrary) {
  auto graph = plan_build(request({config::Backend::cpu}));
  ASSERT_TRUE(graph);
  const Job* install = find(*graph, "torch211-cxx11-cpu-x86_64-linux/install");
  ASSERT_TRUE(install);
  std::vector<std::string> outputs;
  for (const auto& path : install->outputs) outputs.push_back(path.string());
  EXPECT_EQ(util::join(outputs, " "),
            "/k/build/torch211-cxx11-cpu-x86_64-linux/__init__.py "
            "/k/build/torch211-cxx11-cpu-x86_64-linux/_img2gray_cpu_abc1234.abi3.so "
            "/k/build/torch211-cxx11-cpu-x86_64-linux/_ops.py "
            "/k/build/torch211-cxx11-cpu-x86_64-linux/helpers.py "
            "/k/build/torch211-cxx11-cpu-x86_64-linux/metadata.json");
}

TEST_F(PlanFixture, KeysChangeWithToolchainIdentity) {
  auto first = plan_build(request({config::Backend::cpu}));
  tc.cxx.version = "13.1.0";
  auto second = plan_build(request({config::Backend::cpu}));
  ASSERT_TRUE(first && second);
  EXPECT_NE(first->jobs[1].key, second->jobs[1].key);
}

TEST_F(PlanFixture, NvccParallelismIsNotPartOfTheKey) {
  auto four = request({config::Backend::cuda});
  auto one = request({config::Backend::cuda});
  one.nvcc_threads = 1;
  auto first = plan_build(four);
  auto second = plan_build(one);
  ASSERT_TRUE(first && second);
  size_t cuda_jobs = 0;
  for (size_t i = 0; i < first->jobs.size(); ++i) {
    if (first->jobs[i].kind != JobKind::compile_cuda) continue;
    ++cuda_jobs;
    EXPECT_NE(first->jobs[i].command_line(), second->jobs[i].command_line());
    EXPECT_EQ(first->jobs[i].key, second->jobs[i].key) << first->jobs[i].id;
  }
  EXPECT_GT(cuda_jobs, 0u);
}

TEST_F(PlanFixture, UnsupportedDependencyIsAnError) {
  config.kernels[1].depends.push_back("cutlass_3_8");
  auto graph = plan_build(request({config::Backend::cuda}));
  ASSERT_FALSE(graph);
  EXPECT_NE(graph.error().message.find("cutlass_3_8"), std::string::npos);  // not provisioned
  config.kernels[1].depends.back() = "sycl_tla";
  auto refused = plan_build(request({config::Backend::cuda}));
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("\"sycl_tla\", which kbuild cannot provide"), std::string::npos);
  EXPECT_EQ(refused.error().code, kbuild::ExitCode::usage);
}

TEST_F(PlanFixture, NoarchVariantOnlyInstalls) {
  PlanRequest r = request({});
  Variant v;
  v.kind = Variant::Kind::noarch;
  v.backend = config::Backend::cuda;
  r.variants.push_back({v, nullptr});
  auto graph = plan_build(r);
  ASSERT_TRUE(graph);
  ASSERT_EQ(graph->jobs.size(), 1u);
  EXPECT_EQ(graph->jobs[0].id, "torch-cuda/install");
}

TEST_F(PlanFixture, TorchFreeComponentsUseOneStandardForEveryTorchVersion) {
  config.kernels[1].depends.clear();  // gray_cuda no longer depends on torch
  auto graph = plan_build(request({config::Backend::cuda}));
  ASSERT_TRUE(graph);
  EXPECT_TRUE(has(find(*graph, "torch211-cxx11-cu130-x86_64-linux/compile/gray/gray.cu")->argv, "-std=c++20"));
  EXPECT_TRUE(
      has(find(*graph, "torch211-cxx11-cu130-x86_64-linux/compile/torch-ext/torch_binding.cpp")->argv, "-std=c++17"));
}

TEST(Variant, StableAbiNamesCarryTheTargetVersionAndNoAbiTag) {
  Variant stable;
  stable.kind = Variant::Kind::stable_abi;
  stable.torch = util::Version({2, 11});
  stable.backend = config::Backend::cuda;
  stable.cuda = util::Version({13, 0});
  EXPECT_EQ(stable.name(), "torch-stable-abi211-cu130-x86_64-linux");
  stable.backend = config::Backend::cpu;
  stable.cxx11_abi = true;
  EXPECT_EQ(stable.name(), "torch-stable-abi211-cpu-x86_64-linux");
  for (const char* name : {"torch-stable-abi211-cpu-x86_64-linux", "torch-stable-abi210-cu132-aarch64-linux"}) {
    auto variant = Variant::parse(name);
    ASSERT_TRUE(variant) << name;
    EXPECT_EQ(variant->kind, Variant::Kind::stable_abi);
    EXPECT_TRUE(variant->compiled());
    EXPECT_EQ(variant->name(), name);
  }
  EXPECT_EQ(Variant::parse("torch-stable-abi211-cu130-x86_64-linux")->torch, util::Version({2, 11}));
  EXPECT_FALSE(Variant::parse("torch-stable-abi211-cxx11-cpu-x86_64-linux"));
  EXPECT_FALSE(Variant::parse("torch-stable-abi-cpu-x86_64-linux"));
}

TEST(Planner, TorchTargetVersionIsKernelBuildersHex) {
  EXPECT_EQ(torch_target_version_define(util::Version({2, 11})), "-DTORCH_TARGET_VERSION=0x20b000000000000");
  EXPECT_EQ(torch_target_version_define(util::Version({2, 10})), "-DTORCH_TARGET_VERSION=0x20a000000000000");
  EXPECT_EQ(torch_target_version_define(util::Version({3, 0})), "-DTORCH_TARGET_VERSION=0x300000000000000");
}

TEST(Variant, TvmFfiNamesCarryTheTvmFfiSeries) {
  Variant tvm;
  tvm.kind = Variant::Kind::tvm_ffi;
  tvm.tvm_ffi = util::Version({0, 1});
  tvm.backend = config::Backend::cuda;
  tvm.cuda = util::Version({13, 0});
  EXPECT_EQ(tvm.name(), "tvm-ffi01-cu130-x86_64-linux");
  auto parsed = Variant::parse("tvm-ffi01-cpu-aarch64-linux");
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->kind, Variant::Kind::tvm_ffi);
  EXPECT_EQ(parsed->tvm_ffi, util::Version({0, 1}));
  EXPECT_EQ(parsed->name(), "tvm-ffi01-cpu-aarch64-linux");
  EXPECT_FALSE(Variant::parse("tvm-ffi01-cxx11-cpu-x86_64-linux"));
}

TEST(CudaArchs, CapabilitiesACudaVersionDoesNotBuildAreNamed) {
  // CUDA 13 builds 7.5 as its oldest: 7.0 would serve it, but 7.5 is requested too, so 7.0 serves
  // nothing; 3.5 has no architecture of its major at all.
  auto cuda13 = *util::Version::parse("13.0");
  EXPECT_EQ(plan::unsupported_cuda_capabilities({"3.5", "7.0", "7.5", "8.0", "12.0+PTX"}, cuda13),
            (std::vector<std::string>{"3.5", "7.0"}));
  EXPECT_TRUE(plan::unsupported_cuda_capabilities({"7.0", "8.0"}, cuda13).empty());
  EXPECT_TRUE(plan::unsupported_cuda_capabilities({}, cuda13).empty());
}
