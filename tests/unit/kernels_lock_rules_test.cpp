// The consumer side (tool/kbuild/lock), its rules: version specs, pyproject parsing, kernels.lock and
// the loader's variant choice. Resolution and installs: kernels_lock_resolve_test.cpp.

#include <gtest/gtest.h>

#include <map>

#include "kbuild/layout/digest.hpp"
#include "kbuild/lock/cache_index.hpp"
#include "kbuild/lock/download.hpp"
#include "kbuild/lock/hf_cache.hpp"
#include "kbuild/lock/inspect.hpp"
#include "kbuild/lock/lockfile.hpp"
#include "kbuild/lock/project.hpp"
#include "kbuild/lock/pyproject.hpp"
#include "kbuild/lock/resolver.hpp"
#include "kbuild/lock/variant_select.hpp"
#include "kbuild/lock/version_spec.hpp"
#include "kbuild/util/hash.hpp"
#include "support/mem_fs.hpp"

using namespace kbuild;
using namespace kbuild::lock;

// ---------------------------------------------------------------------------------------------
// Version specs

TEST(VersionSpec, BoundsMatchReleases) {
  struct Case {
    const char* bounds;
    const char* release;
    bool expected;
  };
  const Case cases[] = {
      {">=1.2,<2", "v1.2.0", true},
      {">=1.2,<2", "v1.9.9", true},
      {">=1.2,<2", "v2.0.0", false},
      {">=1.2,<2", "v1.1.9", false},
      {"~=1.4", "v1.4.0", true},
      {"~=1.4", "v1.9.0", true},
      {"~=1.4", "v2.0.0", false},
      {"~=1.4", "v1.3.9", false},
      {"~=1.4.2", "v1.4.9", true},
      {"~=1.4.2", "v1.5.0", false},
      {"==1.2.*", "v1.2.7", true},
      {"==1.2.*", "v1.3.0", false},
      {"^1.2", "v1.2.0", true},
      {"^1.2", "v1.99.0", true},
      {"^1.2", "v2.0.0", false},
      {"^0.3", "v0.3.5", true},
      {"^0.3", "v0.4.0", false},
      {"^0.0.3", "v0.0.3", true},
      {"^0.0.3", "v0.0.4", false},
      {"~1.2", "v1.2.9", true},
      {"~1.2", "v1.3.0", false},
      {"~1", "v1.9.0", true},
      {"~1", "v2.0.0", false},
      {"1.2.3", "v1.2.3", true},
      {"1.2", "v1.2.0", true},
      {"1.2", "v1.2.1", false},
      {"!=1.2.*", "v1.2.3", false},
      {"!=1.2.*", "v1.3.0", true},
      {"> 1.0 , <= 1.5", "v1.5.0", true},
      {">1.0", "v1.0.0", false},
      {"=1.0.0", "v1.0.0", true},
  };
  for (const auto& c : cases) {
    auto bounds = parse_bounds(c.bounds);
    ASSERT_TRUE(bounds) << c.bounds << ": " << bounds.error().message;
    auto release = parse_release_tag(c.release);
    ASSERT_TRUE(release) << c.release;
    EXPECT_EQ(bounds->matches(*release), c.expected) << c.bounds << " vs " << c.release;
  }
}

TEST(VersionSpec, MalformedBoundsSayWhere) {
  struct Case {
    const char* bounds;
    size_t offset;
    const char* says;
  };
  const Case cases[] = {
      {">=1.2,<x", 7, "expected a number"},
      {">=", 2, "expected a version"},
      {">=1.2,", 6, "empty clause"},
      {"~=1", 0, "~= needs"},
      {">=1.*", 3, "wildcard"},
      {">=v1.2", 2, "no \"v\" prefix"},
      {"1.2.3.4", 6, "at most three"},
  };
  for (const auto& c : cases) {
    auto bounds = parse_bounds(c.bounds);
    ASSERT_FALSE(bounds) << c.bounds;
    EXPECT_EQ(bounds.error().offset, c.offset) << c.bounds;
    EXPECT_NE(bounds.error().message.find(c.says), std::string::npos) << bounds.error().message;
  }
}

