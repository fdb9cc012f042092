// The consumer side (tool/kbuild/lock), resolution and installs: the resolver, `kbuild lock` on a
// project, verified downloads into the Hugging Face cache and inspection, through an in-memory
// registry and filesystem.

#include <gtest/gtest.h>

#include <map>

#include "kbuild/layout/digest.hpp"
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
// Resolution through an in-memory registry

namespace {

struct FakeRepo {
  hub::Refs refs;
  std::map<std::string, std::map<std::string, std::string>> files;  ///< commit -> path -> content
};

class FakeIndex final : public KernelIndex {
 public:
  std::map<std::string, FakeRepo> repos;
  std::map<std::string, bool> trusted;
  std::vector<std::string> calls;
  std::set<std::string> corrupt_downloads;  ///< paths whose fetch returns other bytes

  Result<bool> trusted_publisher(const std::string& ns) override {
    calls.push_back("trust " + ns);
    return trusted.count(ns) ? trusted[ns] : false;
  }
  Result<hub::Refs> refs(const std::string& repo_id) override {
    calls.push_back("refs " + repo_id);
    KB_TRY_ASSIGN(auto* repo, find(repo_id));
    return repo->refs;
  }
  Result<std::vector<std::string>> variant_dirs(const std::string& repo_id, const std::string& commit) override {
    KB_TRY_ASSIGN(auto* files, at(repo_id, commit));
    std::set<std::string> names;
    for (const auto& [path, content] : *files)
      if (path.starts_with("build/")) names.insert(path.substr(6, path.find('/', 6) - 6));
    return std::vector<std::string>(names.begin(), names.end());
  }
  Result<std::vector<hub::RemoteFile>> list_files(const std::string& repo_id, const std::string& commit,
                                                  const std::string& folder) override {
    KB_TRY_ASSIGN(auto* files, at(repo_id, commit));
    std::vector<hub::RemoteFile> out;
    for (const auto& [path, content] : *files) {
      if (!path.starts_with(folder + "/")) continue;
      hub::RemoteFile file{path, util::git_blob_id(content), content.size(), std::nullopt};
      if (path.ends_with(".so")) file.lfs_sha256 = util::sha256_hex(content);
      out.push_back(file);
    }
    return out;
  }
  Result<std::string> read_file(const std::string& repo_id, const std::string& commit,
                                const std::string& path) override {
    KB_TRY_ASSIGN(auto* files, at(repo_id, commit));
    auto it = files->find(path);
    if (it == files->end()) return fail("file not found: " + path, "", ExitCode::network);
    return it->second;
  }
  Result<void> fetch(const std::string& repo_id, const std::string& commit, const std::string& path,
                     const std::filesystem::path& destination) override {
    calls.push_back("fetch " + path);
    KB_TRY_ASSIGN(std::string content, read_file(repo_id, commit, path));
    if (corrupt_downloads.count(path)) content += "!";
    return fs->write_file_atomic(destination, content);
  }

  fakes::MemFileSystem* fs = nullptr;

