#include <gtest/gtest.h>

#include "kbuild/toolchain/archive.hpp"
#include "kbuild/toolchain/lock.hpp"
#include "kbuild/toolchain/provision.hpp"
#include "support/mem_fs.hpp"

using namespace kbuild::toolchain;

namespace {
LockFile sample() {
  LockFile lock;
  lock.toolchains["torch-2.15"] = {
      {"torch", "2.15.0", "torch-2.15.0-cp312-cp312-manylinux_2_28_x86_64.whl", std::string(64, 'a')}};
  lock.toolchains["cuda-13.2"] = {
      {"nvidia-cuda-nvcc", "13.2.86", "nvidia_cuda_nvcc-13.2.86-py3-none-any.whl", std::string(64, 'b')}};
  return lock;
}
}  // namespace

TEST(Lock, RoundTripsSorted) {
  std::string text = sample().serialize();
  EXPECT_LT(text.find("cuda-13.2"), text.find("torch-2.15"));
  EXPECT_TRUE(text.ends_with("}\n"));
  auto parsed = LockFile::parse(text, "kbuild.lock");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(*parsed, sample());
  EXPECT_EQ(parsed->find("torch-2.15")->front().version, "2.15.0");
  EXPECT_EQ(parsed->find("torch-2.14"), nullptr);
}

TEST(Lock, RejectsDamage) {
  std::string text = sample().serialize();
  auto bad_sha = text;
  bad_sha.replace(bad_sha.find(std::string(64, 'a')), 64, "zz");
  EXPECT_FALSE(LockFile::parse(bad_sha, "kbuild.lock"));
  auto traversal = text;
  traversal.replace(traversal.find("torch-2.15.0-cp312"), 5, "../..");
  EXPECT_FALSE(LockFile::parse(traversal, "kbuild.lock"));
  EXPECT_FALSE(LockFile::parse("{\"version\": 2}", "kbuild.lock"));
  auto error = LockFile::parse("not json", "kbuild.lock");
  ASSERT_FALSE(error);
  EXPECT_NE(error.error().hint.find("kbuild toolchains lock"), std::string::npos);
}

TEST(Archive, PathSafety) {
  EXPECT_TRUE(is_safe_archive_path("torch/include/ATen/ATen.h"));
  EXPECT_TRUE(is_safe_archive_path("nvidia/cu13/bin/"));
  EXPECT_FALSE(is_safe_archive_path("/etc/passwd"));
  EXPECT_FALSE(is_safe_archive_path("../escape"));
  EXPECT_FALSE(is_safe_archive_path("torch/../../escape"));
  EXPECT_FALSE(is_safe_archive_path("torch//x"));
  EXPECT_FALSE(is_safe_archive_path("torch\\..\\x"));
  EXPECT_FALSE(is_safe_archive_path("./x"));
  EXPECT_FALSE(is_safe_archive_path(""));
}

TEST(Archive, WheelEntrySelection) {
  EXPECT_EQ(torch_wheel_entry("torch/include/torch/library.h"), "torch/include/torch/library.h");
  EXPECT_EQ(torch_wheel_entry("torch/lib/libtorch_cpu.so"), "torch/lib/libtorch_cpu.so");
  EXPECT_EQ(torch_wheel_entry("torch/version.py"), "torch/version.py");
  EXPECT_FALSE(torch_wheel_entry("torch/lib/libtorch_python.so"));
  EXPECT_FALSE(torch_wheel_entry("torch/nn/modules/linear.py"));
  EXPECT_EQ(cuda_wheel_entry("nvidia/cu13/bin/nvcc"), "bin/nvcc");
  EXPECT_EQ(cuda_wheel_entry("nvidia/cu13/nvvm/bin/cicc"), "nvvm/bin/cicc");
  EXPECT_FALSE(cuda_wheel_entry("nvidia_cuda_nvcc-13.2.86.dist-info/RECORD"));
  EXPECT_FALSE(cuda_wheel_entry("nvidia/cu13/cuda_cccl/.metadata/x"));
}

#include <unistd.h>
#include <zip.h>

#include <filesystem>
#include <fstream>

namespace {
// Writes a zip with the given (name, content) entries using libzip.
void write_zip(const std::filesystem::path& path, const std::vector<std::pair<std::string, std::string>>& entries) {
  int error = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
  ASSERT_NE(z, nullptr);
  for (const auto& [name, content] : entries) {
    zip_source_t* source = zip_source_buffer(z, content.data(), content.size(), 0);
    ASSERT_GE(zip_file_add(z, name.c_str(), source, ZIP_FL_ENC_UTF_8), 0) << name;
  }
  ASSERT_EQ(zip_close(z), 0);
}
}  // namespace

TEST(Archive, ExtractsSelectedEntriesAndRefusesEscapes) {
  auto dir = std::filesystem::temp_directory_path() / ("kbuild-archive-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::string big(3u << 20, 'x');  // more than one piece of the streamed copy
  for (size_t i = 0; i < big.size(); i += 4096) big[i] = static_cast<char>('a' + (i / 4096) % 26);
  write_zip(dir / "good.whl", {{"torch/include/a.h", "A"}, {"torch/lib/libc10.so", big}, {"torch/nn/x.py", "py"}});
  // Through the filesystem seam: a fake one gets exactly the selected files.
  kbuild::fakes::MemFileSystem memory;
  auto stats = extract_zip(memory, dir / "good.whl", "/out", torch_wheel_entry);
  ASSERT_TRUE(stats) << stats.error().message;
  EXPECT_EQ(stats->files, 2u);
  EXPECT_EQ(stats->bytes, 1 + big.size());
  EXPECT_EQ(memory.content("/out/torch/include/a.h"), "A");
  EXPECT_EQ(memory.content("/out/torch/lib/libc10.so"), big);
  EXPECT_FALSE(memory.has("/out/torch/nn/x.py"));
  // The real one streams each member in pieces.
  kbuild::util::RealFileSystem real;
  ASSERT_TRUE(extract_zip(real, dir / "good.whl", dir / "out", torch_wheel_entry));
  EXPECT_EQ(*real.read_file(dir / "out/torch/lib/libc10.so"), big);
  EXPECT_FALSE(std::filesystem::exists(dir / "out/torch/nn/x.py"));

  write_zip(dir / "evil.whl", {{"torch/include/ok.h", "fine"}, {"torch/../../escaped.txt", "gotcha"}});
  auto refused =
      extract_zip(real, dir / "evil.whl", dir / "out2", [](const std::string& n) { return std::optional(n); });
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("outside the extraction directory"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir / "escaped.txt"));
  EXPECT_FALSE(std::filesystem::exists(dir / "out2"));  // refused before writing anything
  std::filesystem::remove_all(dir);
}