TEST(VersionSpec, ClassifiesStrings) {
  EXPECT_TRUE(std::holds_alternative<BoundsSpec>(*parse_version_string(">=1.2,<2")));
  EXPECT_TRUE(std::holds_alternative<BoundsSpec>(*parse_version_string("1.2")));
  auto tag = parse_version_string("v1.2.0");
  ASSERT_TRUE(std::holds_alternative<RevisionSpec>(*tag));
  EXPECT_EQ(std::get<RevisionSpec>(*tag).revision, "v1.2.0");
  auto commit = parse_version_string(std::string(40, 'A'));
  EXPECT_EQ(std::get<RevisionSpec>(*commit).revision, std::string(40, 'a'));
  EXPECT_TRUE(std::get<RevisionSpec>(*commit).is_commit());
  EXPECT_FALSE(parse_version_string("bad name"));
  EXPECT_FALSE(parse_version_string("a..b"));
  EXPECT_FALSE(parse_version_string(""));
}

TEST(VersionSpec, ReleaseTagsAndVersionBranches) {
  EXPECT_EQ(parse_release_tag("v1.2.3")->str(), "1.2.3");
  for (const char* bad : {"1.2.3", "v1.2", "v1.2.3-rc1", "v01.2.3", "v1..3", "v1.2.3.4", "v"})
    EXPECT_FALSE(parse_release_tag(bad)) << bad;
  EXPECT_EQ(*parse_version_branch("v12"), 12u);
  EXPECT_FALSE(parse_version_branch("v1.2"));
  EXPECT_FALSE(parse_version_branch("main"));
  EXPECT_LT(*parse_release_tag("v1.9.0"), *parse_release_tag("v1.10.0"));
}

// ---------------------------------------------------------------------------------------------
// kernels.lock

TEST(KernelsLockFile, RendersExactlyAsKernelsLock) {
  // The bytes `kernels lock` (0.17.2) writes for the same entries: sorted by repo id, then major
  // versions before revisions; two-space indent; no trailing newline.
  std::string a(40, 'a'), b = "45970f29905cd30d67acb71b1311ee35fe0e3830";
  std::vector<LockEntry> entries = {{{"zz/b", std::uint64_t{2}}, b},
                                    {{"aa/a", std::string("v1.2.0")}, a},
                                    {{"aa/a", std::uint64_t{10}}, a},
                                    {{"aa/a", std::uint64_t{9}}, a}};
  std::string text = render_lockfile(entries);
  std::string expected = "[\n";
  auto item = [](const std::string& repo, const std::string& key, const std::string& value, const std::string& commit,
                 bool last) {
    return "  {\n    \"dependency\": {\n      \"repo-id\": \"" + repo + "\",\n      \"" + key + "\": " + value +
           "\n    },\n    \"lock\": {\n      \"commit\": \"" + commit + "\"\n    }\n  }" + (last ? "\n" : ",\n");
  };
  expected += item("aa/a", "version", "9", a, false) + item("aa/a", "version", "10", a, false) +
              item("aa/a", "revision", "\"v1.2.0\"", a, false) + item("zz/b", "version", "2", b, true) + "]";
  EXPECT_EQ(text, expected);
  auto parsed = parse_lockfile(text, "kernels.lock");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(render_lockfile(*parsed), text);
  EXPECT_EQ(render_lockfile({}), "[]");
}