 private:
  // What HubClient returns for the Hub's 404 (RepoNotFound, RevisionNotFound).
  static Error hub_404(std::string message) {
    Error error{ExitCode::network, std::move(message), ""};
    error.kind = ErrorKind::http;
    error.http_status = 404;
    return error;
  }
  Result<FakeRepo*> find(const std::string& repo_id) {
    auto it = repos.find(repo_id);
    if (it == repos.end()) return fail(hub_404("repository not found: " + repo_id));
    return &it->second;
  }
  Result<const std::map<std::string, std::string>*> at(const std::string& repo_id, const std::string& commit) {
    KB_TRY_ASSIGN(auto* repo, find(repo_id));
    auto it = repo->files.find(commit);
    if (it == repo->files.end()) return fail(hub_404("revision not found: " + commit));
    return &it->second;
  }
};

std::string commit_id(char c) { return std::string(40, c); }

// A variant's files with a metadata.json whose digest covers them.
std::map<std::string, std::string> variant_files(const std::string& variant, const std::string& deps_json = "[]",
                                                 const std::string& so = "ELF library bytes") {
  std::map<std::string, std::string> files = {
      {"__init__.py", "from ._ops import ops\n"}, {"_ops.py", "ops = None\n"}, {"_k_cpu_abc.abi3.so", so}};
  std::string digest;
  for (const auto& [path, content] : files)
    digest += std::string(digest.empty() ? "" : ",") + "\"" + path + "\":\"" + layout::digest_value(content) + "\"";
  std::map<std::string, std::string> out;
  for (const auto& [path, content] : files) out["build/" + variant + "/" + path] = content;
  out["build/" + variant + "/metadata.json"] =
      R"({"name":"k","id":"_k_cpu_abc","version":1,"license":"mit","python-depends":[],"kernel-depends":)" + deps_json +
      R"(,"backend":{"type":"cpu"},"digest":{"algorithm":"sha256","files":{)" + digest + "}}}";
  return out;
}

const std::string k_cpu = "torch211-cxx11-cpu-x86_64-linux";

FakeIndex sample_index() {
  FakeIndex index;
  index.trusted = {{"org", true}, {"other", false}};
  FakeRepo& k = index.repos["org/k"];
  k.refs.branches = {{"main", commit_id('0')}, {"v1", commit_id('1')}, {"v2", commit_id('2')}};
  k.refs.tags = {{"v1.0.0", commit_id('a')}, {"v1.2.0", commit_id('b')}, {"v1.10.0", commit_id('1')},
                 {"v2.0.0", commit_id('2')}, {"v3.0.0", commit_id('3')}, {"nightly", commit_id('c')}};
  for (char c : std::string("012abc3")) k.files[commit_id(c)] = variant_files(k_cpu);
  return index;
}

Requirement requirement(const std::string& repo, VersionSpec spec) { return {repo, std::move(spec), {}}; }

BoundsSpec bounds(const char* text) { return {*parse_bounds(text)}; }

}  // namespace

TEST(LockResolver, ResolvesEachKindOfSpec) {
  FakeIndex index = sample_index();
  auto resolve = [&](VersionSpec spec) { return resolve_lock({requirement("org/k", std::move(spec))}, {}, {}, index); };
  auto major = resolve(MajorSpec{1});
  ASSERT_TRUE(major) << major.error().message;
  ASSERT_EQ(major->dependencies.size(), 1u);
  EXPECT_EQ(major->dependencies[0].entry.commit, commit_id('1'));
  EXPECT_EQ(major->dependencies[0].source, "branch v1");
  EXPECT_EQ(major->dependencies[0].variants, std::vector<std::string>{k_cpu});

  // Bounds pick the highest release whose major is a published branch (v3.0.0 has no branch v3).
  auto caret = resolve(bounds("^1.0"));
  ASSERT_TRUE(caret) << caret.error().message;
  EXPECT_EQ(caret->dependencies[0].entry.dependency.revision(), "v1.10.0");
  EXPECT_EQ(caret->dependencies[0].source, "tag v1.10.0");
  EXPECT_EQ(resolve(bounds(">=1.0,<1.5"))->dependencies[0].entry.commit, commit_id('b'));
  auto none = resolve(bounds(">=3"));
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, ExitCode::failure);
  EXPECT_NE(none.error().message.find("no release of org/k satisfies \">=3\""), std::string::npos);
  EXPECT_NE(none.error().hint.find("v1.0.0, v1.10.0, v1.2.0, v2.0.0"), std::string::npos) << none.error().hint;
  EXPECT_NE(none.error().hint.find("v3.0.0"), std::string::npos) << none.error().hint;

  EXPECT_EQ(resolve(RevisionSpec{"nightly"})->dependencies[0].entry.commit, commit_id('c'));
  EXPECT_EQ(resolve(RevisionSpec{"main"})->dependencies[0].source, "branch main");
  auto pinned = resolve(RevisionSpec{commit_id('a')});
  EXPECT_EQ(pinned->dependencies[0].entry.commit, commit_id('a'));
  EXPECT_EQ(pinned->dependencies[0].source, "commit");

  auto missing = resolve(MajorSpec{7});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("version 7 of org/k not found"), std::string::npos);
  EXPECT_EQ(missing.error().hint, "available versions: 1, 2");
  auto no_tag = resolve(RevisionSpec{"v9.9.9"});
  ASSERT_FALSE(no_tag);
  EXPECT_NE(no_tag.error().message.find("no branch or tag \"v9.9.9\""), std::string::npos);
}

