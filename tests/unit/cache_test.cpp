#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "kbuild/cache/compile_cache.hpp"
#include "kbuild/cache/key.hpp"
#include "kbuild/util/fs.hpp"
#include "support/mem_fs.hpp"

using namespace kbuild;
using namespace kbuild::cache;

namespace {

plan::Job compile_job(const std::string& kernel, const std::string& torch) {
  plan::Job job;
  job.kind = plan::JobKind::compile_cuda;
  job.argv = {"/cuda/bin/nvcc",
              "-ccbin",
              "/usr/bin/g++",
              "-O3",
              "-DTORCH_EXTENSION_NAME=_k_cuda_abc",
              "-I" + kernel + "/include",
              "-isystem",
              torch + "/include",
              "-ffile-prefix-map=" + kernel + "/=",
              "-Xcompiler=-fPIC,-ffile-prefix-map=" + kernel + "/=",
              "-gencode",
              "arch=compute_90,code=sm_90",
              "--threads",
              "8",
              "-MD",
              "-MF",
              kernel + "/.kbuild/x.d",
              "-c",
              kernel + "/k.cu",
              "-o",
              kernel + "/.kbuild/k.o.tmp"};
  job.inputs = {kernel + "/k.cu"};
  job.outputs = {kernel + "/.kbuild/k.o"};
  job.depfile = kernel + "/.kbuild/x.d";
  job.cacheable = true;
  job.tool_identity = "nvcc 13.0.88 | g++ 12.2.0";
  job.path_roots = {{"$K", kernel}, {"$TORCH", torch}, {"$CUDA", "/cuda"}};
  return job;
}

}  // namespace

TEST(CacheKey, PathsAreNormalisedAgainstRoots) {
  Roots roots = {{"$K", "/home/a/k"}, {"$TORCH", "/t"}};
  EXPECT_EQ(normalize_path("/home/a/k/include/x.h", roots), "$K/include/x.h");
  EXPECT_EQ(normalize_path("/home/a/kernel/x.h", roots), "/home/a/kernel/x.h");  // not under $K
  EXPECT_EQ(normalize_path("/usr/include/c++/12/vector", roots), "/usr/include/c++/12/vector");
  EXPECT_EQ(denormalize_path("$TORCH/include/a.h", {{"$TORCH", "/other"}}), "/other/include/a.h");
}

TEST(CacheKey, ArgumentsIgnoreLocationsThreadsAndOutputs) {
  auto args = key_arguments(compile_job("/home/a/k", "/cache/torch-2.11"));
  EXPECT_EQ(args, (std::vector<std::string>{"-O3", "-DTORCH_EXTENSION_NAME=_k_cuda_abc", "-Xcompiler=-fPIC", "-gencode",
                                            "arch=compute_90,code=sm_90"}));
  // The same job in another checkout against another Torch has the same key...
  EXPECT_EQ(manifest_key(compile_job("/home/a/k", "/t1"), "s"), manifest_key(compile_job("/tmp/b", "/t2"), "s"));
  // ...but not with other flags, another compiler or another source.
  auto other_flags = compile_job("/home/a/k", "/t1");
  other_flags.argv[11] = "arch=compute_100,code=sm_100";
  EXPECT_NE(manifest_key(other_flags, "s"), manifest_key(compile_job("/home/a/k", "/t1"), "s"));
  auto other_compiler = compile_job("/home/a/k", "/t1");
  other_compiler.tool_identity = "nvcc 13.2.86 | g++ 12.2.0";
  EXPECT_NE(manifest_key(other_compiler, "s"), manifest_key(compile_job("/home/a/k", "/t1"), "s"));
  EXPECT_NE(manifest_key(compile_job("/home/a/k", "/t1"), "s2"), manifest_key(compile_job("/home/a/k", "/t1"), "s"));
}