TEST(KernelsLockFile, ParsingIsAsStrictAsTheKernelsReader) {
  std::string c(40, 'c');
  auto entry = [&](const std::string& dependency, const std::string& lock) {
    return "[{\"dependency\": {" + dependency + "}, \"lock\": {" + lock + "}}]";
  };
  EXPECT_TRUE(parse_lockfile(entry("\"repo-id\": \"a/b\", \"version\": 1", "\"commit\": \"" + c + "\""), "f"));
  const std::pair<std::string, const char*> bad[] = {
      {entry("\"repo-id\": \"a/b\", \"version\": 1, \"x\": 1", "\"commit\": \"" + c + "\""), "unknown field \"x\""},
      {entry("\"repo-id\": \"a/b\", \"version\": 1", "\"commit\": \"" + c + "\", \"hash\": \"h\""), "unknown field"},
      {entry("\"repo-id\": \"a/b\"", "\"commit\": \"" + c + "\""), "exactly one of"},
      {entry("\"repo-id\": \"a/b\", \"version\": 1, \"revision\": \"v1\"", "\"commit\": \"" + c + "\""),
       "exactly one of"},
      {entry("\"repo-id\": \"a/b\", \"version\": -1", "\"commit\": \"" + c + "\""), "non-negative"},
      {entry("\"repo-id\": \"a/b\", \"version\": 1", "\"commit\": \"abc\""), "full commit id"},
      {"{}", "JSON array"},
      {"[", "not valid JSON"},
      {"[1e999]", "not valid JSON"},  // a number overflow is an error, not an exception (found by fuzzing)
  };
  for (const auto& [text, says] : bad) {
    auto parsed = parse_lockfile(text, "kernels.lock");
    ASSERT_FALSE(parsed) << text;
    EXPECT_EQ(parsed.error().code, ExitCode::usage);
    EXPECT_NE(parsed.error().message.find(says), std::string::npos) << parsed.error().message;
  }
  std::string twice = "[{\"dependency\": {\"repo-id\": \"a/b\", \"version\": 1}, \"lock\": {\"commit\": \"" + c +
                      "\"}}, {\"dependency\": {\"repo-id\": \"a/b\", \"version\": 1}, \"lock\": {\"commit\": \"" + c +
                      "\"}}]";
  EXPECT_NE(parse_lockfile(twice, "f").error().message.find("duplicate"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// pyproject.toml

TEST(Pyproject, ReadsEveryFormInFileOrder) {
  std::string text = R"([project]
name = "app"

[tool.kernels.dependencies]
"org/z" = 1
"org/b" = ">=1.2,<2"
"org/c" = "v1.2.0"
"org/d" = { version = 3 }
"org/e" = { version = "^1.2" }
"org/f" = { revision = "main" }
"org/a" = "0123456789abcdef0123456789abcdef01234567"
)";
  auto parsed = parse_pyproject_dependencies(text, "pyproject.toml");
  ASSERT_TRUE(parsed.ok()) << config::format_diagnostics(parsed.diagnostics);
  ASSERT_TRUE(parsed.has_table);
  ASSERT_EQ(parsed.requirements.size(), 7u);
  EXPECT_EQ(parsed.requirements[0].repo_id, "org/z");
  EXPECT_EQ(std::get<MajorSpec>(parsed.requirements[0].spec).major, 1u);
  EXPECT_EQ(parsed.requirements[0].location.line, 5);
  EXPECT_EQ(std::get<BoundsSpec>(parsed.requirements[1].spec).bounds.text, ">=1.2,<2");
  EXPECT_EQ(std::get<RevisionSpec>(parsed.requirements[2].spec).revision, "v1.2.0");
  EXPECT_EQ(std::get<MajorSpec>(parsed.requirements[3].spec).major, 3u);
  EXPECT_TRUE(std::holds_alternative<BoundsSpec>(parsed.requirements[4].spec));
  EXPECT_EQ(std::get<RevisionSpec>(parsed.requirements[5].spec).revision, "main");
  EXPECT_TRUE(std::get<RevisionSpec>(parsed.requirements[6].spec).is_commit());
}

TEST(Pyproject, ReportsEveryProblemWithItsPosition) {
  std::string text = R"([tool.kernels.dependencies]
"not-a-repo" = 1
"org/a" = -1
"org/b" = ">=1.2,<x"
"org/c" = 1.5
"org/d" = { version = 1, revision = "v1" }
"org/e" = { versoin = 1 }
"org/f" = { version = "v1.2.0" }
)";
  auto parsed = parse_pyproject_dependencies(text, "p.toml");
  ASSERT_FALSE(parsed.ok());
  std::string all = config::format_diagnostics(parsed.diagnostics);
  EXPECT_NE(all.find("p.toml:2:1: error: \"not-a-repo\" is not a Hub repository id"), std::string::npos) << all;
  EXPECT_NE(all.find("p.toml:3:11: error: the version of org/a is negative"), std::string::npos) << all;
  EXPECT_NE(all.find("p.toml:4:19: error: invalid version of org/b: expected a number"), std::string::npos) << all;
  EXPECT_NE(all.find("p.toml:5:11: error: the version of org/c must be an integer or a string"), std::string::npos);
  EXPECT_NE(all.find("org/d needs exactly one of"), std::string::npos) << all;
  EXPECT_NE(all.find("p.toml:7:13: error: unknown key \"versoin\""), std::string::npos) << all;
  EXPECT_NE(all.find("`version` of org/f must be a major version or bounds"), std::string::npos) << all;
  EXPECT_EQ(parsed.diagnostics.size(), 8u) << all;  // org/e: the unknown key and the missing version
}

TEST(Pyproject, PositionsInsideEscapedAndMultiLineStrings) {
  std::string text =
      "[tool.kernels.dependencies]\n"
      "\"org/a\" = \"\\u003e=1.2,<x\"\n"            // line 2: an escape before the bad character
      "\"org/b\" = '>=1.2,<x'\n"                    // line 3: a literal string
      "\"org/c\" = \"\"\"\n>=1.2,<x\"\"\"\n"        // lines 4-5: the first newline is dropped
      "\"org/d\" = \"\"\">=1.2,\\\n   <x\"\"\"\n";  // lines 6-7: a line-ending backslash
  auto parsed = parse_pyproject_dependencies(text, "p.toml");
  std::string all = config::format_diagnostics(parsed.diagnostics);
  EXPECT_NE(all.find("p.toml:2:24: error: invalid version of org/a"), std::string::npos) << all;
  EXPECT_NE(all.find("p.toml:3:19: error: invalid version of org/b"), std::string::npos) << all;
  EXPECT_NE(all.find("p.toml:5:8: error: invalid version of org/c"), std::string::npos) << all;
  EXPECT_NE(all.find("p.toml:7:5: error: invalid version of org/d"), std::string::npos) << all;
  EXPECT_EQ(parsed.diagnostics.size(), 4u) << all;
}

TEST(Pyproject, AnEmptyTableIsRefusedAsKernelsLockRefusesIt) {
  for (std::string text : {"[tool.kernels.dependencies]\n", "[tool.kernels]\ndependencies = {}\n"}) {
    auto parsed = parse_pyproject_dependencies(text, "p.toml");
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_NE(config::format_diagnostics(parsed.diagnostics).find("names no kernels"), std::string::npos);
  }
}

TEST(Pyproject, MissingTableAndBrokenToml) {
  auto none = parse_pyproject_dependencies("[project]\nname = \"x\"\n", "p.toml");
  EXPECT_TRUE(none.ok());
  EXPECT_FALSE(none.has_table);
  auto broken = parse_pyproject_dependencies("[tool.kernels.dependencies\n", "p.toml");
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(config::format_diagnostics(broken.diagnostics).find("p.toml:1:"), std::string::npos);
  auto not_table = parse_pyproject_dependencies("[tool.kernels]\ndependencies = 3\n", "p.toml");
  EXPECT_FALSE(not_table.ok());
}

// ---------------------------------------------------------------------------------------------
// The loader's choice

namespace {
SystemFacts cuda_system(unsigned cuda_minor = 0) {
  SystemFacts s;
  s.torch = util::Version({2, 11});
  s.torch_cxx11_abi = true;
  s.backend = {"cuda", util::Version({13, cuda_minor})};
  return s;
}
}  // namespace

TEST(VariantSelect, ParsesNamesAsTheLoader) {
  auto v = parse_loader_variant("torch211-cxx11-cu130-x86_64-linux");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->framework_version.major_minor(), "2.11");
  EXPECT_EQ(v->backend.name, "cuda");
  EXPECT_EQ(v->backend.version->major_minor(), "13.0");
  EXPECT_EQ(*v->cxx11_abi, true);
  EXPECT_EQ(parse_loader_variant("torch-stable-abi211-cu130-x86_64-linux")->framework,
            LoaderVariant::Framework::stable_abi);
  EXPECT_EQ(parse_loader_variant("tvm-ffi01-cu130-x86_64-linux")->framework_version.major_minor(), "0.1");
  EXPECT_EQ(parse_loader_variant("torch-cuda")->noarch_backend, "cuda");
  for (const char* bad : {"random", "torch211-cu130-x86_64", "torch211-cxx11-cuda-x86_64-linux", "torchx-cpu-a-b"})
    EXPECT_FALSE(parse_loader_variant(bad)) << bad;
}