TEST(LockResolver, TrustIsCheckedBeforeAnyFileIsReadAndAfterTheRepoIsFound) {
  FakeIndex index = sample_index();
  index.repos["other/k"] = index.repos["org/k"];
  auto untrusted = resolve_lock({requirement("other/k", MajorSpec{1})}, {}, {}, index);
  ASSERT_FALSE(untrusted);
  EXPECT_NE(untrusted.error().message.find("not from a trusted publisher"), std::string::npos);
  EXPECT_NE(untrusted.error().hint.find("--trust other"), std::string::npos);
  EXPECT_NE(untrusted.error().hint.find("kbuild hub org other --trusted"), std::string::npos);
  // Its versions were listed (no file of it was read): a repo that does not exist is "not found",
  // not "untrusted", whose hint (--trust) would only lead there.
  EXPECT_EQ(index.calls, (std::vector<std::string>{"refs other/k", "trust other"}));
  LockOptions options;
  options.trusted = {"other/k"};
  EXPECT_TRUE(resolve_lock({requirement("other/k", MajorSpec{1})}, {}, options, index));
  auto missing = resolve_lock({requirement("nobody/k", MajorSpec{1})}, {}, {}, index);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message.find("trusted"), std::string::npos) << missing.error().message;
}

TEST(LockResolver, CommitsAreLowercaseAndAVersionWithoutBuildIsRefused) {
  FakeIndex index = sample_index();
  std::string upper = commit_id('A');
  auto pinned = resolve_lock({requirement("org/k", RevisionSpec{upper})}, {}, {}, index);
  ASSERT_TRUE(pinned) << pinned.error().message;
  EXPECT_EQ(pinned->dependencies[0].entry.commit, commit_id('a'));  // as kernels writes it
  index.repos["org/k"].refs.branches["v4"] = commit_id('4');        // a branch without build/
  index.repos["org/k"].files[commit_id('4')] = {};
  auto empty = resolve_lock({requirement("org/k", MajorSpec{4})}, {}, {}, index);
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message.find("holds no build variant"), std::string::npos) << empty.error().message;
}

TEST(LockResolver, FollowsKernelDependenciesAndRefusesCycles) {
  FakeIndex index = sample_index();
  FakeRepo& a = index.repos["org/a"];
  a.refs.branches = {{"v1", commit_id('d')}};
  a.files[commit_id('d')] = variant_files(k_cpu, R"([{"repo-id":"org/k","version":2}])");
  auto outcome = resolve_lock({requirement("org/a", MajorSpec{1}), requirement("org/k", MajorSpec{1})}, {}, {}, index);
  ASSERT_TRUE(outcome) << outcome.error().message;
  ASSERT_EQ(outcome->dependencies.size(), 3u);
  EXPECT_EQ(outcome->dependencies[1].entry.dependency.str(), "org/k@1");
  EXPECT_EQ(outcome->dependencies[2].entry.dependency.str(), "org/k@2");
  EXPECT_EQ(outcome->dependencies[2].required_by, std::vector<std::string>{"org/a@1"});

  // org/k v2 now depends back on org/a v1.
  index.repos["org/k"].files[commit_id('2')] = variant_files(k_cpu, R"([{"repo-id":"org/a","version":1}])");
  auto cycle = resolve_lock({requirement("org/a", MajorSpec{1})}, {}, {}, index);
  ASSERT_FALSE(cycle);
  EXPECT_EQ(cycle.error().message, "cyclic kernel dependency: org/a@1 -> org/k@2 -> org/a@1");
}

TEST(LockResolver, AMissingTransitiveCommitNamesTheKernelThatRequiredIt) {
  FakeIndex index = sample_index();
  FakeRepo& a = index.repos["org/a"];
  a.refs.branches = {{"v1", commit_id('d')}};
  std::string gone = commit_id('9');
  a.files[commit_id('d')] = variant_files(k_cpu, R"([{"repo-id":"org/k","revision":")" + gone + R"("}])");
  auto outcome = resolve_lock({requirement("org/a", MajorSpec{1})}, {}, {}, index);
  ASSERT_FALSE(outcome);
  EXPECT_EQ(outcome.error().code, ExitCode::failure);  // the dependency's fault: no retry helps
  EXPECT_EQ(outcome.error().message, "org/k@" + gone + " (commit " + gone +
                                         ") not found on the Hub: revision not found: " + gone +
                                         " (required by org/a@1)");
  EXPECT_NE(outcome.error().hint.find("org/a@1"), std::string::npos) << outcome.error().hint;
}

