// `kbuild publish`, `lock` and `download` as use cases (usecase/publish.hpp, consume.hpp), whole: a
// kernel's build/ and a consumer project in a MemFileSystem,
// the registry's Router in-process as the Hub (its store in a temporary directory), upload bodies read
// from the MemFileSystem. Checks the release gate, the dry run, the upload, a no-op republish, the
// tag, and what the reporter was told.

#include <gtest/gtest.h>

#include <algorithm>

#include "kbuild/hub/client.hpp"
#include "kbuild/layout/metadata.hpp"
#include "kbuild/usecase/consume.hpp"
#include "kbuild/usecase/inspect.hpp"
#include "kbuild/usecase/publish.hpp"
#include "server_fixtures.hpp"
#include "support/services_fixture.hpp"
#include "support/variants.hpp"

using namespace kbuild;

namespace {

// The Router as the Hub's HTTP transport; a file body (an LFS part) is read from the MemFileSystem.
class RouterTransport final : public net::HttpTransport {
 public:
  RouterTransport(server::Router& router, fakes::MemFileSystem& fs) : m_router(router), m_fs(fs) {}
  std::vector<std::string> requests;
  /// Runs before a request reaches the router (another client acting in between).
  std::function<void(const net::HttpRequest&)> before;
  std::expected<net::HttpResponse, net::TransportError> send(const net::HttpRequest& request) override {
    requests.push_back(request.method + " " + request.url);
    if (before) before(request);
    net::HttpRequest copy = request;
    if (copy.body_file) {
      std::string bytes = m_fs.read_file(*copy.body_file).value_or("");
      copy.body = bytes.substr(copy.body_offset, copy.body_length.value_or(std::string::npos));
      copy.body_file.reset();
    }
    net::HttpResponse response = m_router.handle(copy);
    if (request.response_file && response.status / 100 == 2) {  // a download into a file
      response.file_bytes = response.body.size();
      m_fs.put(request.response_file->string(), std::move(response.body));
      response.body.clear();
    }
    return response;
  }

 private:
  server::Router& m_router;
  fakes::MemFileSystem& m_fs;
};

const std::string k_cpu = "torch211-cxx11-cpu-x86_64-linux";

struct PublishFixture : fakes::ServicesFixture {
  std::filesystem::path root = server::test_support::fresh_root();
  std::unique_ptr<server::Store> store;
  std::unique_ptr<server::Router> router;
  std::unique_ptr<RouterTransport> hub;
  std::unique_ptr<usecase::Services> hub_services;

  void SetUp() override {
    store = std::move(*server::Store::open(root, server::test_support::g_random));
    server::Config config;
    config.tokens = {{server::test_support::k_alice, "alice", {}}};
    server::RouterOptions options;
    options.base_url = "http://hub.test/";
    router = std::make_unique<server::Router>(*store, config, options);
    hub = std::make_unique<RouterTransport>(*router, fs);
    hub_services = std::make_unique<usecase::Services>(
        usecase::Services{fs, launcher, runner, *hub, env, clock, random, reporter});
    env.values["HF_ENDPOINT"] = "http://hub.test";
    env.values["HF_TOKEN"] = server::test_support::k_alice;
    fs.put("/k/build.toml",
           "[general]\nname = \"relu\"\nversion = 1\nedition = 5\nlicense = \"apache-2.0\"\nbackends = [\"cpu\"]\n\n"
           "[general.hub]\nrepo-id = \"alice/relu\"\n\n[torch]\nsrc = [\"torch-ext/torch_binding.cpp\"]\n\n"
           "[kernel.relu_cpu]\nbackend = \"cpu\"\ndepends = [\"torch\"]\nsrc = [\"relu_cpu/relu.cpp\"]\n");
    fs.put("/k/torch-ext/torch_binding.cpp", "// binding");
    fs.put("/k/torch-ext/relu/__init__.py", "from ._ops import ops\n");
    fs.put("/k/relu_cpu/relu.cpp", "// cpu");
    fakes::put_variant(fs, "/k/build/" + k_cpu, "abc1234", 1,
                       "\x7f"
                       "ELF" +
                           std::string(4092, '\0'));
  }
  void TearDown() override {
    router.reset();
    store.reset();
    std::filesystem::remove_all(root);
  }
  usecase::PublishRequest request(const std::string& tag = "v1.0.0") const {
    usecase::PublishRequest r;
    r.kernel_dir = "/k";
    r.tag = tag;
    r.allow_stale = true;  // build/ was not built here (no .kbuild/state)
    return r;
  }
};

}  // namespace