TEST(CacheKey, ThePinnedHostSysrootIsKeyedByItsPlaceNotItsMachine) {
  auto pinned = [](const std::string& host) {
    auto job = compile_job("/home/a/k", "/t1");
    job.argv.insert(job.argv.begin() + 1, "--sysroot=" + host + "/root");
    for (auto& arg : job.argv)
      if (arg.starts_with("-Xcompiler=")) arg = "-Xcompiler=-fPIC,--sysroot=" + host + "/root,-ffile-prefix-map=/x/=";
    job.path_roots.push_back({"$HOST", host});
    return job;
  };
  auto args = key_arguments(pinned("/runner-1/cache/gcc-12.2"));
  EXPECT_EQ(args[0], "--sysroot=$HOST/root");
  EXPECT_EQ(args[3], "-Xcompiler=-fPIC,--sysroot=$HOST/root");
  EXPECT_EQ(manifest_key(pinned("/runner-1/cache/gcc-12.2"), "s"), manifest_key(pinned("/runner-2/c/gcc-12.2"), "s"));
  auto unknown = pinned("/runner-1/cache/gcc-12.2");
  unknown.path_roots.pop_back();  // a sysroot outside every root stays as written
  EXPECT_EQ(key_arguments(unknown)[0], "--sysroot=/runner-1/cache/gcc-12.2/root");
}

TEST(CacheKey, ResultKeyIsOrderIndependent) {
  EXPECT_EQ(result_key("m", {{"a", "1"}, {"b", "2"}}, std::nullopt),
            result_key("m", {{"b", "2"}, {"a", "1"}}, std::nullopt));
  EXPECT_NE(result_key("m", {{"a", "1"}, {"b", "2"}}, std::nullopt),
            result_key("m", {{"a", "1"}, {"b", "3"}}, std::nullopt));
}

TEST(CompileCache, HitsAcrossCheckoutsAndMissesOnHeaderChange) {
  fakes::MemFileSystem fs;
  CompileCache cache(fs, "/cache", 1 << 30, nullptr);
  // Checkout A compiles and stores.
  fs.put("/a/k.cu", "kernel");
  fs.put("/a/include/k.h", "header");
  fs.put("/cuda/include/cuda.h", "cuda");
  fs.put("/a/.kbuild/k.o", "OBJECT");
  auto a = compile_job("/a", "/torch-a");
  EXPECT_FALSE(cache.restore(a));
  cache.store(a, {"/a/k.cu", "/a/include/k.h", "/cuda/include/cuda.h"}, false);
  // Checkout B, same contents elsewhere: a hit, with a depfile naming B's files.
  fs.put("/b/k.cu", "kernel");
  fs.put("/b/include/k.h", "header");
  auto b = compile_job("/b", "/torch-b");
  ASSERT_TRUE(cache.restore(b));
  EXPECT_EQ(fs.content("/b/.kbuild/k.o"), "OBJECT");
  EXPECT_NE(fs.content("/b/.kbuild/x.d").find("/b/include/k.h"), std::string::npos);
  // A header edit in B: miss.
  fs.put("/b/include/k.h", "changed");
  EXPECT_FALSE(cache.restore(b));
  EXPECT_EQ(cache.run_counters().hits, 1u);
  EXPECT_EQ(cache.run_counters().misses, 2u);
  cache.finish();
  auto summary = CompileCache::summarize(fs, "/cache");
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->entries, 1u);
  EXPECT_EQ(summary->counters.hits, 1u);
}

TEST(CompileCache, LinkJobsKeyOnInputContents) {
  fakes::MemFileSystem fs;
  CompileCache cache(fs, "/cache", 1 << 30, nullptr);
  plan::Job link;
  link.kind = plan::JobKind::link;
  link.argv = {"g++", "-shared", "-o", "/a/lib.so.tmp", "/a/x.o", "-L/t/lib", "-lc10"};
  link.inputs = {"/a/x.o"};
  link.outputs = {"/a/lib.so"};
  link.tool_identity = "g++ 12 | torch 2.11";
  fs.put("/a/x.o", "obj");
  fs.put("/a/lib.so", "LIB");
  cache.store(link, {}, false);
  (void)fs.remove_all("/a/lib.so");
  ASSERT_TRUE(cache.restore(link));
  EXPECT_EQ(fs.content("/a/lib.so"), "LIB");
  fs.put("/a/x.o", "other obj");
  EXPECT_FALSE(cache.restore(link));
}