TEST(LockResolver, ReportsEveryDependencyThatCannotBeLockedInOneRun) {
  FakeIndex index = sample_index();
  auto outcome = resolve_lock(
      {requirement("org/k", MajorSpec{7}), requirement("org/k", MajorSpec{1}), requirement("org/none", MajorSpec{1})},
      {}, {}, index);
  ASSERT_FALSE(outcome);
  const std::string& message = outcome.error().message;
  EXPECT_TRUE(message.starts_with("2 kernel dependencies could not be locked:")) << message;
  EXPECT_NE(message.find("version 7 of org/k not found"), std::string::npos) << message;
  EXPECT_NE(message.find("  - repository not found: org/none"), std::string::npos) << message;
  EXPECT_NE(message.find("hint: available versions: 1, 2"), std::string::npos) << message;
  EXPECT_EQ(outcome.error().code, ExitCode::failure);  // one of them is not the network's
}

TEST(LockResolver, KeepsLockedCommitsUntilUpgraded) {
  FakeIndex index = sample_index();
  std::vector<LockEntry> existing = {{{"org/k", std::uint64_t{1}}, commit_id('a')},
                                     {{"org/k", std::string("v1.2.0")}, commit_id('b')}};
  std::vector<Requirement> requirements = {requirement("org/k", MajorSpec{1}), requirement("org/k", bounds("^1.1"))};
  std::vector<std::string> warnings;
  LockOptions keep;
  keep.warn = [&](const std::string& line) { warnings.push_back(line); };
  auto kept = resolve_lock(requirements, existing, keep, index);
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_EQ(warnings, std::vector<std::string>{"using version 1 of org/k, but version 2 is available"});
  EXPECT_EQ(kept->dependencies[0].entry.commit, commit_id('a'));
  EXPECT_TRUE(kept->dependencies[0].kept);
  EXPECT_EQ(kept->dependencies[1].entry.dependency.revision(), "v1.2.0");  // still satisfies ^1.1
  LockOptions upgrade;
  upgrade.upgrade = {"org/k"};
  auto moved = resolve_lock(requirements, existing, upgrade, index);
  EXPECT_EQ(moved->dependencies[0].entry.commit, commit_id('1'));
  EXPECT_EQ(moved->dependencies[1].entry.dependency.revision(), "v1.10.0");
  // A bound the locked release no longer satisfies is resolved again without --upgrade.
  auto narrowed = resolve_lock({requirement("org/k", bounds("~=1.10"))}, existing, {}, index);
  EXPECT_EQ(narrowed->dependencies[0].entry.dependency.revision(), "v1.10.0");
}

// ---------------------------------------------------------------------------------------------
// The use case on a project directory