TEST_F(PublishFixture, TheReleaseGateWarnsOrRefusesBeforeAnyRequest) {
  auto gated = request();
  gated.allow_stale = false;
  gated.dry_run = true;
  // Not built here (no .kbuild/state): published, with a warning through the reporter.
  ASSERT_TRUE(usecase::publish(gated, *hub_services));
  ASSERT_FALSE(reporter.warnings.empty());
  EXPECT_NE(reporter.warnings[0].find("is not compared with the sources"), std::string::npos) << reporter.warnings[0];
  // A build that did not finish the variant: refused, nothing sent.
  hub->requests.clear();
  fs.put("/k/.kbuild/state", "kbuild-state 2\nJ " + k_cpu + "/link\nK k\n");
  auto refused = usecase::publish(gated, *hub_services);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().hint.find("--allow-stale"), std::string::npos) << refused.error().hint;
  EXPECT_TRUE(hub->requests.empty());
}

// build/<k_cpu>'s metadata.json recording `commit` (and `dirty`) as the build's provenance.
void record_commit(fakes::MemFileSystem& fs, const std::string& commit, bool dirty = false) {
  const std::string path = "/k/build/" + k_cpu + "/metadata.json";
  auto metadata = layout::Metadata::parse(*fs.read_file(path));
  metadata->kernel = layout::GitProvenance{commit, dirty};
  fs.put(path, metadata->to_json());
}

TEST_F(PublishFixture, VariantsOfAnotherCommitOrUnsignedAreRefusedUnlessAllowed) {
  const std::string head(40, 'a'), older(40, 'b');
  launcher.programs["git"] = "/usr/bin/git";
  launcher.handler = [&](const std::vector<std::string>& argv,
                         const util::ProcessOptions&) -> std::optional<util::ProcessResult> {
    if (argv.size() > 4 && argv[0] == "git" && argv[4] == "status")
      return util::ProcessResult{0, "# branch.oid " + head + "\n# branch.head main\n", ""};
    return std::nullopt;
  };
  auto dry = request();
  dry.dry_run = true;
  record_commit(fs, older);  // an artifact of an older CI run, gathered into build/
  auto refused = usecase::publish(dry, *hub_services);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ExitCode::failure);
  EXPECT_NE(refused.error().message.find(k_cpu + " was built from commit bbbbbbbbbbbb, not from the commit being "
                                                 "published (aaaaaaaaaaaa)"),
            std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().hint.find("--allow-other-commit"), std::string::npos);
  EXPECT_TRUE(hub->requests.empty());
  dry.allow_other_commit = true;
  EXPECT_TRUE(usecase::publish(dry, *hub_services));

  // The commit being published, from a dirty tree: published, with the warning every consumer will see.
  dry.allow_other_commit = false;
  record_commit(fs, head, true);
  reporter.warnings.clear();
  ASSERT_TRUE(usecase::publish(dry, *hub_services));
  EXPECT_TRUE(std::any_of(reporter.warnings.begin(), reporter.warnings.end(),
                          [](const std::string& w) { return w.find("uncommitted changes") != std::string::npos; }));

  // --require-signed: an unsigned variant is refused, naming why.
  dry.require_signed = true;
  auto unsigned_refused = usecase::publish(dry, *hub_services);
  ASSERT_FALSE(unsigned_refused);
  EXPECT_NE(unsigned_refused.error().message.find(k_cpu + " is unsigned"), std::string::npos)
      << unsigned_refused.error().message;
}

TEST_F(PublishFixture, APublishThatLostARaceTagsOnlyACommitWithEveryFile) {
  // v1 without the build (published, then its build/ removed), main with the card already.
  ASSERT_TRUE(usecase::publish(request(""), *hub_services));
  hub::HubClient client(*hub, "http://hub.test", hub::Token{server::test_support::k_alice, "test"});
  hub::RepoRef repo{"kernel", "alice/relu"};
  auto before = client.list_refs(repo);
  ASSERT_TRUE(before);
  std::vector<hub::CommitOp> removals;
  auto published = client.list_tree(repo, "v1");
  ASSERT_TRUE(published);
  for (const auto& file : *published)
    if (file.path.starts_with("build/")) removals.push_back({hub::CommitOp::Kind::remove, file.path, "", "", 0});
  ASSERT_TRUE(client.commit(repo, "v1", hub::encode_commit("empty", "", before->branches.at("v1"), removals), false));

  // Another publisher commits the same build to v1 while this one lists the branch's files (as a
  // delayed request lets it): the plan was against the head the refs named, which has no build/, so
  // the commit (parentCommit: that head) meets a moved branch, is planned again, and the tag goes on
  // a commit that holds every file. (Planned by the branch's name, the plan was "no changes" and the
  // tag went on the empty head.)
  bool raced = false;
  hub->before = [&](const net::HttpRequest& request) {
    if (raced || request.method != "GET" || request.url.find("/tree/") == std::string::npos ||
        request.url.find("/tree/main") != std::string::npos)
      return;
    raced = true;
    auto other = usecase::publish(this->request(""), *hub_services);
    ASSERT_TRUE(other) << other.error().message;
    EXPECT_EQ(other->status, hub::PublishStatus::uploaded);
  };
  auto outcome = usecase::publish(request(), *hub_services);
  hub->before = nullptr;
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_TRUE(raced);
  auto refs = client.list_refs(repo);
  ASSERT_TRUE(refs);
  ASSERT_TRUE(refs->tags.count("v1.0.0"));
  EXPECT_EQ(refs->tags.at("v1.0.0"), outcome->commit);
  auto tree = client.list_tree(repo, refs->tags.at("v1.0.0"));
  ASSERT_TRUE(tree);
  EXPECT_TRUE(std::any_of(tree->begin(), tree->end(), [](const hub::RemoteFile& file) {
    return file.path == "build/" + k_cpu + "/metadata.json";
  }));
}

