#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "kbuild/config/build_toml.hpp"
#include "kbuild/config/update_build.hpp"
#include "support/mem_fs.hpp"

using namespace kbuild;
using namespace kbuild::config;

namespace {

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<std::string> expected_lines(const std::filesystem::path& toml) {
  std::vector<std::string> lines;
  auto expected = std::filesystem::path(toml).replace_extension(".expected");
  if (!std::filesystem::exists(expected)) return lines;
  std::istringstream in(read(expected));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

// "line:col: severity: message" for comparison with .expected files.
std::string short_form(const Diagnostic& d) {
  return std::to_string(d.location.line) + ":" + std::to_string(d.location.column) +
         (d.severity == Severity::error ? ": error: " : ": warning: ") + d.message;
}

void expect_diagnostics(const std::filesystem::path& file, const ParseOutcome& outcome) {
  auto expected = expected_lines(file);
  std::string actual_text;
  for (const auto& d : outcome.diagnostics) actual_text += short_form(d) + "\n";
  ASSERT_EQ(outcome.diagnostics.size(), expected.size()) << file << " gave:\n" << actual_text;
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_TRUE(short_form(outcome.diagnostics[i]).starts_with(expected[i]))
        << file << "\nexpected: " << expected[i] << "\nactual:   " << short_form(outcome.diagnostics[i]);
}

std::vector<std::filesystem::path> corpus(const std::string& kind) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(KBUILD_TEST_DATA) + "/build_toml/" + kind))
    if (entry.path().extension() == ".toml") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

const char* k_minimal = R"([general]
name = "img2gray"
version = 1
edition = 5
license = "Apache-2.0"
backends = ["cpu", "cuda"]

[torch]
src = ["torch-ext/torch_binding.cpp"]

[kernel.gray_cuda]
backend = "cuda"
depends = ["torch"]
src = ["gray/gray.cu", "gray/gray.h"]
cuda-capabilities = ["9.0"]

[kernel.gray_cpu]
backend = "cpu"
depends = ["torch"]
src = ["gray/gray.cpp"]
)";

}  // namespace

TEST(BuildToml, ValidCorpusParses) {
  auto files = corpus("valid");
  ASSERT_GE(files.size(), 5u);
  for (const auto& file : files) {
    auto outcome = parse_build_toml(read(file), file.string());
    EXPECT_TRUE(outcome.config.has_value()) << file << "\n" << format_diagnostics(outcome.diagnostics);
    expect_diagnostics(file, outcome);
  }
}

TEST(BuildToml, InvalidCorpusGivesExpectedDiagnostics) {
  auto files = corpus("invalid");
  ASSERT_GE(files.size(), 7u);
  for (const auto& file : files) {
    auto outcome = parse_build_toml(read(file), file.string());
    EXPECT_FALSE(outcome.config.has_value()) << file;
    expect_diagnostics(file, outcome);
  }
}

TEST(BuildToml, DiagnosticsCarryFileLineColumnAndHint) {
  auto outcome = parse_build_toml("[general]\nname = \"x\"\n", "k/build.toml");
  ASSERT_FALSE(outcome.diagnostics.empty());
  std::string text = format_diagnostic(outcome.diagnostics.front());
  EXPECT_TRUE(text.starts_with("k/build.toml:")) << text;
  EXPECT_NE(text.find("hint:"), std::string::npos) << text;
}

TEST(BuildToml, ModelOfAMinimalFile) {
  auto outcome = parse_build_toml(k_minimal, "build.toml");
  ASSERT_TRUE(outcome.config) << format_diagnostics(outcome.diagnostics);
  const KernelConfig& c = *outcome.config;
  EXPECT_EQ(c.general.name, "img2gray");
  EXPECT_EQ(c.general.python_name(), "img2gray");
  EXPECT_EQ(c.general.backends, (std::vector<Backend>{Backend::cpu, Backend::cuda}));
  ASSERT_EQ(c.kernels.size(), 2u);
  EXPECT_EQ(c.kernels[0].name, "gray_cpu");  // sorted by name
  EXPECT_EQ(c.kernels[1].cuda_capabilities, std::vector<std::string>{"9.0"});
  EXPECT_EQ(c.torch.pyext, (std::vector<std::string>{"py", "pyi"}));
  EXPECT_EQ(c.components_for(Backend::cuda).size(), 1u);
  EXPECT_EQ(c.source_edition, 5);
}