TEST(CompileCache, EvictsOldestBeyondTheCap) {
  fakes::MemFileSystem fs;
  fs.put("/c/objects/aa/aa1", std::string(100, 'x'));
  fs.put("/c/objects/bb/bb1", std::string(100, 'y'));
  fs.put("/c/objects/cc/cc1", std::string(100, 'z'));
  (void)fs.touch("/c/objects/aa/aa1");  // the most recently used
  auto freed = CompileCache::evict(fs, "/c", 150);
  ASSERT_TRUE(freed);
  EXPECT_EQ(*freed, 200u);
  EXPECT_TRUE(fs.has("/c/objects/aa/aa1"));
  EXPECT_FALSE(fs.has("/c/objects/bb/bb1"));
}

TEST(CompileCache, FailuresAreWarningsNotErrors) {
  fakes::MemFileSystem fs;
  std::vector<std::string> warnings;
  CompileCache cache(fs, "/cache", 1 << 30, [&](const std::string& w) { warnings.push_back(w); });
  auto job = compile_job("/a", "/t");
  fs.put("/a/k.cu", "kernel");
  cache.store(job, {"/a/k.cu", "/a/missing.h"}, false);  // the output and a header are missing
  EXPECT_EQ(warnings.size(), 1u);
  EXPECT_EQ(cache.run_counters().errors, 1u);
}

namespace {
// The one object file and the one manifest of a cache that has stored `job`.
struct Stored {
  std::string object;
  std::string manifest;
};
Stored stored_files(fakes::MemFileSystem& fs) {
  Stored out;
  auto objects = util::list_files_recursive(fs, "/cache/objects");
  auto manifests = util::list_files_recursive(fs, "/cache/manifests");
  if (objects && !objects->empty()) out.object = "/cache/objects/" + objects->front();
  if (manifests && !manifests->empty()) out.manifest = "/cache/manifests/" + manifests->front();
  return out;
}
}  // namespace