TEST(LockProject, WritesOnlyWhatResolvedAndChecks) {
  FakeIndex index = sample_index();
  fakes::MemFileSystem fs;
  fs.put("/p/pyproject.toml", "[tool.kernels.dependencies]\n\"org/k\" = 1\n");
  LockRequest request;
  request.project_dir = "/p";
  request.mode = LockMode::check;
  auto missing = lock_project(request, index, fs);
  ASSERT_TRUE(missing);
  EXPECT_FALSE(missing->up_to_date);
  EXPECT_FALSE(fs.has("/p/kernels.lock"));
  request.mode = LockMode::write;
  auto written = lock_project(request, index, fs);
  ASSERT_TRUE(written && written->written);
  EXPECT_EQ(fs.content("/p/kernels.lock"), written->lock.text);
  fs.clear_log();
  auto again = lock_project(request, index, fs);
  EXPECT_TRUE(again->up_to_date);
  EXPECT_TRUE(fs.written().empty());  // unchanged: not rewritten
  request.mode = LockMode::check;
  EXPECT_TRUE(lock_project(request, index, fs)->up_to_date);

  fs.put("/p/pyproject.toml", "[tool.kernels.dependencies]\n\"org/k\" = 1\n\"org/missing\" = 1\n");
  request.mode = LockMode::write;
  index.trusted["org"] = true;
  auto failed = lock_project(request, index, fs);
  ASSERT_FALSE(failed);
  EXPECT_EQ(fs.content("/p/kernels.lock"), written->lock.text);  // nothing half-written

  fs.put("/p/pyproject.toml", "[tool.kernels.dependencies]\n\"org/k\" = \">=\"\n");
  std::vector<config::Diagnostic> seen;
  request.diagnostics = [&](const std::vector<config::Diagnostic>& d) { seen = d; };
  auto invalid = lock_project(request, index, fs);
  ASSERT_FALSE(invalid);
  EXPECT_EQ(invalid.error().code, ExitCode::usage);
  EXPECT_EQ(seen.size(), 1u);
  fs.put("/p/pyproject.toml", "[project]\n");
  EXPECT_NE(lock_project(request, index, fs).error().message.find("no [tool.kernels.dependencies]"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Verified installs into the Hugging Face cache

TEST(HfCache, LocationAndLayoutFollowHuggingfaceHub) {
  EXPECT_EQ(resolve_hf_cache({{"HOME", "/h"}}).root, "/h/.cache/huggingface/hub");
  EXPECT_EQ(resolve_hf_cache({{"HOME", "/h"}, {"XDG_CACHE_HOME", "/x"}}).root, "/x/huggingface/hub");
  EXPECT_EQ(resolve_hf_cache({{"HF_HOME", "~/hf"}, {"HOME", "/h"}}).root, "/h/hf/hub");
  EXPECT_EQ(resolve_hf_cache({{"HF_HOME", "/hf"}, {"HF_HUB_CACHE", "/c"}}).root, "/c");
  auto kernels = resolve_hf_cache({{"HF_HUB_CACHE", "/c"}, {"KERNELS_CACHE", "/k"}});
  EXPECT_EQ(kernels.root, "/k");
  EXPECT_EQ(kernels.origin, "KERNELS_CACHE");
  EXPECT_EQ(repo_folder_name("org/name"), "kernels--org--name");
  EXPECT_EQ(snapshot_link_target("build/v/x.so", "e"), "../../../../blobs/e");
  EXPECT_EQ(snapshot_link_target("README.md", "e"), "../../blobs/e");
}

namespace {
struct DownloadFixture {
  FakeIndex index = sample_index();
  fakes::MemFileSystem fs;
  DownloadOptions options;
  std::vector<LockEntry> entries = {{{"org/k", std::uint64_t{1}}, commit_id('1')}};
  DownloadFixture() {
    index.fs = &fs;
    options.cache_root = "/cache";
    options.system.torch = util::Version({2, 11});
    options.system.torch_cxx11_abi = true;
  }
  std::string snapshot(const std::string& rel) const {
    return "/cache/kernels--org--k/snapshots/" + commit_id('1') + "/build/" + k_cpu + "/" + rel;
  }
};
}  // namespace

TEST(Download, InstallsVerifiedLinksIntoTheCache) {
  DownloadFixture f;
  auto outcome = download_locked(f.entries, f.options, f.index, f.fs);
  ASSERT_TRUE(outcome) << outcome.error().message;
  ASSERT_EQ(outcome->variants.size(), 1u);
  EXPECT_EQ(outcome->variants[0].files, 4u);
  EXPECT_EQ(outcome->variants[0].downloaded, 4u);
  std::string so = "ELF library bytes";
  EXPECT_EQ(f.fs.link_target(f.snapshot("_k_cpu_abc.abi3.so")), "../../../../blobs/" + util::sha256_hex(so));
  EXPECT_EQ(*f.fs.read_file(f.snapshot("_k_cpu_abc.abi3.so")), so);
  std::string init = "from ._ops import ops\n";
  EXPECT_EQ(f.fs.link_target(f.snapshot("__init__.py")), "../../../../blobs/" + util::git_blob_id(init));
  // A second run re-verifies the cached blobs and downloads nothing.
  f.index.calls.clear();
  auto again = download_locked(f.entries, f.options, f.index, f.fs);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->variants[0].downloaded, 0u);
  for (const auto& call : f.index.calls) EXPECT_FALSE(call.starts_with("fetch")) << call;
}

TEST(Download, ADamagedCachedBlobIsReplaced) {
  DownloadFixture f;
  ASSERT_TRUE(download_locked(f.entries, f.options, f.index, f.fs));
  std::string blob = "/cache/kernels--org--k/blobs/" + util::sha256_hex("ELF library bytes");
  f.fs.put(blob, "flipped bytes");
  auto again = download_locked(f.entries, f.options, f.index, f.fs);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->variants[0].downloaded, 1u);
  EXPECT_EQ(f.fs.content(blob), "ELF library bytes");
}

TEST(Download, RefusesVariantsThatDoNotMatchTheirDigest) {
  DownloadFixture f;
  // The Hub serves a library that is not the one metadata.json describes (consistent ids, wrong digest).
  auto& files = f.index.repos["org/k"].files[commit_id('1')];
  files["build/" + k_cpu + "/_k_cpu_abc.abi3.so"] = "tampered library";
  auto tampered = download_locked(f.entries, f.options, f.index, f.fs);
  ASSERT_FALSE(tampered);
  EXPECT_NE(
      tampered.error().message.find("build/" + k_cpu + "/_k_cpu_abc.abi3.so does not match metadata.json's digest"),
      std::string::npos)
      << tampered.error().message;
  EXPECT_FALSE(f.fs.stat(f.snapshot("__init__.py")).exists);  // nothing of the variant is visible

  DownloadFixture extra;
  extra.index.repos["org/k"].files[commit_id('1')]["build/" + k_cpu + "/extra.py"] = "x";
  auto unknown = download_locked(extra.entries, extra.options, extra.index, extra.fs);
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("extra.py is not listed in metadata.json's digest"), std::string::npos);

  DownloadFixture corrupt;
  corrupt.index.corrupt_downloads = {"build/" + k_cpu + "/_ops.py"};
  auto broken = download_locked(corrupt.entries, corrupt.options, corrupt.index, corrupt.fs);
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.error().message.find("does not match the Hub's id"), std::string::npos);
  auto listing = corrupt.fs.list_dir("/cache/kernels--org--k/blobs");
  ASSERT_TRUE(listing);
  for (const auto& entry : *listing) EXPECT_EQ(entry.name.find(".tmp"), std::string::npos) << entry.name;

  DownloadFixture undigested;
  auto& meta = undigested.index.repos["org/k"].files[commit_id('1')]["build/" + k_cpu + "/metadata.json"];
  meta = meta.substr(0, meta.find(",\"digest\"")) + "}";
  auto no_digest = download_locked(undigested.entries, undigested.options, undigested.index, undigested.fs);
  ASSERT_FALSE(no_digest);
  EXPECT_NE(no_digest.error().message.find("has no digest"), std::string::npos);
}