TEST(BuildToml, StableAbiStringAppliesToEveryBackend) {
  std::string text = std::string(k_minimal);
  text.insert(text.find("src = [\"torch-ext"), "stable-abi = \"2.11\"\n");
  auto outcome = parse_build_toml(text, "build.toml");
  ASSERT_TRUE(outcome.config) << format_diagnostics(outcome.diagnostics);
  EXPECT_EQ(outcome.config->torch.stable_abi.size(), 2u);
}

TEST(BuildToml, NamesAndUrls) {
  EXPECT_TRUE(is_valid_kernel_name("img2gray"));
  EXPECT_TRUE(is_valid_kernel_name("flash-attn3"));
  EXPECT_FALSE(is_valid_kernel_name("a"));
  EXPECT_FALSE(is_valid_kernel_name("2gray"));
  EXPECT_FALSE(is_valid_kernel_name("gray-"));
  EXPECT_FALSE(is_valid_kernel_name("Gray"));
  EXPECT_FALSE(is_valid_kernel_name("gray_x"));
  EXPECT_TRUE(is_valid_git_url("https://github.com/huggingface/kernels"));
  EXPECT_TRUE(is_valid_git_url("git@github.com:org/repo.git"));
  EXPECT_FALSE(is_valid_git_url("git@github.com:/abs"));
  EXPECT_FALSE(is_valid_git_url("ftp://example.com/x"));
  EXPECT_TRUE(is_valid_cuda_capability("9.0a"));
  EXPECT_TRUE(is_valid_cuda_capability("12.1+PTX"));
  EXPECT_FALSE(is_valid_cuda_capability("sm_90"));
}

TEST(BuildToml, ProjectFilesAreChecked) {
  fakes::MemFileSystem fs;
  fs.put("/k/torch-ext/torch_binding.cpp", "");
  fs.put("/k/gray/gray.cu", "");
  fs.put("/k/torch-ext/img2gray/__init__.py", "");
  auto outcome = parse_build_toml(k_minimal, "/k/build.toml");
  ASSERT_TRUE(outcome.config);
  auto problems = check_project_files(outcome, fs, "/k", "/k/build.toml");
  ASSERT_EQ(problems.size(), 2u);  // gray/gray.h and gray/gray.cpp are missing
  EXPECT_EQ(problems[0].message, "source file \"gray/gray.h\" does not exist");
  EXPECT_EQ(problems[0].location.line, 14);
  EXPECT_EQ(problems[1].message, "source file \"gray/gray.cpp\" does not exist");
}

TEST(BuildToml, LoadReportsMissingPackage) {
  fakes::MemFileSystem fs;
  fs.put("/k/build.toml", k_minimal);
  for (const char* f : {"torch-ext/torch_binding.cpp", "gray/gray.cu", "gray/gray.h", "gray/gray.cpp"})
    fs.put(std::string("/k/") + f, "");
  auto outcome = load_kernel_config(fs, "/k");
  EXPECT_FALSE(outcome.config);
  ASSERT_EQ(outcome.diagnostics.size(), 1u);
  EXPECT_NE(outcome.diagnostics[0].message.find("torch-ext/img2gray/__init__.py is missing"), std::string::npos);
}

TEST(BuildToml, LoadWithoutBuildTomlSaysWhatToDo) {
  fakes::MemFileSystem fs;
  (void)fs.make_dirs("/empty");
  auto outcome = load_kernel_config(fs, "/empty");
  ASSERT_EQ(outcome.diagnostics.size(), 1u);
  EXPECT_EQ(outcome.diagnostics[0].message, "no build.toml in /empty");
  EXPECT_NE(outcome.diagnostics[0].hint.find("kbuild init"), std::string::npos);
}

TEST(BuildToml, SourcesMustStayInsideTheKernelDirectory) {
  fakes::MemFileSystem fs;
  fs.put("/k/build.toml", R"([general]
name = "relu"
version = 1
edition = 5
license = "apache-2.0"
backends = ["cpu"]

[torch]
src = ["torch-ext/binding.cpp", "torch-ext/../torch-ext/x.cpp"]

[kernel.relu]
backend = "cpu"
depends = ["torch"]
src = ["relu/relu.cpp", "relu/secret.cpp"]
)");
  fs.put("/k/torch-ext/binding.cpp", "");
  fs.put("/k/torch-ext/relu/__init__.py", "");
  fs.put("/k/relu/relu.cpp", "");
  fs.put("/outside/secret.cpp", "");
  ASSERT_TRUE(fs.create_symlink("../../outside/secret.cpp", "/k/relu/secret.cpp"));
  auto outcome = load_kernel_config(fs, "/k");
  ASSERT_FALSE(outcome.config);
  std::string all = format_diagnostics(outcome.diagnostics);
  EXPECT_NE(all.find("must not contain \"..\""), std::string::npos) << all;
  EXPECT_NE(all.find("\"relu/secret.cpp\" leads outside the kernel directory"), std::string::npos) << all;
  EXPECT_EQ(all.find("\"relu/relu.cpp\""), std::string::npos) << all;  // the good one is fine
}

