// The compile cache on a real filesystem under attack or damage (issue 29): links out of the cache,
// FIFOs, directories in entry positions, entries under the wrong key, unreadable shards, leftovers.
// Each case checks that nothing outside the cache is read or removed, nothing hangs, and no wrong
// entry reaches an output.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "kbuild/cache/compile_cache.hpp"
#include "kbuild/cache/entry.hpp"
#include "kbuild/util/fs.hpp"

namespace kbuild::cache {
namespace {

namespace stdfs = std::filesystem;

struct TrustFixture : ::testing::Test {
  stdfs::path root;
  util::RealFileSystem fs;
  std::vector<std::string> warnings;

  void SetUp() override {
    std::string pattern = (stdfs::temp_directory_path() / "kbuild-trust-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root = pattern;
    write(root / "k/k.cu", "kernel");
    write(root / "k/.kbuild/k.o", "OBJECT BYTES");
    write(root / "outside/precious.txt", "do not touch");
  }
  void TearDown() override {
    std::error_code ec;
    for (auto& entry : stdfs::recursive_directory_iterator(root, ec))
      if (!entry.is_symlink()) ::chmod(entry.path().c_str(), 0700);
    stdfs::remove_all(root, ec);
  }
  static void write(const stdfs::path& path, const std::string& text) {
    stdfs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  static std::string read(const stdfs::path& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  stdfs::path cache_dir() const { return root / "cache"; }
  plan::Job job(const std::string& define = "_k_abc") const {
    plan::Job j;
    j.kind = plan::JobKind::compile_cxx;
    std::string k = (root / "k").string();
    j.argv = {"/usr/bin/g++",        "-O2", "-DTORCH_EXTENSION_NAME=" + define, "-c", k + "/k.cu", "-o",
              k + "/.kbuild/k.o.tmp"};
    j.inputs = {k + "/k.cu"};
    j.outputs = {k + "/.kbuild/k.o"};
    j.cacheable = true;
    j.tool_identity = "g++ 12";
    j.path_roots = {{"$K", k}};
    return j;
  }
  CompileCache cache() {
    return CompileCache(fs, cache_dir(), 1 << 30, [this](const std::string& w) { warnings.push_back(w); });
  }
  // The single object (or manifest) path after one store.
  stdfs::path only(const char* part) const {
    for (auto& entry : stdfs::recursive_directory_iterator(cache_dir() / part))
      if (entry.is_regular_file()) return entry.path();
    return {};
  }
  bool outside_intact() const { return read(root / "outside/precious.txt") == "do not touch"; }
};

TEST_F(TrustFixture, AnEntryUnderAnotherKeyIsDamageNotAHit) {
  auto c = cache();
  c.store(job(), {(root / "k/k.cu").string()}, false);
  stdfs::path object = only("objects");
  // The object of another job copied over this key (the attack of issue 29): a miss, removed, named.
  write(root / "k/.kbuild/k.o", "OTHER BYTES");
  auto other = job("_other");
  other.argv[1] = "-O3";
  c.store(other, {(root / "k/k.cu").string()}, false);
  stdfs::path other_object;
  for (auto& entry : stdfs::recursive_directory_iterator(cache_dir() / "objects"))
    if (entry.is_regular_file() && entry.path() != object) other_object = entry.path();
  ASSERT_FALSE(other_object.empty());
  stdfs::copy_file(other_object, object, stdfs::copy_options::overwrite_existing);
  write(root / "k/.kbuild/k.o", "stale");
  EXPECT_FALSE(c.restore(job()));
  EXPECT_EQ(read(root / "k/.kbuild/k.o"), "stale");
  EXPECT_FALSE(stdfs::exists(object));
  ASSERT_FALSE(warnings.empty());
  EXPECT_NE(warnings.back().find("stored under another key"), std::string::npos) << warnings.back();
}

TEST_F(TrustFixture, AManifestEntryPointingAtAnotherObjectIsDamage) {
  auto c = cache();
  c.store(job(), {(root / "k/k.cu").string()}, false);
  stdfs::path manifest = only("manifests");
  std::string text = read(manifest);
  size_t at = text.find("\"result\":\"") + 10;
  text.replace(at, 64, std::string(64, 'a'));
  write(manifest, text);
  EXPECT_FALSE(c.restore(job()));
  EXPECT_FALSE(stdfs::exists(manifest));
  std::string why;
  EXPECT_FALSE(decode_manifest(text, manifest.filename().string(), why));
  EXPECT_EQ(why, "an entry's result is not the key of its inputs");
}

TEST_F(TrustFixture, LinksFifosAndDirectoriesInEntryPositionsAreRemovedNeverFollowed) {
  auto c = cache();
  c.store(job(), {(root / "k/k.cu").string()}, false);
  stdfs::path object = only("objects");
  // A FIFO where the object belongs: a miss at once (no hang), removed.
  stdfs::remove(object);
  ASSERT_EQ(::mkfifo(object.c_str(), 0600), 0);
  EXPECT_FALSE(c.restore(job()));
  EXPECT_FALSE(stdfs::exists(stdfs::symlink_status(object)));
  // A directory there: removed, and the next store writes the entry.
  stdfs::create_directories(object / "sub");
  EXPECT_FALSE(c.restore(job()));
  c.store(job(), {(root / "k/k.cu").string()}, false);
  EXPECT_TRUE(stdfs::is_regular_file(stdfs::symlink_status(object)));
  // A link from the object's shard directory out of the cache: the link goes, its target stays.
  stdfs::path shard = object.parent_path();
  stdfs::remove_all(shard);
  stdfs::create_directory_symlink(root / "outside", shard);
  EXPECT_FALSE(c.restore(job()));
  EXPECT_FALSE(stdfs::exists(stdfs::symlink_status(shard)));
  EXPECT_TRUE(outside_intact());
}

TEST_F(TrustFixture, VerifyAndEvictionNeverRemoveAnythingOutsideTheCache) {
  auto c = cache();
  c.store(job(), {(root / "k/k.cu").string()}, false);
  stdfs::path object = only("objects");
  // Links to outside directories and files at every level of the cache.
  stdfs::create_directory_symlink(root / "outside", cache_dir() / "objects/zz");
  stdfs::create_directory_symlink(root / "outside", object.parent_path() / std::string(64, 'e'));
  stdfs::create_symlink(root / "outside/precious.txt", cache_dir() / "manifests/ab");
  ASSERT_EQ(::mkfifo((object.parent_path() / std::string(64, 'f')).c_str(), 0600), 0);
  auto report = CompileCache::verify(fs, cache_dir());
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_TRUE(outside_intact());
  EXPECT_EQ(report->removed, 4u);
  EXPECT_TRUE(stdfs::is_regular_file(object));  // the sound entry stays
  // Eviction to zero with links planted again: every entry goes, nothing outside does.
  stdfs::create_directory_symlink(root / "outside", cache_dir() / "objects/zz");
  stdfs::create_directory_symlink(root / "outside", object.parent_path() / std::string(64, 'e'));
  ASSERT_TRUE(CompileCache::evict(fs, cache_dir(), 0));
  EXPECT_FALSE(stdfs::exists(object));
  EXPECT_TRUE(outside_intact());
}

TEST_F(TrustFixture, VerifyRepairsAnUnreadableShardAndGoesOn) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads a mode-000 directory anyway";
  auto c = cache();
  c.store(job(), {(root / "k/k.cu").string()}, false);
  stdfs::path shard = only("objects").parent_path();
  ASSERT_EQ(::chmod(shard.c_str(), 0), 0);
  auto report = CompileCache::verify(fs, cache_dir());
  ASSERT_TRUE(report);
  EXPECT_EQ(report->objects, 1u);
  EXPECT_EQ(report->removed, 0u);
}

TEST_F(TrustFixture, LeftoversOfDeadProcessesAreSweptLiveOnesKept) {
  const std::string dead = ".stdcxx-compat.tmp999999999-0123abcd-0";
  const std::string live = ".stdcxx-compat.tmp" + std::to_string(::getpid()) + "-0123abcd-1";
  write(cache_dir() / "tmp" / dead, "x");
  write(cache_dir() / "tmp" / live, "y");
  write(cache_dir() / "toolchains" / (".cuda-13.tmp999999999-0123abcd-2") / "bin/nvcc", "z");
  // Fresh leftovers may belong to a process of another PID namespace: kept for a minute.
  EXPECT_EQ(CompileCache::sweep_leftovers(fs, cache_dir()), 0u);
  auto old = stdfs::file_time_type::clock::now() - std::chrono::minutes(5);
  for (auto name : {"tmp/" + dead, "tmp/" + live, std::string("toolchains/.cuda-13.tmp999999999-0123abcd-2"),
                    std::string("toolchains/.cuda-13.tmp999999999-0123abcd-2/bin"),
                    std::string("toolchains/.cuda-13.tmp999999999-0123abcd-2/bin/nvcc")})
    stdfs::last_write_time(cache_dir() / name, old);
  // A staging directory whose own time is old but where a file was just written is still in use.
  const std::string busy = "toolchains/.torch.tmp999999999-0123abcd-3";
  write(cache_dir() / busy / "lib" / "fresh.so", "being written");
  stdfs::last_write_time(cache_dir() / busy, old);
  EXPECT_EQ(CompileCache::sweep_leftovers(fs, cache_dir()), 2u);
  EXPECT_TRUE(stdfs::exists(cache_dir() / busy));
  EXPECT_FALSE(stdfs::exists(cache_dir() / "tmp" / dead));
  EXPECT_TRUE(stdfs::exists(cache_dir() / "tmp" / live));
  EXPECT_EQ(util::temp_sibling_pid(dead), 999999999L);
  EXPECT_EQ(util::temp_sibling_pid(util::temp_sibling("/x/a.o").filename().string()), ::getpid());
  EXPECT_FALSE(util::temp_sibling_pid("a.tmp123-0123abcd-0"));
  EXPECT_FALSE(util::temp_sibling_pid(".a.tmp123-0123abc-0"));
}

TEST_F(TrustFixture, ARunningDownloadInTmpNeverEmptiesTheCache) {
  auto c = cache();
  c.store(job(), {(root / "k/k.cu").string()}, false);
  const auto entries = stdfs::file_size(only("objects")) + stdfs::file_size(only("manifests"));
  write(cache_dir() / "tmp/.download.part", std::string(64 * 1024, 'x'));  // someone's CUDA wheel, say
  CompileCache capped(fs, cache_dir(), entries + 1024, nullptr);
  capped.finish();
  EXPECT_FALSE(only("objects").empty());  // the entries fit the cap: the download does not count
  ASSERT_TRUE(CompileCache::evict(fs, cache_dir(), entries - 1));
  EXPECT_TRUE(only("objects").empty() || only("manifests").empty());  // the oldest goes first
}

TEST_F(TrustFixture, TheCapEvictsEntriesAndStatsCountTemporaryFiles) {
  auto c = cache();
  c.store(job(), {(root / "k/k.cu").string()}, false);
  write(cache_dir() / "tmp/download.part", std::string(4096, 'x'));
  auto summary = CompileCache::summarize(fs, cache_dir());
  ASSERT_TRUE(summary);
  EXPECT_GE(summary->bytes, 4096u + stdfs::file_size(only("objects")) + stdfs::file_size(only("manifests")));
  CompileCache capped(fs, cache_dir(), 0, nullptr);
  capped.finish();
  EXPECT_TRUE(only("objects").empty());
  EXPECT_TRUE(only("manifests").empty());
}

TEST(FileSystemReads, AFifoIsAnErrorNotAWait) {
  std::string path = (stdfs::temp_directory_path() / ("kbuild-fifo-" + std::to_string(::getpid()))).string();
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  util::RealFileSystem fs;
  auto text = fs.read_file(path);
  ::unlink(path.c_str());
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().message.find("not a regular file"), std::string::npos);
}

}  // namespace
}  // namespace kbuild::cache

namespace kbuild::cache {
namespace {

TEST(CacheEntry, RestoredElfMustBeOfTheJobsKind) {
  std::string header = std::string(
                           "\x7f"
                           "ELF\x02\x01\x01",
                           7) +
                       std::string(9, '\0');
  std::string relocatable = header + std::string("\x01\x00", 2) + "rest";
  std::string shared = header + std::string("\x03\x00", 2) + "rest";
  EXPECT_TRUE(plausible_output(false, relocatable));
  EXPECT_FALSE(plausible_output(true, relocatable));  // an object file restored as a library
  EXPECT_TRUE(plausible_output(true, shared));
  EXPECT_FALSE(plausible_output(false, shared));         // a library restored as an object file
  EXPECT_TRUE(plausible_output(false, "OBJECT BYTES"));  // not ELF: left to the linker and the ABI gate
}

}  // namespace
}  // namespace kbuild::cache