TEST(CompileCache, DamagedEntriesAreMissesRemovedAndCounted) {
  fakes::MemFileSystem fs;
  std::vector<std::string> warnings;
  CompileCache cache(fs, "/cache", 1 << 30, [&](const std::string& w) { warnings.push_back(w); });
  fs.put("/a/k.cu", "kernel");
  fs.put("/a/.kbuild/k.o", "OBJECT BYTES");
  auto job = compile_job("/a", "/t");
  cache.store(job, {"/a/k.cu"}, false);
  Stored files = stored_files(fs);
  ASSERT_FALSE(files.object.empty());
  ASSERT_FALSE(files.manifest.empty());
  const std::string good_object = fs.content(files.object);
  const std::string good_manifest = fs.content(files.manifest);
  ASSERT_TRUE(cache.restore(job));

  // One flipped byte, a truncation: misses (never a bad output), the object removed.
  for (auto damage : {std::function<void(std::string&)>([](std::string& s) { s.back() ^= 1; }),
                      std::function<void(std::string&)>([](std::string& s) { s.resize(s.size() - 3); })}) {
    std::string bad = good_object;
    damage(bad);
    fs.put(files.object, bad);
    fs.put("/a/.kbuild/k.o", "stale");
    EXPECT_FALSE(cache.restore(job));
    EXPECT_EQ(fs.content("/a/.kbuild/k.o"), "stale");  // nothing restored
    EXPECT_FALSE(fs.has(files.object));
    fs.put(files.object, good_object);
  }
  // Manifests of the wrong shape, or whose result is a path: misses; nothing outside the cache read.
  fs.put("/etc/passwd", "root:x:0:0");
  for (const std::string& bad :
       {std::string(R"({"entries": [{"result": 5, "inputs": []}]})"), std::string(R"({"entries": "x"})"),
        std::string("[1, 2]"), std::string("not json"),
        good_manifest.substr(0, good_manifest.find("\"result\"")) + "\"result\":\"../../../../etc/passwd\"}]}"}) {
    fs.put(files.manifest, bad);
    EXPECT_FALSE(cache.restore(job)) << bad;
    EXPECT_FALSE(fs.has(files.manifest)) << bad;
  }
  EXPECT_EQ(cache.run_counters().corrupt, 7u);
  // Damage is a miss, named in a warning (the first three), then counted.
  ASSERT_EQ(warnings.size(), 4u);
  EXPECT_NE(warnings[0].find("removed the damaged entry objects/"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[2].find("removed the damaged entry manifests/"), std::string::npos) << warnings[2];
  EXPECT_NE(warnings[3].find("more damaged entries"), std::string::npos) << warnings[3];
  // The next store repairs the entry.
  fs.put("/a/.kbuild/k.o", "OBJECT BYTES");
  cache.store(job, {"/a/k.cu"}, false);
  fs.put("/a/.kbuild/k.o", "stale");
  ASSERT_TRUE(cache.restore(job));
  EXPECT_EQ(fs.content("/a/.kbuild/k.o"), "OBJECT BYTES");
  cache.finish();
  EXPECT_EQ(CompileCache::summarize(fs, "/cache")->counters.corrupt, 7u);
}

TEST(CompileCache, VerifyRemovesWhatIsDamaged) {
  fakes::MemFileSystem fs;
  CompileCache cache(fs, "/cache", 1 << 30, nullptr);
  fs.put("/a/k.cu", "kernel");
  fs.put("/a/.kbuild/k.o", "OBJECT BYTES");
  cache.store(compile_job("/a", "/t"), {"/a/k.cu"}, false);
  fs.put("/cache/objects/ab/abcd", "KBOBJ1 0000 3\nxyz");
  fs.put("/cache/manifests/ab/abcd", "{}");
  auto report = CompileCache::verify(fs, "/cache");
  ASSERT_TRUE(report);
  EXPECT_EQ(report->objects, 2u);
  EXPECT_EQ(report->manifests, 2u);
  EXPECT_EQ(report->removed, 2u);
  EXPECT_FALSE(fs.has("/cache/objects/ab/abcd"));
  EXPECT_EQ(CompileCache::verify(fs, "/cache")->removed, 0u);
}

namespace {

// The remote tier as data: files by path, with switches for failures; counts requests.
struct MapRemote final : RemoteStore {
  std::map<std::string, std::string> files;
  bool broken = false;
  int gets = 0, puts = 0;
  Result<std::optional<std::string>> get(const std::string& path) override {
    ++gets;
    if (broken) return fail("connection refused");
    auto it = files.find(path);
    return it == files.end() ? std::optional<std::string>() : std::optional<std::string>(it->second);
  }
  Result<void> put(const std::string& path, const std::string& bytes) override {
    ++puts;
    if (broken) return fail("connection refused");
    files[path] = bytes;
    return {};
  }
};

}  // namespace

TEST(RemoteCache, AnotherMachineBuildsFromTheSharedTierWithEverythingVerified) {
  fakes::MemFileSystem fs;
  MapRemote remote;
  fs.put("/a/k.cu", "kernel");
  fs.put("/a/.kbuild/k.o", "OBJECT");
  {  // machine A: stores locally and remotely
    CompileCache a(fs, "/cache-a", 1 << 30, nullptr);
    a.set_remote(&remote, true);
    auto job = compile_job("/a", "/torch");
    EXPECT_FALSE(a.restore(job));
    a.store(job, {"/a/k.cu"}, false);
    EXPECT_EQ(a.run_counters().remote_stores, 1u);
  }
  ASSERT_EQ(remote.files.size(), 2u);  // the object and its manifest, under the local cache's paths
  for (const auto& [path, bytes] : remote.files)
    EXPECT_TRUE(path.starts_with("objects/") || path.starts_with("manifests/")) << path;

  fs.put("/b/k.cu", "kernel");
  std::vector<std::string> warnings;
  CompileCache b(fs, "/cache-b", 1 << 30, [&](const std::string& w) { warnings.push_back(w); });
  b.set_remote(&remote, true);
  auto job = compile_job("/b", "/torch");
  ASSERT_TRUE(b.restore(job));  // machine B: empty local cache, a hit from the remote
  EXPECT_EQ(fs.content("/b/.kbuild/k.o"), "OBJECT");
  EXPECT_EQ(b.run_counters().remote_hits, 1u);
  int puts_before = remote.puts;
  b.store(job, {"/b/k.cu"}, false);  // what came from the remote is not sent back
  EXPECT_EQ(remote.puts, puts_before);
  EXPECT_TRUE(warnings.empty());

  // A damaged remote object is a miss (and counted), never a bad output.
  for (auto& [path, bytes] : remote.files)
    if (path.starts_with("objects/")) bytes.back() ^= 1;
  fs.put("/c/k.cu", "kernel");
  CompileCache c(fs, "/cache-c", 1 << 30, nullptr);
  c.set_remote(&remote, false);
  EXPECT_FALSE(c.restore(compile_job("/c", "/torch")));
  EXPECT_EQ(c.run_counters().corrupt, 1u);
  EXPECT_FALSE(fs.has("/c/.kbuild/k.o"));
}

TEST(RemoteCache, ReadOnlyNeverWritesAndAFailureTurnsTheRemoteOffForTheRun) {
  fakes::MemFileSystem fs;
  MapRemote remote;
  fs.put("/a/k.cu", "kernel");
  fs.put("/a/.kbuild/k.o", "OBJECT");
  CompileCache readonly(fs, "/cache-a", 1 << 30, nullptr);
  readonly.set_remote(&remote, false);
  auto job = compile_job("/a", "/torch");
  readonly.store(job, {"/a/k.cu"}, false);
  EXPECT_EQ(remote.puts, 0);
  EXPECT_TRUE(remote.files.empty());

  remote.broken = true;
  std::vector<std::string> warnings;
  CompileCache cache(fs, "/cache-b", 1 << 30, [&](const std::string& w) { warnings.push_back(w); });
  cache.set_remote(&remote, true);
  fs.put("/b/k.cu", "kernel");
  EXPECT_FALSE(cache.restore(compile_job("/b", "/torch")));
  EXPECT_FALSE(cache.restore(compile_job("/b", "/torch")));
  EXPECT_EQ(remote.gets, 1);  // asked once, then left alone for the rest of the run
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("connection refused"), std::string::npos);
  EXPECT_EQ(cache.run_counters().remote_errors, 1u);
}