TEST_F(PublishFixture, DryRunThenUploadThenNothingToDo) {
  auto dry = request();
  dry.dry_run = true;
  auto planned = usecase::publish(dry, *hub_services);
  ASSERT_TRUE(planned) << planned.error().message;
  EXPECT_EQ(planned->status, hub::PublishStatus::dry_run);
  EXPECT_EQ(planned->kernel, "relu");
  EXPECT_EQ(planned->variants, std::vector<std::string>{k_cpu});
  for (const auto& line : hub->requests) EXPECT_TRUE(line.starts_with("GET ")) << line;  // nothing changed

  auto published = usecase::publish(request(), *hub_services);
  ASSERT_TRUE(published) << published.error().message;
  EXPECT_EQ(published->status, hub::PublishStatus::uploaded);
  EXPECT_EQ(published->repo_id, "alice/relu");
  EXPECT_EQ(published->branch, "v1");
  EXPECT_EQ(published->commit.size(), 40u);
  EXPECT_EQ(published->traffic.lfs_objects_uploaded, 1u);  // the library; the rest inline
  bool said = false;
  for (const auto& line : reporter.infos) said = said || line.find("through LFS") != std::string::npos;
  EXPECT_TRUE(said);
  ASSERT_FALSE(reporter.transfers.empty());
  EXPECT_EQ(reporter.transfers.back().first, reporter.transfers.back().second);  // all bytes sent
  net::HttpRequest listing;
  listing.url = "/api/kernels/alice/relu/tree/v1.0.0/build/" + k_cpu;
  auto tree = router->handle(listing);
  ASSERT_EQ(tree.status, 200) << tree.body;
  EXPECT_NE(tree.body.find("metadata.json"), std::string::npos);
  EXPECT_NE(tree.body.find("_relu_cpu_abc1234.abi3.so"), std::string::npos);

  hub->requests.clear();
  auto again = usecase::publish(request("v1.0.1"), *hub_services);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->status, hub::PublishStatus::no_changes);  // tagged, nothing uploaded
  EXPECT_EQ(again->traffic.lfs_bytes_uploaded, 0u);
}

TEST_F(PublishFixture, AWrongTagOrNoTokenIsAnErrorWithItsExitCode) {
  auto wrong = usecase::publish(request("v2.0.0"), *hub_services);  // general.version is 1
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code, ExitCode::usage);
  EXPECT_TRUE(hub->requests.empty());
  env.values.erase("HF_TOKEN");
  env.values["HF_HOME"] = "/home/u/.hf";  // no token file there either
  auto anonymous = usecase::publish(request(), *hub_services);
  ASSERT_FALSE(anonymous);
  EXPECT_NE(anonymous.error().message.find("token"), std::string::npos) << anonymous.error().message;
}