TEST(BuildToml, OnlyASmallRegularFileIsRead) {
  fakes::MemFileSystem fs;
  fs.put("/k/build.toml", std::string((1 << 20) + 1, '#'));
  auto big = load_kernel_config(fs, "/k");
  ASSERT_FALSE(big.config);
  EXPECT_NE(format_diagnostics(big.diagnostics).find("larger than 1 MiB"), std::string::npos);
  (void)fs.remove_all("/k/build.toml");
  ASSERT_TRUE(fs.make_dirs("/k/build.toml"));
  auto dir = load_kernel_config(fs, "/k");
  EXPECT_NE(format_diagnostics(dir.diagnostics).find("not a regular file"), std::string::npos);
}

TEST(UpdateBuild, AddsTheEditionKeepingEverythingElseAndIsIdempotent) {
  const std::string dir = std::string(KBUILD_TEST_DATA) + "/build_toml/";
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  std::string v4 = "# my kernel\n" + read(dir + "valid/v4_editionless.toml");
  auto updated = kbuild::config::update_build_toml(v4, "build.toml");
  ASSERT_TRUE(updated && *updated) << (updated ? "" : updated.error().message);
  std::string text = **updated;
  // Every original line is kept, in order; one line is added, after the [general] header.
  std::string without = text;
  without.erase(without.find("edition = 5\n"), std::string("edition = 5\n").size());
  EXPECT_EQ(without, v4);
  EXPECT_LT(text.find("[general]"), text.find("edition = 5"));
  auto parsed = kbuild::config::parse_build_toml(text, "build.toml");
  ASSERT_TRUE(parsed.config);
  EXPECT_EQ(parsed.edition, 5);
  auto again = kbuild::config::update_build_toml(text, "build.toml");
  ASSERT_TRUE(again);
  EXPECT_FALSE(*again);  // edition 5 already

  // v3 without a license: kernel-builder's verdict, in words.
  auto v3 = kbuild::config::update_build_toml(read(dir + "invalid/v3.toml"), "build.toml");
  ASSERT_FALSE(v3);
  EXPECT_NE(v3.error().message.find("`license` key is required"), std::string::npos) << v3.error().message;
  // v3 with a license: version 1 and the edition added, comments and order kept; no framework table
  // gives an empty [torch-noarch], as kernel-builder's conversion does.
  const std::string v3_text =
      "# my kernel\n[general]\nname = \"relu\" # the name\nlicense = \"Apache-2.0\"\nbackends = [\"cuda\"]\n\n"
      "[torch]\nsrc = [\"torch-ext/torch_binding.cpp\"]\n";
  auto converted = kbuild::config::update_build_toml(v3_text, "build.toml");
  ASSERT_TRUE(converted) << converted.error().message;
  ASSERT_TRUE(*converted);
  EXPECT_EQ(**converted,
            "# my kernel\n[general]\nedition = 5\nversion = 1\nname = \"relu\" # the name\n"
            "license = \"Apache-2.0\"\nbackends = [\"cuda\"]\n\n[torch]\nsrc = [\"torch-ext/torch_binding.cpp\"]\n");
  auto noarch = kbuild::config::update_build_toml(
      "[general]\nname = \"helpers\"\nversion = 2\nlicense = \"MIT\"\nbackends = [\"cpu\"]\n", "build.toml");
  ASSERT_TRUE(noarch) << noarch.error().message;
  ASSERT_TRUE(*noarch);
  EXPECT_NE((*noarch)->find("\n[torch-noarch]\n"), std::string::npos);
  EXPECT_EQ((*noarch)->find("version = 1"), std::string::npos);  // its own version kept
  auto reparsed = kbuild::config::parse_build_toml(**noarch, "build.toml");
  EXPECT_TRUE(reparsed.config);
  auto broken = kbuild::config::update_build_toml("[general]\nname = 1\n", "build.toml");
  ASSERT_FALSE(broken);
  EXPECT_EQ(broken.error().code, kbuild::ExitCode::usage);
}