TEST(Download, SaysWhyNoVariantFits) {
  DownloadFixture f;
  f.options.system.backend = {"cuda", util::Version({13, 0})};
  auto none = download_locked(f.entries, f.options, f.index, f.fs);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("can be loaded on this machine (x86_64-linux, torch 2.11 (cxx11), cuda 13.0)"),
            std::string::npos)
      << none.error().message;
  EXPECT_NE(none.error().hint.find(k_cpu + ": backend (cpu) does not match selected backend (cu130)"),
            std::string::npos);
  f.options.all_variants = true;
  EXPECT_TRUE(download_locked(f.entries, f.options, f.index, f.fs));
}

// ---------------------------------------------------------------------------------------------
// versions and info

TEST(Inspect, ListsVersionsReleasesAndWhatLoads) {
  FakeIndex index = sample_index();
  SystemFacts cpu;
  cpu.torch = util::Version({2, 11});
  cpu.torch_cxx11_abi = true;
  auto report = list_versions("org/k", cpu, index);
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->versions.size(), 2u);
  EXPECT_EQ(report->versions[0].major, 1u);
  ASSERT_EQ(report->versions[0].releases.size(), 3u);
  EXPECT_EQ(report->versions[0].releases[2].tag, "v1.10.0");  // release order, not string order
  EXPECT_EQ(*report->versions[0].choice.chosen, k_cpu);
  ASSERT_EQ(report->orphan_releases.size(), 1u);
  EXPECT_EQ(report->orphan_releases[0].tag, "v3.0.0");
  EXPECT_EQ(report->other_branches, std::vector<std::string>{"main"});
  EXPECT_EQ(report->other_tags, std::vector<std::string>{"nightly"});

  auto latest = describe_revision("org/k", {}, cpu, index);
  ASSERT_TRUE(latest) << latest.error().message;
  EXPECT_EQ(latest->revision, "v2");
  ASSERT_EQ(latest->variants.size(), 1u);
  EXPECT_EQ(latest->variants[0].files, 4u);
  ASSERT_TRUE(latest->variants[0].metadata);
  EXPECT_EQ(latest->variants[0].metadata->id, "_k_cpu_abc");
  EXPECT_EQ(describe_revision("org/k", {std::uint64_t{1}, std::nullopt}, cpu, index)->commit, commit_id('1'));
  EXPECT_EQ(describe_revision("org/k", {std::nullopt, std::string("v1.2.0")}, cpu, index)->source, "tag v1.2.0");
  EXPECT_FALSE(describe_revision("org/k", {std::uint64_t{5}, std::nullopt}, cpu, index));
}