TEST(VariantSelect, PicksAsTheLoaderDoes) {
  std::vector<std::string> names = {"torch211-cxx11-cpu-x86_64-linux",
                                    "torch211-cxx11-cu130-x86_64-linux",
                                    "torch211-cxx11-cu132-x86_64-linux",
                                    "torch215-cxx11-cu130-x86_64-linux",
                                    "torch-cuda",
                                    "torch-universal",
                                    "weird"};
  std::vector<VariantDecision> trace;
  EXPECT_EQ(*select_variant(names, cuda_system(0), &trace), "torch211-cxx11-cu130-x86_64-linux");
  // CUDA 13.2 accepts 13.0 and 13.2 variants and prefers the higher minor.
  EXPECT_EQ(*select_variant(names, cuda_system(2)), "torch211-cxx11-cu132-x86_64-linux");
  SystemFacts cpu;
  cpu.torch = util::Version({2, 11});
  cpu.torch_cxx11_abi = true;
  EXPECT_EQ(*select_variant(names, cpu), "torch211-cxx11-cpu-x86_64-linux");
  SystemFacts aarch = cuda_system();
  aarch.cpu = "aarch64";
  EXPECT_EQ(*select_variant(names, aarch), "torch-cuda");  // noarch before universal
  EXPECT_EQ(*select_variant({"torch-universal", "torch-cpu"}, cpu), "torch-cpu");
  // Untagged before cxx11-tagged (it outranks the CUDA minor), stable ABI before both.
  EXPECT_EQ(*select_variant({"torch211-cxx11-cu130-x86_64-linux", "torch211-cu130-x86_64-linux"}, cuda_system()),
            "torch211-cu130-x86_64-linux");
  EXPECT_EQ(*select_variant({"torch211-cu130-x86_64-linux", "torch-stable-abi210-cu130-x86_64-linux",
                             "torch-stable-abi29-cu130-x86_64-linux"},
                            cuda_system()),
            "torch-stable-abi210-cu130-x86_64-linux");
  EXPECT_FALSE(select_variant({"torch-stable-abi212-cu130-x86_64-linux"}, cuda_system()));
  // Rejections say why, as the loader's trace does; the unparseable name is not in the trace.
  ASSERT_EQ(trace.size(), 6u);
  EXPECT_TRUE(trace[0].accepted);
  auto reason = [&](const std::string& name) {
    for (const auto& d : trace)
      if (d.variant.name == name) return d.reason;
    return std::string("?");
  };
  EXPECT_EQ(reason("torch211-cxx11-cpu-x86_64-linux"), "backend (cpu) does not match selected backend (cu130)");
  EXPECT_EQ(reason("torch211-cxx11-cu132-x86_64-linux"),
            "CUDA version (13.2) is not compatible with system CUDA version (13.0)");
  EXPECT_EQ(reason("torch215-cxx11-cu130-x86_64-linux"),
            "Torch version (2.15) does not match environment Torch version (2.11)");
  EXPECT_EQ(reason("torch-universal"), "");
}

