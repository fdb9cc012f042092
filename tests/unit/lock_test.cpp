#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "kbuild/toolchain/archive.hpp"
#include "kbuild/toolchain/lock.hpp"
#include "kbuild/toolchain/provision.hpp"
#include "kbuild/usecase/matrix_session.hpp"
#include "kbuild/util/hash.hpp"
#include "support/fakes.hpp"
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

TEST(Lock, SourceArchivesCarryTheirUrl) {
  LockFile lock = sample();
  lock.toolchains["cutlass-4.0"] = {{"cutlass-source", "4.0.0", "cutlass-4.0.0.zip", std::string(64, 'c'),
                                     "https://github.com/NVIDIA/cutlass/archive/refs/tags/v4.0.0.zip"}};
  std::string text = lock.serialize();
  EXPECT_NE(text.find("\"url\": \"https://github.com/NVIDIA/cutlass/archive/refs/tags/v4.0.0.zip\""),
            std::string::npos);
  EXPECT_EQ(sample().serialize().find("\"url\""), std::string::npos);  // wheels have none
  auto parsed = LockFile::parse(text, "kbuild.lock");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(*parsed, lock);
  auto swap = [&](const std::string& from, const std::string& to) {
    std::string damaged = text;
    damaged.replace(damaged.find(from), from.size(), to);
    return LockFile::parse(damaged, "kbuild.lock");
  };
  EXPECT_FALSE(swap("https://github.com", "file:///etc"));          // only http(s)
  EXPECT_FALSE(swap("cutlass-4.0.0.zip", "cutlass-4.0.0.whl"));     // an archive is a .zip
  EXPECT_FALSE(swap("cutlass-4.0.0.zip", "../cutlass-4.0.0.zip"));  // a file name, nothing more
  EXPECT_FALSE(swap("\"url\": \"https", "\"url\": 7, \"x\": \"https"));
  LockFile no_url = lock;
  no_url.toolchains["cutlass-4.0"].front().url.clear();
  EXPECT_FALSE(LockFile::parse(no_url.serialize(), "kbuild.lock"));  // a .zip without a URL cannot be fetched
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

namespace {
// Writes a zip with the given (name, content) entries, deflated, using libarchive's writer; a
// content starting with "->" makes a symbolic link to the rest.
void write_zip(const std::filesystem::path& path, const std::vector<std::pair<std::string, std::string>>& entries) {
  archive* zip = archive_write_new();
  ASSERT_EQ(archive_write_set_format_zip(zip), ARCHIVE_OK);
  ASSERT_EQ(archive_write_open_filename(zip, path.c_str()), ARCHIVE_OK);
  for (const auto& [name, content] : entries) {
    archive_entry* entry = archive_entry_new();
    archive_entry_set_pathname(entry, name.c_str());
    if (content.starts_with("->")) {
      archive_entry_set_filetype(entry, AE_IFLNK);
      archive_entry_set_symlink(entry, content.substr(2).c_str());
      archive_entry_set_perm(entry, 0777);
    } else {
      archive_entry_set_filetype(entry, AE_IFREG);
      archive_entry_set_perm(entry, name.ends_with(".sh") ? 0755 : 0644);
      archive_entry_set_size(entry, static_cast<la_int64_t>(content.size()));
    }
    ASSERT_EQ(archive_write_header(zip, entry), ARCHIVE_OK) << name;
    if (!content.starts_with("->")) archive_write_data(zip, content.data(), content.size());
    archive_entry_free(entry);
  }
  ASSERT_EQ(archive_write_close(zip), ARCHIVE_OK);
  archive_write_free(zip);
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

  auto everything = [](const std::string& n) { return std::optional(n); };
  write_zip(dir / "link.whl", {{"torch/include/ok.h", "fine"}, {"torch/include/link.h", "->/etc/passwd"}});
  auto link = extract_zip(real, dir / "link.whl", dir / "out3", everything);
  ASSERT_FALSE(link);
  EXPECT_NE(link.error().message.find("entry \"torch/include/link.h\" is a symbolic link"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir / "out3"));
  write_zip(dir / "tools.whl", {{"bin/run.sh", "#!/bin/sh\n"}, {"bin/data.txt", "d"}});
  ASSERT_TRUE(extract_zip(real, dir / "tools.whl", dir / "out4", everything));
  EXPECT_EQ(::access((dir / "out4/bin/run.sh").c_str(), X_OK), 0);
  EXPECT_NE(::access((dir / "out4/bin/data.txt").c_str(), X_OK), 0);
  EXPECT_EQ(*list_zip(dir / "tools.whl"), (std::vector<std::string>{"bin/run.sh", "bin/data.txt"}));
  write_zip(dir / "truncated.whl", {{"torch/include/a.h", big}});
  std::filesystem::resize_file(dir / "truncated.whl", big.size() / 2);
  EXPECT_FALSE(extract_zip(real, dir / "truncated.whl", dir / "out5", everything));
  std::filesystem::remove_all(dir);
}

namespace {
// A CUTLASS source archive shaped like GitHub's (one top directory), claiming `version`.
void write_cutlass_archive(const std::filesystem::path& path, const std::string& top, int major, int minor,
                           int patch = 0) {
  write_zip(path, {{top + "/include/cutlass/cutlass.h", "#pragma once\n"},
                   {top + "/include/cutlass/version.h", "#define CUTLASS_MAJOR " + std::to_string(major) +
                                                            "\n#define CUTLASS_MINOR " + std::to_string(minor) +
                                                            "\n#define CUTLASS_PATCH " + std::to_string(patch) + "\n"},
                   {top + "/tools/util/include/cutlass/util/device_memory.h", "// util\n"},
                   {top + "/examples/basic.cu", "// not a header the build needs\n"}});
}
}  // namespace

namespace {

namespace stdfs = std::filesystem;

// CUTLASS source archives served by a fake downloader from a temporary directory ("served/"), each
// test with caches of its own under it.
struct CutlassArchiveFixture : ::testing::Test {
  stdfs::path dir = stdfs::temp_directory_path() / ("kbuild-cutlass-" + std::to_string(::getpid()) + "-" +
                                                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
  kbuild::util::RealFileSystem real;
  kbuild::fakes::FakeLauncher launcher;  // knows no command: pip must not be asked for source archives
  std::vector<std::string> fetched;
  ProvisionOptions options;

  void SetUp() override {
    stdfs::remove_all(dir);
    stdfs::create_directories(dir / "served");
    write_cutlass_archive(dir / "served/v4.0.0.zip", "cutlass-4.0.0", 4, 0);
    options.cache.root = dir / "cache";
    options.cutlass_mirror_url = "https://mirror.example/cutlass/v{version}.zip";
    options.download_url = [this](const std::string& url, const stdfs::path& destination) -> kbuild::Result<void> {
      fetched.push_back(url);
      stdfs::copy_file(dir / "served" / url.substr(url.rfind('/') + 1), destination,
                       stdfs::copy_options::overwrite_existing);
      return {};
    };
  }
  void TearDown() override { stdfs::remove_all(dir); }
  kbuild::Result<kbuild::toolchain::HeaderLibrary> library(LockFile& lock, const std::string& dependency,
                                                           const std::string& cache) {
    options.cache.root = dir / cache;
    return Provisioner(launcher, real, options, lock, [](const std::string&) {}).header_library(dependency);
  }
};

const std::string k_version_h_4_0 = "#define CUTLASS_MAJOR 4\n#define CUTLASS_MINOR 0\n#define CUTLASS_PATCH 0\n";

}  // namespace

TEST_F(CutlassArchiveFixture, PinnedByTheFirstDownloadAndFetchedFromThePinOrAMirrorAfter) {
  std::vector<std::string> progress;
  LockFile lock;
  {
    Provisioner provisioner(launcher, real, options, lock, [&](const std::string& line) { progress.push_back(line); });
    auto library = provisioner.header_library("cutlass_4_0");
    ASSERT_TRUE(library) << library.error().message;
    EXPECT_TRUE(provisioner.lock_changed());
    EXPECT_EQ(library->version, "4.0.0");
    EXPECT_EQ(library->origin, "archive:https://mirror.example/cutlass/v4.0.0.zip");
    ASSERT_EQ(library->include_dirs.size(), 2u);
    EXPECT_TRUE(stdfs::exists(library->include_dirs[0] / "cutlass/cutlass.h"));
    EXPECT_TRUE(stdfs::exists(library->include_dirs[1] / "cutlass/util/device_memory.h"));
    EXPECT_FALSE(stdfs::exists(library->root / "examples"));
    EXPECT_TRUE(launcher.ran.empty());
  }
  ASSERT_TRUE(lock.find("cutlass-4.0"));
  const LockedArtifact pinned = lock.find("cutlass-4.0")->front();
  EXPECT_EQ(pinned.package, "cutlass-source");
  EXPECT_EQ(pinned.file, "cutlass-4.0.0.zip");
  EXPECT_EQ(pinned.url, "https://mirror.example/cutlass/v4.0.0.zip");
  EXPECT_EQ(pinned.sha256, *kbuild::util::sha256_file_hex(real, dir / "served/v4.0.0.zip"));
  EXPECT_EQ(fetched.size(), 1u);  // the pinning download is the one used
  EXPECT_TRUE(std::any_of(progress.begin(), progress.end(),
                          [&](const std::string& line) { return line.find(pinned.sha256) != std::string::npos; }));
  // Another machine (empty cache) without the mirror: the pin's own URL is fetched and verified.
  options.cutlass_mirror_url.clear();
  ASSERT_TRUE(library(lock, "cutlass_4_0", "cache-pinned-url"));
  ASSERT_EQ(fetched.size(), 2u);
  EXPECT_EQ(fetched.back(), "https://mirror.example/cutlass/v4.0.0.zip");
  // With another mirror set, the pinned archive comes from that mirror, still checked against the pin.
  options.cutlass_mirror_url = "https://other.example/c/v{version}.zip";
  LockFile before = lock;
  auto mirrored = library(lock, "cutlass_4_0", "cache-other-mirror");
  ASSERT_TRUE(mirrored);
  ASSERT_EQ(fetched.size(), 3u);
  EXPECT_EQ(fetched.back(), "https://other.example/c/v4.0.0.zip");
  EXPECT_EQ(mirrored->origin, "archive:https://other.example/c/v4.0.0.zip");
  EXPECT_TRUE(lock == before);
}

TEST_F(CutlassArchiveFixture, AnArchiveThatDiffersFromThePinIsRefused) {
  LockFile lock;
  ASSERT_TRUE(library(lock, "cutlass_4_0", "cache"));
  // Another machine (empty cache), --locked: the archive now served differs from the pin.
  options.locked = true;
  write_zip(dir / "served/v4.0.0.zip", {{"cutlass-4.0.0/include/cutlass/cutlass.h", "// tampered\n"}});
  auto refused = library(lock, "cutlass_4_0", "cache2");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("sha256 mismatch for cutlass-4.0.0.zip"), std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().hint.find("the download from https://mirror.example/cutlass/v4.0.0.zip"), std::string::npos)
      << refused.error().hint;
  EXPECT_NE(refused.error().hint.find("remove the \"cutlass-4.0\" entry from kbuild.lock"), std::string::npos);
  EXPECT_FALSE(stdfs::exists(options.cache.toolchains()));
}

TEST_F(CutlassArchiveFixture, AnotherReleaseOrNoHeadersIsRefusedBeforeAnythingIsPinned) {
  // A mirror that serves another release under the asked-for name is caught by cutlass/version.h
  // before anything is pinned; so is another patch release of the same X.Y.
  struct Served {
    int major, minor, patch;
    std::string claimed;
  };
  for (const Served& served : {Served{3, 9, 0, "3.9.0"}, Served{4, 0, 1, "4.0.1"}}) {
    LockFile fresh;
    write_cutlass_archive(dir / "served/v4.0.0.zip", "cutlass-" + served.claimed, served.major, served.minor,
                          served.patch);
    auto wrong = library(fresh, "cutlass_4_0", "cache3");
    ASSERT_FALSE(wrong);
    EXPECT_NE(wrong.error().message.find("holds CUTLASS " + served.claimed + ", not CUTLASS 4.0.0 (cutlass_4_0)"),
              std::string::npos)
        << wrong.error().message;
    EXPECT_NE(wrong.error().hint.find("KBUILD_CUTLASS_URL"), std::string::npos);
    EXPECT_FALSE(fresh.find("cutlass-4.0"));
  }
  // The right release but no headers: refused before anything is pinned.
  write_zip(dir / "served/v4.0.0.zip", {{"cutlass-4.0.0/include/cutlass/version.h", k_version_h_4_0}});
  LockFile fresh;
  auto headerless = library(fresh, "cutlass_4_0", "cache5");
  ASSERT_FALSE(headerless);
  EXPECT_NE(headerless.error().message.find("has no include/cutlass/cutlass.h"), std::string::npos)
      << headerless.error().message;
  EXPECT_FALSE(fresh.find("cutlass-4.0"));
}

TEST_F(CutlassArchiveFixture, APinWhoseArchiveTurnsOutHeaderlessIsReportedAndKept) {
  // It is the lock's to change, with the hint; not silently dropped.
  LockFile fresh;
  options.cache.root = dir / "cache6";
  Provisioner provisioner(launcher, real, options, fresh, [](const std::string&) {});
  ASSERT_TRUE(provisioner.artifacts("cutlass", *kbuild::util::Version::parse("4.0")));
  LockedArtifact pin = fresh.find("cutlass-4.0")->front();
  // The cached download is replaced by a headerless archive with the pinned name and sha256.
  write_zip(options.cache.downloads() / pin.sha256 / pin.file,
            {{"cutlass-4.0.0/include/cutlass/version.h", k_version_h_4_0}});
  auto broken = provisioner.header_library("cutlass_4_0");
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.error().message.find("has no include/cutlass/cutlass.h"), std::string::npos)
      << broken.error().message;
  EXPECT_TRUE(fresh.find("cutlass-4.0"));  // pinned before this call: kept
}

TEST_F(CutlassArchiveFixture, Cutlass2ReleasesGetTheVersionHeaderTheirCMakeInstallWouldMake) {
  // CUTLASS 2.x archives have no include/cutlass/version.h: the release is CMakeLists.txt's and the
  // header is configured from cmake/version.h.in, as CUTLASS's CMake install does.
  write_zip(dir / "served/v2.10.0.zip",
            {{"cutlass-2.10.0/CMakeLists.txt",
              "cmake_minimum_required(VERSION 3.12.4)\nproject(CUTLASS VERSION 2.10.0 LANGUAGES CXX)\n"},
             {"cutlass-2.10.0/cmake/version.h.in",
              "#define CUTLASS_MAJOR @CUTLASS_VERSION_MAJOR@\n#define CUTLASS_MINOR @CUTLASS_VERSION_MINOR@\n"
              "#define CUTLASS_PATCH @CUTLASS_VERSION_PATCH@\n#define CUTLASS_BUILD @CUTLASS_VERSION_BUILD@\n"
              "const char* v = \"@CUTLASS_VERSION@\";\n"},
             {"cutlass-2.10.0/include/cutlass/cutlass.h", "#pragma once\n"},
             {"cutlass-2.10.0/tools/profiler/src/options.cu", "// not a header\n"}});
  LockFile fresh;
  options.cache.root = dir / "cache7";
  Provisioner provisioner(launcher, real, options, fresh, [](const std::string&) {});
  auto old_release = provisioner.header_library("cutlass_2_10");
  ASSERT_TRUE(old_release) << old_release.error().message << "\n" << old_release.error().hint;
  EXPECT_EQ(fresh.find("cutlass-2.10")->front().version, "2.10.0");
  std::ifstream configured(old_release->include_dirs[0] / "cutlass/version.h");
  std::string text((std::istreambuf_iterator<char>(configured)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text,
            "#define CUTLASS_MAJOR 2\n#define CUTLASS_MINOR 10\n#define CUTLASS_PATCH 0\n#define CUTLASS_BUILD \n"
            "const char* v = \"2.10.0\";\n");
  // A tree an earlier kbuild unpacked without cutlass/version.h, marked complete, is unpacked again.
  stdfs::remove(old_release->include_dirs[0] / "cutlass/version.h");
  ASSERT_TRUE(stdfs::exists(old_release->root / ".complete"));
  auto again = provisioner.header_library("cutlass_2_10");
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_TRUE(stdfs::exists(again->include_dirs[0] / "cutlass/version.h"));
}

TEST_F(CutlassArchiveFixture, Cutlass2ArchivesOfAnotherReleaseOrWithoutAVersionHeaderAreRefused) {
  // Served as another release's tree, it is refused before anything is pinned.
  write_zip(dir / "served/v2.10.0.zip",
            {{"cutlass-2.11.0/CMakeLists.txt", "project(CUTLASS VERSION 2.11.0 LANGUAGES CXX)\n"},
             {"cutlass-2.11.0/include/cutlass/cutlass.h", "#pragma once\n"}});
  LockFile other;
  auto wrong = library(other, "cutlass_2_10", "cache8");
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("holds CUTLASS 2.11.0, not CUTLASS 2.10.0 (cutlass_2_10)"), std::string::npos)
      << wrong.error().message;
  EXPECT_TRUE(other.toolchains.empty());
  // Named by CMakeLists.txt, but with no way to make cutlass/version.h: refused, nothing pinned.
  write_zip(dir / "served/v2.10.0.zip",
            {{"cutlass-2.10.0/CMakeLists.txt", "project(CUTLASS VERSION 2.10.0 LANGUAGES CXX)\n"},
             {"cutlass-2.10.0/include/cutlass/cutlass.h", "#pragma once\n"}});
  LockFile third;
  auto no_header = library(third, "cutlass_2_10", "cache9");
  ASSERT_FALSE(no_header);
  EXPECT_NE(no_header.error().message.find("has no include/cutlass/version.h (nor cmake/version.h.in)"),
            std::string::npos)
      << no_header.error().message;
  EXPECT_TRUE(third.toolchains.empty());
}

TEST_F(CutlassArchiveFixture, WithoutADownloaderTheErrorIsClear) {
  // A library user that wired no downloader gets a clear error rather than a crash.
  options.download_url = {};
  LockFile empty;
  auto none = library(empty, "cutlass_2_10", "cache4");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("no downloader"), std::string::npos);
}