TEST(RemoteCache, SettingsFromTheEnvironment) {
  util::MapEnvironment none{{}};
  EXPECT_FALSE(*remote_settings(none));
  util::MapEnvironment env{{{"KBUILD_REMOTE_CACHE", "http://cache:8080/kb/"},
                            {"KBUILD_REMOTE_CACHE_MODE", "read-only"},
                            {"KBUILD_REMOTE_CACHE_TOKEN", "t"},
                            {"KBUILD_REMOTE_CACHE_TIMEOUT", "2.5"}}};
  auto settings = remote_settings(env);
  ASSERT_TRUE(settings && *settings);
  EXPECT_EQ((*settings)->url, "http://cache:8080/kb");
  EXPECT_FALSE((*settings)->writable);
  EXPECT_EQ((*settings)->bearer_token, "t");
  EXPECT_EQ((*settings)->timeout_seconds, 2.5);
  for (auto [name, value] : std::vector<std::pair<std::string, std::string>>{{"KBUILD_REMOTE_CACHE", "ftp://x"},
                                                                             {"KBUILD_REMOTE_CACHE_MODE", "rw"},
                                                                             {"KBUILD_REMOTE_CACHE_TIMEOUT", "0"},
                                                                             {"KBUILD_REMOTE_CACHE_USER", "u"}}) {
    util::MapEnvironment bad{{{"KBUILD_REMOTE_CACHE", "http://cache"}}};
    bad.values[name] = value;
    auto parsed = remote_settings(bad);
    ASSERT_FALSE(parsed) << name;
    EXPECT_EQ(parsed.error().code, ExitCode::usage);
  }
}