TEST_F(PublishFixture, WhatWasPublishedIsLockedAndDownloaded) {
  ASSERT_TRUE(usecase::publish(request(), *hub_services));
  fs.put("/p/pyproject.toml", "[project]\nname = \"app\"\n\n[tool.kernels.dependencies]\n\"alice/relu\" = 1\n");
  usecase::LockKernelsRequest lock;
  lock.project_dir = "/p";
  lock.trusted = {"alice"};
  auto locked = usecase::lock_kernels(lock, *hub_services);
  ASSERT_TRUE(locked) << locked.error().message;
  EXPECT_TRUE(locked->written);
  ASSERT_EQ(locked->lock.dependencies.size(), 1u);
  EXPECT_EQ(locked->lock.dependencies[0].entry.dependency.repo_id, "alice/relu");
  EXPECT_NE(fs.content("/p/kernels.lock").find("alice/relu"), std::string::npos);

  lock.mode = lock::LockMode::check;
  auto checked = usecase::lock_kernels(lock, *hub_services);
  ASSERT_TRUE(checked);
  EXPECT_TRUE(checked->up_to_date);

  env.values["HF_HUB_CACHE"] = "/hf";
  usecase::DownloadRequest download;
  download.project_dir = "/p";
  download.all_variants = true;  // no Torch probe
  auto downloaded = usecase::download(download, *hub_services);
  ASSERT_TRUE(downloaded) << downloaded.error().message;
  ASSERT_EQ(downloaded->variants.size(), 1u);
  EXPECT_EQ(downloaded->variants[0].variant, k_cpu);
  EXPECT_EQ(downloaded->cache, "/hf");
  EXPECT_GT(downloaded->bytes_downloaded, 4096u);
  auto library = downloaded->variants[0].path / "_relu_cpu_abc1234.abi3.so";
  EXPECT_EQ(fs.read_file(library).value_or("").substr(0, 4),
            "\x7f"
            "ELF")
      << library;  // a link to its blob
}

TEST_F(PublishFixture, AnUnknownUpgradeIsAWarningThroughTheReporter) {
  ASSERT_TRUE(usecase::publish(request(), *hub_services));
  fs.put("/p/pyproject.toml", "[tool.kernels.dependencies]\n\"alice/relu\" = 1\n\"alice/\" = 1\n");
  usecase::LockKernelsRequest lock;
  lock.project_dir = "/p";
  auto invalid = usecase::lock_kernels(lock, *hub_services);
  ASSERT_FALSE(invalid);
  EXPECT_EQ(invalid.error().code, ExitCode::usage);
  EXPECT_FALSE(reporter.found.empty());  // pyproject's problems, with their lines

  fs.put("/p/pyproject.toml", "[tool.kernels.dependencies]\n\"alice/relu\" = 1\n");
  lock.trusted = {"alice"};
  lock.upgrade = {"bob/other"};
  ASSERT_TRUE(usecase::lock_kernels(lock, *hub_services));
  bool warned = false;
  for (const auto& line : reporter.warnings) warned = warned || line.find("--upgrade=bob/other") != std::string::npos;
  EXPECT_TRUE(warned);
}

TEST_F(PublishFixture, VersionsInfoAndWhoamiAskTheHub) {
  ASSERT_TRUE(usecase::publish(request(), *hub_services));
  usecase::InspectRequest inspect;
  inspect.target = "alice/relu";
  inspect.python = "/no/python";  // no Torch here: answered anyway, with a note
  auto versions = usecase::versions(inspect, *hub_services);
  ASSERT_TRUE(versions) << versions.error().message;
  EXPECT_FALSE(versions->system);
  EXPECT_FALSE(versions->system_note.empty());
  EXPECT_EQ(versions->endpoint, "http://hub.test");
  ASSERT_EQ(versions->report.versions.size(), 1u);

  inspect.version = 1;
  auto info = usecase::info(inspect, *hub_services);
  ASSERT_TRUE(info) << info.error().message;
  ASSERT_EQ(info->report.variants.size(), 1u);
  EXPECT_EQ(info->report.variants[0].name, k_cpu);

  inspect.target = "/k";  // a local kernel: its build/, no Hub
  inspect.version.reset();
  hub->requests.clear();
  auto local = usecase::info(inspect, *hub_services);
  ASSERT_TRUE(local) << local.error().message;
  EXPECT_EQ(local->report.source, "local directory");
  EXPECT_TRUE(hub->requests.empty());
  inspect.target = "not a repo";
  EXPECT_EQ(usecase::versions(inspect, *hub_services).error().code, ExitCode::usage);

  auto me = usecase::whoami({}, *hub_services);
  ASSERT_TRUE(me) << me.error().message;
  EXPECT_EQ(me->name, "alice");
  EXPECT_EQ(me->token_origin, "HF_TOKEN");
}

TEST(PublishStatus, EachStatusHasTheWordOfThePublishJson) {
  EXPECT_STREQ(hub::to_string(hub::PublishStatus::uploaded), "uploaded");
  EXPECT_STREQ(hub::to_string(hub::PublishStatus::no_changes), "no_changes");
  EXPECT_STREQ(hub::to_string(hub::PublishStatus::dry_run), "dry_run");
  EXPECT_STREQ(hub::to_string(hub::PublishStatus::pull_request_created), "pull_request_created");
}