TEST(Provision, TheMatrixLockPinsItsCutlassArchiveDropsUnusedPinsAndUpdateKeepsTheArchive) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("kbuild-matrix-lock-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  write_cutlass_archive(dir / "v4.0.0.zip", "cutlass-4.0.0", 4, 0);
  kbuild::util::RealFileSystem real;
  kbuild::fakes::FakeLauncher launcher;  // no pip: every Torch and CUDA pin is in the lock already
  ProvisionOptions options;
  options.cache.root = dir / "cache";
  options.download_url = [&](const std::string&, const fs::path& destination) -> kbuild::Result<void> {
    fs::copy_file(dir / "v4.0.0.zip", destination, fs::copy_options::overwrite_existing);
    return {};
  };
  auto pin = [](const std::string& package, const std::string& version) {
    LockedArtifact artifact;
    artifact.package = package;
    artifact.version = version;
    artifact.file = package + "-" + version + "-py3-none-any.whl";
    artifact.sha256 = std::string(64, 'a');
    return std::vector<LockedArtifact>{artifact};
  };
  LockFile lock;
  lock.toolchains = {{"torch-2.11", pin("torch", "2.11.0")},
                     {"cuda-13.0", pin("nvidia-cuda-nvcc", "13.0.88")},
                     {"torch-2.1", pin("torch", "2.1.2")},
                     {"tvm-ffi-0.1", pin("apache-tvm-ffi", "0.1.9")},
                     {"cutlass-3.6", pin("nvidia-cutlass", "3.6.0.0")},
                     {"gcc-12.2", pin("g++-12", "12.2.0-14")}};
  kbuild::plan::MatrixEntry entry;
  entry.variant.backend = kbuild::config::Backend::cuda;
  entry.variant.torch = *kbuild::util::Version::parse("2.11");
  entry.variant.cuda = kbuild::util::Version::parse("13.0");
  entry.torch = entry.variant.torch;
  entry.cuda = entry.variant.cuda;
  Provisioner provisioner(launcher, real, options, lock, [](const std::string&) {});
  auto pinned = kbuild::usecase::pin_matrix_toolchains({entry}, {"cutlass_4_0"}, provisioner, lock);
  ASSERT_TRUE(pinned) << pinned.error().message;
  std::vector<std::string> names;
  for (const auto& [name, artifacts] : lock.toolchains) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"cuda-13.0", "cutlass-4.0", "gcc-12.2", "torch-2.11"}));
  EXPECT_EQ(lock.find("cutlass-4.0")->front().package, "cutlass-source");
  EXPECT_TRUE(launcher.ran.empty());

  // --update re-resolves everything a newer patch release can replace, and keeps the archive pin.
  LockFile kept = kbuild::usecase::pins_kept_by_update(lock);
  ASSERT_EQ(kept.toolchains.size(), 1u);
  EXPECT_EQ(kept.toolchains.at("cutlass-4.0"), lock.toolchains.at("cutlass-4.0"));
  fs::remove_all(dir);
}