// ---------------------------------------------------------------------------------------------
// Offline: the Hugging Face cache as the index

TEST(CacheIndex, AnswersFromTheCacheAndNamesWhatIsMissing) {
  fakes::MemFileSystem fs;
  const std::string commit(40, 'c'), lfs(64, 'e'), git(40, 'd');
  const std::string repo = "/hf/kernels--org--relu";
  fs.put(repo + "/blobs/" + lfs, "library");
  fs.put(repo + "/blobs/" + git, "{}");
  const std::string variant = repo + "/snapshots/" + commit + "/build/torch211-cxx11-cpu-x86_64-linux";
  ASSERT_TRUE(fs.make_dirs(variant));
  ASSERT_TRUE(fs.create_symlink("../../../../blobs/" + lfs, variant + "/_relu.abi3.so"));
  ASSERT_TRUE(fs.create_symlink("../../../../blobs/" + git, variant + "/metadata.json"));
  fs.put(repo + "/refs/v1", commit + "\n");
  fs.put(repo + "/refs/v1.0.0", commit);
  fs.put(repo + "/refs/pr/1", commit);

  CacheKernelIndex index(fs, "/hf", {"org/relu"});
  auto dirs = index.variant_dirs("org/relu", commit);
  ASSERT_TRUE(dirs) << dirs.error().message;
  EXPECT_EQ(*dirs, std::vector<std::string>{"torch211-cxx11-cpu-x86_64-linux"});
  auto files = index.list_files("org/relu", commit, "build/torch211-cxx11-cpu-x86_64-linux");
  ASSERT_TRUE(files) << files.error().message;
  ASSERT_EQ(files->size(), 2u);
  EXPECT_EQ((*files)[0].path, "build/torch211-cxx11-cpu-x86_64-linux/_relu.abi3.so");
  EXPECT_EQ((*files)[0].lfs_sha256, lfs);  // named by its blob, verified by the caller
  EXPECT_EQ((*files)[1].oid, git);
  EXPECT_EQ(*index.read_file("org/relu", commit, "build/torch211-cxx11-cpu-x86_64-linux/metadata.json"), "{}");
  auto refs = index.refs("org/relu");
  ASSERT_TRUE(refs);
  EXPECT_EQ(refs->branches.at("v1"), commit);
  EXPECT_EQ(refs->tags.at("v1.0.0"), commit);
  EXPECT_EQ(refs->branches.size() + refs->tags.size(), 2u);  // pull requests are not versions
  EXPECT_TRUE(*index.trusted_publisher("org"));              // locked: checked when the lock was made

  // What the cache lacks is a network error naming it, with how to get it.
  for (const auto& missing : {index.variant_dirs("org/relu", std::string(40, 'f')).error(),
                              index.refs("org/other").error(), index.trusted_publisher("stranger").error(),
                              index.fetch("org/relu", commit, "build/x/y.so", "/tmp/x").error()}) {
    EXPECT_EQ(missing.code, ExitCode::network) << missing.message;
    EXPECT_TRUE(missing.message.starts_with("offline (HF_HUB_OFFLINE): ")) << missing.message;
  }
  EXPECT_TRUE(offline_requested({{"HF_HUB_OFFLINE", "1"}}));
  EXPECT_TRUE(offline_requested({{"HF_HUB_OFFLINE", "True"}}));
  EXPECT_FALSE(offline_requested({{"HF_HUB_OFFLINE", "0"}}));
  EXPECT_FALSE(offline_requested({}));
}
