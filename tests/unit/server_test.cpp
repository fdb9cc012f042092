// The registry server: storage rules and git ids (Store*), configuration (ServerConfig), and the HTTP
// logic of every endpoint through Router::handle (Router*), on a real temporary root with SQLite.

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "kbuild/server/config.hpp"
#include "kbuild/server/file_io.hpp"
#include "kbuild/server/guard.hpp"
#include "kbuild/server/listener.hpp"
#include "kbuild/server/metadata_db.hpp"
#include "kbuild/server/router.hpp"
#include "kbuild/server/store.hpp"
#include "kbuild/server/wire.hpp"
#include "kbuild/util/hash.hpp"

using namespace kbuild;
using namespace kbuild::server;
using Json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

fs::path fresh_root() {
  static std::atomic<int> counter{0};
  auto root = fs::temp_directory_path() /
              ("kbuild-server-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  fs::remove_all(root);
  return root;
}

const std::string k_alice = "tok-alice-123456";
const std::string k_bob = "tok-bob-1234567";

std::string ndjson(std::initializer_list<Json> lines) {
  std::string out;
  for (const auto& line : lines) out += line.dump() + "\n";
  return out;
}
Json header_line(const std::string& summary, const std::string& parent = "") {
  Json value = {{"summary", summary}, {"description", ""}};
  if (!parent.empty()) value["parentCommit"] = parent;
  return {{"key", "header"}, {"value", value}};
}
Json file_line(const std::string& path, std::string_view content) {
  return {{"key", "file"},
          {"value", {{"path", path}, {"content", util::base64_encode(content)}, {"encoding", "base64"}}}};
}
Json delete_line(const std::string& path, bool folder = false) {
  return {{"key", folder ? "deletedFolder" : "deletedFile"}, {"value", {{"path", path}}}};
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Pure rules

TEST(StoreIds, GitBlobIdsKnownAnswers) {
  EXPECT_EQ(util::git_blob_id("Hello, World!"), "b45ef6fec89518d314f546fd6c3025367b721684");
  EXPECT_EQ(regular_entry("e", "").blob_id, "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
  EXPECT_EQ(regular_entry("a.txt", "hello\n").blob_id, "ce013625030ba8dba906f756967f9e9ca394464a");
}

TEST(StoreIds, LfsPointerIsExactlyThreeLines) {
  std::string sha = util::sha256_hex("abc");
  EXPECT_EQ(lfs_pointer(sha, 3), "version https://git-lfs.github.com/spec/v1\noid sha256:" + sha + "\nsize 3\n");
  EXPECT_EQ(lfs_pointer(sha, 123456789).size(), 134u);  // 125 + number of digits
  FileEntry entry = lfs_entry("w.bin", sha, 3);
  EXPECT_TRUE(entry.lfs);
  EXPECT_EQ(entry.blob_id, "80d7d501c2b256023dc42e46d958b9ac2ec283ee");  // git hash-object of the pointer
}

TEST(StoreIds, TreeAndCommitIdsMatchGit) {
  // Known answers from `git write-tree` and `git commit-tree` on the same content.
  FileMap files;
  files["a.txt"] = regular_entry("a.txt", "hello\n");
  files["dir/b.txt"] = regular_entry("dir/b.txt", "x");
  files["w.bin"] = lfs_entry("w.bin", util::sha256_hex("abc"), 3);
  auto trees = tree_ids(files);
  EXPECT_EQ(trees[""], "d472672dc71ecab778ff22061c6d68c64aebdde3");
  EXPECT_EQ(trees["dir"], "01cc09486627c642a9ec37ee69658e70cf98f230");

  FileMap ordering;  // git sorts the directory "a" as "a/", after "a.b" and before "a0"
  ordering["a/x"] = regular_entry("a/x", "1");
  ordering["a.b"] = regular_entry("a.b", "2");
  ordering["a0"] = regular_entry("a0", "3");
  EXPECT_EQ(tree_ids(ordering)[""], "615bdb5815a2d0b2fcbfa112a0246e03d120580e");

  Commit first{"", "", trees[""], "first", "", "alice", 1700000000000};
  EXPECT_EQ(commit_oid(first), "51130beb6b46863468fc9e2a9cce91344a26aa00");
  Commit second{"",           "51130beb6b46863468fc9e2a9cce91344a26aa00", trees[""], "second", "body text", "alice",
                1700000000500};
  EXPECT_EQ(commit_oid(second), "4d41ca04bfebae55e7f59d64cca3b17bd5fa28da");
  EXPECT_EQ(iso8601(1700000000500), "2023-11-14T22:13:20.500Z");
}

TEST(StoreNames, RepoNamesFollowTheHubRules) {
  for (const char* good : {"relu", "my-model_2.0", "A", "kernels-community"})
    EXPECT_TRUE(is_valid_repo_name(good)) << good;
  for (const char* bad : {"", "-x", ".x", "x-", "x.", "a..b", "a--b", "a/b", "a b", "x.git", "é"})
    EXPECT_FALSE(is_valid_repo_name(bad)) << bad;
  EXPECT_FALSE(is_valid_repo_name(std::string(97, 'a')));
  EXPECT_FALSE(is_valid_namespace("datasets"));
  EXPECT_FALSE(is_valid_namespace("api"));
  EXPECT_TRUE(is_valid_namespace("alice"));
}

TEST(StoreNames, PathsAndRefNames) {
  for (const char* good : {"a", "build/torch-cpu/_ops.py", ".gitattributes", "a/.github/x", "..a"})
    EXPECT_TRUE(is_valid_repo_path(good)) << good;
  for (const char* bad : {"", "/a", "a//b", "a/", "./a", "a/../b", "..", ".git/config", "x/.git", "a\nb"})
    EXPECT_FALSE(is_valid_repo_path(bad)) << bad;
  for (const char* good : {"main", "v1", "feature/x", "v1.0.0"}) EXPECT_TRUE(is_valid_ref_name(good)) << good;
  for (const char* bad : {"", "a b", "a..b", "-x", "x/", "x.lock", "a:b", "HEAD", "a//b", ".x", "a/.b"})
    EXPECT_FALSE(is_valid_ref_name(bad)) << bad;
  EXPECT_TRUE(is_commit_oid(std::string(40, 'a')));
  EXPECT_FALSE(is_commit_oid(std::string(40, 'A')));
}

TEST(StoreRules, WildmatchAndGitAttributes) {
  EXPECT_TRUE(wildmatch("*.bin", "w.bin"));
  EXPECT_FALSE(wildmatch("*.bin", "a/w.bin"));
  EXPECT_TRUE(wildmatch("saved_model/**/*", "saved_model/a/b/c"));
  EXPECT_TRUE(wildmatch("**/x.py", "x.py"));
  EXPECT_TRUE(wildmatch("a/**/b", "a/b"));
  EXPECT_TRUE(wildmatch("a/**/b", "a/x/y/b"));
  EXPECT_TRUE(wildmatch("[a-c]?.txt", "b1.txt"));
  EXPECT_FALSE(wildmatch("[!a-c]?.txt", "b1.txt"));
  EXPECT_TRUE(wildmatch("*tfevents*", "events.out.tfevents.1"));

  GitAttributes defaults(default_gitattributes());
  EXPECT_TRUE(defaults.is_lfs("model.safetensors"));
  EXPECT_TRUE(defaults.is_lfs("deep/dir/weights.bin"));
  EXPECT_TRUE(defaults.is_lfs("saved_model/v1/vars"));
  EXPECT_FALSE(defaults.is_lfs("config.json"));
  GitAttributes custom("*.so filter=lfs diff=lfs merge=lfs -text\n/build/keep.so -filter\n# comment\n");
  EXPECT_TRUE(custom.is_lfs("build/x.so"));
  EXPECT_FALSE(custom.is_lfs("build/keep.so"));
}

TEST(StoreRules, LfsOrRegularDecision) {
  GitAttributes attributes(default_gitattributes());
  EXPECT_FALSE(use_lfs(attributes, "a.bin", 0, ""));  // empty files are always regular
  EXPECT_TRUE(use_lfs(attributes, "a.bin", 10, "text"));
  EXPECT_TRUE(use_lfs(attributes, "a.txt", 10, std::string("ab\0c", 4)));
  EXPECT_FALSE(use_lfs(attributes, "a.txt", k_lfs_size_threshold - 1, "text"));
  EXPECT_TRUE(use_lfs(attributes, "a.txt", k_lfs_size_threshold, "text"));
}

TEST(StoreRules, GitIgnore) {
  GitIgnore ignore("*.pyc\n/build/\n__pycache__/\n!keep.pyc\n");
  EXPECT_TRUE(ignore.is_ignored("a/b.pyc"));
  EXPECT_FALSE(ignore.is_ignored("keep.pyc"));
  EXPECT_TRUE(ignore.is_ignored("build/x.so"));
  EXPECT_FALSE(ignore.is_ignored("src/build/x.so"));
  EXPECT_TRUE(ignore.is_ignored("x/__pycache__/y.py"));
  EXPECT_FALSE(ignore.is_ignored("x.py"));
}

// ---------------------------------------------------------------------------------------------
// Store with SQLite

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_root = fresh_root();
    auto opened = Store::open(m_root);
    ASSERT_TRUE(opened) << opened.error().message;
    store = std::move(*opened);
    CommitRequest initial{"initial commit", "", "system", 1000, {}};
    initial.files[".gitattributes"] = regular_entry(".gitattributes", "x");
    auto created = store->create_repo({RepoType::model, "alice", "m"}, false, initial);
    ASSERT_TRUE(created && *created);
    repo = **created;
    main_head = **store->find_ref(repo.key, RefKind::branch, "main");
  }
  void TearDown() override {
    store.reset();
    fs::remove_all(m_root);
  }
  CommitRequest request_with(const std::string& path, const std::string& content) {
    CommitRequest request{"add " + path, "", "alice", 2000, *store->files(repo.key, main_head)};
    request.files[path] = regular_entry(path, content);
    return request;
  }

  fs::path m_root;
  std::unique_ptr<Store> store;
  Repo repo;
  std::string main_head;
};

TEST_F(StoreTest, CreateRepoTwiceReturnsNothing) {
  auto again = store->create_repo({RepoType::model, "alice", "m"}, false, {"x", "", "system", 1, {}});
  ASSERT_TRUE(again);
  EXPECT_FALSE(*again);
  EXPECT_FALSE(*store->find_repo({RepoType::kernel, "alice", "m"}));
  EXPECT_EQ(repo.object_id.size(), 24u);
  EXPECT_TRUE(is_commit_oid(main_head));
}

TEST_F(StoreTest, CommitMovesTheRefAndKeepsTheFullFileList) {
  auto outcome = store->commit(repo.key, RefKind::branch, "main", main_head, request_with("a.txt", "A"));
  ASSERT_TRUE(outcome);
  ASSERT_EQ(outcome->status, CasStatus::done);
  EXPECT_EQ(outcome->commit.parent, main_head);
  EXPECT_EQ(**store->find_ref(repo.key, RefKind::branch, "main"), outcome->commit.oid);
  auto files = *store->files(repo.key, outcome->commit.oid);
  EXPECT_EQ(files.size(), 2u);
  EXPECT_EQ(store->files(repo.key, main_head)->size(), 1u);  // the parent's list is untouched
}

TEST_F(StoreTest, FailedCompareAndSwapLeavesTheRefUnchanged) {
  auto first = store->commit(repo.key, RefKind::branch, "main", main_head, request_with("a.txt", "A"));
  ASSERT_TRUE(first && first->status == CasStatus::done);
  // A second writer that still believes main is at the initial commit.
  auto stale = store->commit(repo.key, RefKind::branch, "main", main_head, request_with("b.txt", "B"));
  ASSERT_TRUE(stale);
  EXPECT_EQ(stale->status, CasStatus::stale);
  EXPECT_EQ(**store->find_ref(repo.key, RefKind::branch, "main"), first->commit.oid);
  auto missing = store->commit(repo.key, RefKind::branch, "nope", main_head, request_with("b.txt", "B"));
  EXPECT_EQ(missing->status, CasStatus::missing);
}

TEST_F(StoreTest, CrashBeforeTheRefUpdateLeavesNoTrace) {
  store->fail_next_commit_for_testing();
  auto request = request_with("a.txt", "A");
  auto crashed = store->commit(repo.key, RefKind::branch, "main", main_head, request);
  EXPECT_FALSE(crashed);
  EXPECT_EQ(**store->find_ref(repo.key, RefKind::branch, "main"), main_head);
  // Neither the commit nor its files were kept: the transaction rolled back as a whole.
  Commit would_be{"", main_head, tree_ids(request.files)[""], request.title, "", "alice", 2000};
  EXPECT_FALSE(*store->find_commit(repo.key, commit_oid(would_be)));
  EXPECT_TRUE(store->files(repo.key, commit_oid(would_be))->empty());
  // The store still works afterwards.
  auto retried = store->commit(repo.key, RefKind::branch, "main", main_head, request);
  ASSERT_TRUE(retried);
  EXPECT_EQ(retried->status, CasStatus::done);
  EXPECT_EQ(retried->commit.oid, commit_oid(would_be));
}

TEST_F(StoreTest, RefsAndPullRequests) {
  EXPECT_TRUE(*store->create_ref(repo.key, RefKind::tag, "v1", main_head));
  EXPECT_FALSE(*store->create_ref(repo.key, RefKind::tag, "v1", main_head));
  auto pr1 = store->commit_pull_request(repo.key, main_head, request_with("a", "1"));
  auto pr2 = store->commit_pull_request(repo.key, main_head, request_with("b", "2"));
  ASSERT_TRUE(pr1 && pr2);
  EXPECT_EQ(pr1->first, 1);
  EXPECT_EQ(pr2->first, 2);
  auto refs = *store->list_refs(repo.key);
  ASSERT_EQ(refs.size(), 4u);
  EXPECT_EQ(refs[0].full_name(), "refs/heads/main");
  EXPECT_EQ(refs[1].full_name(), "refs/tags/v1");
  EXPECT_EQ(refs[2].full_name(), "refs/pr/1");
  EXPECT_TRUE(*store->delete_ref(repo.key, RefKind::tag, "v1"));
  EXPECT_FALSE(*store->delete_ref(repo.key, RefKind::tag, "v1"));
}

TEST_F(StoreTest, BlobsAreContentAddressedAndChecked) {
  auto sha = store->put_blob("content");
  ASSERT_TRUE(sha);
  EXPECT_EQ(*sha, util::sha256_hex("content"));
  EXPECT_EQ(store->blob_size(*sha), 7u);
  EXPECT_TRUE(fs::exists(m_root / "blobs" / sha->substr(0, 2) / *sha));
  EXPECT_EQ(*store->read_blob(*sha), "content");
  auto temp = store->temp_path();
  { std::ofstream(temp) << "other"; }
  EXPECT_EQ(*store->adopt_blob(temp, *sha, 5), BlobCheck::wrong_hash);
  EXPECT_FALSE(fs::exists(temp));
  { std::ofstream(temp) << "other"; }
  EXPECT_EQ(*store->adopt_blob(temp, util::sha256_hex("other"), 5), BlobCheck::ok);
  EXPECT_EQ(store->blob_size(util::sha256_hex("other")), 5u);
}

TEST_F(StoreTest, ReopeningKeepsEverything) {
  store.reset();
  auto reopened = Store::open(m_root);
  ASSERT_TRUE(reopened);
  store = std::move(*reopened);
  EXPECT_EQ(**store->find_ref(repo.key, RefKind::branch, "main"), main_head);
}

// ---------------------------------------------------------------------------------------------
// Configuration

TEST(ServerConfig, ParsesEveryTable) {
  auto config = parse_config(R"(
[server]
read = "token"
[limits]
max-lfs-object = 1000
multipart-chunk = 100
[[tokens]]
token = "hf_abcdefgh"
user = "alice"
namespaces = ["org"]
[[organizations]]
name = "org"
trusted-kernel-publisher = true
)",
                             "config.toml");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->read, ReadAccess::token);
  EXPECT_EQ(config->limits.max_lfs_object, 1000u);
  EXPECT_EQ(config->limits.multipart_chunk, 100u);
  EXPECT_EQ(config->limits.max_commit_body, 256u << 20);
  ASSERT_NE(config->find_token("hf_abcdefgh"), nullptr);
  EXPECT_EQ(config->find_token("hf_abcdefgX"), nullptr);
  EXPECT_TRUE(config->find_token("hf_abcdefgh")->may_write("org"));
  EXPECT_TRUE(config->find_organization("org")->trusted_kernel_publisher);
  EXPECT_FALSE(config->find_organization("alice"));
}

TEST(ServerConfig, UnknownKeysAreErrorsWithLocations) {
  auto config = parse_config(
      "[server]\nread = \"public\"\nreed = 1\n\n[[tokens]]\ntoken = \"hf_abcdefgh\"\nuser = \"a\"\nrole = \"x\"\n",
      "config.toml");
  ASSERT_FALSE(config);
  EXPECT_NE(config.error().message.find("config.toml:3:1: unknown key \"reed\" in [server] (did you mean \"read\"?)"),
            std::string::npos)
      << config.error().message;
  EXPECT_NE(config.error().message.find("config.toml:8:1: unknown key \"role\""), std::string::npos)
      << config.error().message;
  EXPECT_FALSE(parse_config("[server]\nread = \"everyone\"\n", "c"));
  EXPECT_FALSE(parse_config("[limits]\nmultipart-chunk = -1\n", "c"));
  EXPECT_FALSE(parse_config("[[tokens]]\nuser = \"a\"\n", "c"));
  EXPECT_FALSE(parse_config("x = [", "c"));
}

TEST(ServerConfig, AddTokenAppendsAndKeepsTheFile) {
  auto root = fresh_root();
  fs::create_directories(root);
  { std::ofstream(root / "config.toml") << "# my registry\n[server]\nread = \"public\"\n"; }
  auto first = add_token(root, "alice", {"org"});
  auto second = add_token(root, "bob", {});
  ASSERT_TRUE(first && second);
  EXPECT_NE(*first, *second);
  EXPECT_TRUE(first->starts_with("hf_"));
  auto config = load_config(root);
  ASSERT_TRUE(config);
  EXPECT_EQ(config->tokens.size(), 2u);
  EXPECT_EQ(config->find_token(*first)->user, "alice");
  std::ifstream in(root / "config.toml");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_TRUE(text.starts_with("# my registry\n"));
  EXPECT_FALSE(add_token(root, "bad name", {}));
  fs::remove_all(root);
}

TEST(ServerConfig, EditsArePrivateAtomicAndConcurrentSafe) {
  auto root = fresh_root();
  std::vector<std::thread> threads;
  std::vector<std::string> tokens(8);
  for (size_t i = 0; i < tokens.size(); ++i)
    threads.emplace_back([&, i] { tokens[i] = add_token(root, "user" + std::to_string(i), {}).value_or(""); });
  for (auto& t : threads) t.join();
  auto config = load_config(root);
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->tokens.size(), tokens.size());  // no edit lost another
  for (const auto& token : tokens) EXPECT_NE(config->find_token(token), nullptr);
  auto perms = fs::status(root / "config.toml").permissions();
  EXPECT_EQ(perms & (fs::perms::group_all | fs::perms::others_all), fs::perms::none);
  fs::remove_all(root);
}

TEST(ServerConfig, SetOrganizationEditsInPlace) {
  auto root = fresh_root();
  fs::create_directories(root);
  {
    std::ofstream(root / "config.toml")
        << "# registry\n[[organizations]]\nname = \"acme\"  # ours\n\n"
           "[[organizations]]\nname = \"other\"\ntrusted-kernel-publisher = false # x\n";
  }
  EXPECT_EQ(*set_organization(root, "acme", true), OrganizationChange::updated);
  EXPECT_EQ(*set_organization(root, "other", true), OrganizationChange::updated);
  EXPECT_EQ(*set_organization(root, "other", true), OrganizationChange::unchanged);
  EXPECT_EQ(*set_organization(root, "new-org", true), OrganizationChange::added);
  auto config = load_config(root);
  ASSERT_TRUE(config) << config.error().message;
  for (const char* name : {"acme", "other", "new-org"})
    EXPECT_TRUE(config->find_organization(name)->trusted_kernel_publisher) << name;
  std::ifstream in(root / "config.toml");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find("name = \"acme\"  # ours\ntrusted-kernel-publisher = true"), std::string::npos) << text;
  EXPECT_NE(text.find("trusted-kernel-publisher = true # x"), std::string::npos) << text;
  EXPECT_TRUE(text.starts_with("# registry\n"));
  EXPECT_FALSE(set_organization(root, "../x", true));
  fs::remove_all(root);
}

TEST(ServerConfig, TheRouterPicksUpEditsWithoutARestart) {
  auto root = fresh_root();
  auto store = Store::open(root);
  ASSERT_TRUE(store);
  auto token = add_token(root, "alice", {"acme"});
  ASSERT_TRUE(token);
  RouterOptions options;
  options.config_file = root / "config.toml";
  std::vector<std::string> complaints;
  options.on_config_error = [&](const std::string& message) { complaints.push_back(message); };
  Router router(**store, *load_config(root), options);
  auto whoami = [&](const std::string& t) {
    hub::HttpRequest request;
    request.url = "/api/whoami-v2";
    request.headers.set("Authorization", "Bearer " + t);
    return router.handle(request).status;
  };
  auto trusted = [&] {
    hub::HttpRequest request;
    request.url = "/api/organizations/acme/overview";
    return Json::parse(router.handle(request).body).value("trustedKernelPublisher", false);
  };
  EXPECT_EQ(whoami(*token), 200);
  auto later = add_token(root, "bob", {});
  EXPECT_EQ(whoami(*later), 200);
  EXPECT_FALSE(trusted());
  ASSERT_TRUE(set_organization(root, "acme", true));
  EXPECT_TRUE(trusted());
  // A broken file keeps the configuration in force, and says so.
  { std::ofstream(root / "config.toml", std::ios::app) << "[[tokens]]\nbogus = 1\n"; }
  EXPECT_EQ(whoami(*later), 200);
  ASSERT_EQ(complaints.size(), 1u);
  EXPECT_NE(complaints[0].find("keeping the previous configuration"), std::string::npos);
  store->reset();
  fs::remove_all(root);
}

// ---------------------------------------------------------------------------------------------
// Router

class RouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_root = fresh_root();
    store = std::move(*Store::open(m_root));
    Config config;
    config.tokens = {{k_alice, "alice", {"org"}}, {k_bob, "bob", {}}};
    config.organizations = {{"org", true}};
    config.limits.multipart_chunk = 1024;
    config.limits.max_lfs_object = 1 << 20;
    RouterOptions options;
    options.base_url = "http://hub.test/";
    options.now_ms = [this] { return m_clock += 1000; };
    options.tree_page_size = 3;
    router = std::make_unique<Router>(*store, config, options);
  }
  void TearDown() override {
    router.reset();
    store.reset();
    fs::remove_all(m_root);
  }

  hub::HttpResponse call(const std::string& method, const std::string& target, const std::string& body = "",
                         const std::string& token = k_alice) {
    hub::HttpRequest request;
    request.method = method;
    request.url = target;
    request.body = body;
    if (!token.empty()) request.headers.set("Authorization", "Bearer " + token);
    return router->handle(request);
  }
  static Json json(const hub::HttpResponse& response) { return Json::parse(response.body); }
  static std::string header(const hub::HttpResponse& response, const std::string& name) {
    return response.headers.get(name).value_or("");
  }
  std::string create(const std::string& name, const std::string& type = "model") {
    auto response =
        call("POST", "/api/repos/create", Json{{"name", name}, {"organization", nullptr}, {"type", type}}.dump());
    EXPECT_EQ(response.status, 200) << response.body;
    return head("/api/" + type + "s/alice/" + name);
  }
  std::string head(const std::string& api_repo, const std::string& revision = "main") {
    auto refs = json(call("GET", api_repo + "/refs?include_prs=1"));
    for (const auto& list : {refs["branches"], refs["pullRequests"]})
      for (const auto& ref : list)
        if (ref["name"] == revision) return ref["targetCommit"];
    return "";
  }
  /// Every entry of a tree listing, following the Link headers across pages.
  Json list_all(std::string url) {
    Json all = Json::array();
    while (!url.empty()) {
      auto page = call("GET", url);
      for (const auto& item : json(page)) all.push_back(item);
      std::string link = header(page, "Link");
      url = link.empty() ? "" : link.substr(1, link.find('>') - 1);
    }
    return all;
  }
  hub::HttpResponse commit(const std::string& api_repo, const std::string& body, const std::string& revision = "main") {
    return call("POST", api_repo + "/commit/" + revision, body);
  }

  fs::path m_root;
  std::int64_t m_clock = 1700000000000;
  std::unique_ptr<Store> store;
  std::unique_ptr<Router> router;
};

TEST_F(RouterTest, CreateRepoAndConflictWithUrl) {
  auto response = call("POST", "/api/repos/create", R"({"name":"relu","organization":"org","type":"kernel"})");
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(json(response)["url"], "http://hub.test/kernels/org/relu");
  EXPECT_EQ(json(response)["name"], "org/relu");
  auto again = call("POST", "/api/repos/create", R"({"name":"relu","organization":"org","type":"kernel"})");
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(json(again)["url"], "http://hub.test/kernels/org/relu");  // read by create_repo(exist_ok=True)
  EXPECT_EQ(header(again, "X-Error-Code"), "Conflict");
  // A new repo has one commit holding .gitattributes, so main exists.
  auto tree = json(call("GET", "/api/kernels/org/relu/tree/main"));
  ASSERT_EQ(tree.size(), 1u);
  EXPECT_EQ(tree[0]["path"], ".gitattributes");
  auto info = json(call("GET", "/api/kernels/org/relu"));
  EXPECT_EQ(info["id"], "org/relu");
  EXPECT_TRUE(is_commit_oid(info["sha"].get<std::string>()));
}

TEST_F(RouterTest, CreateRepoValidatesNamesAndTypes) {
  for (const char* body :
       {R"({"name":"..x"})", R"({"name":"a/b"})", R"({"name":"x","organization":"bad name"})",
        R"({"name":"x","type":"movie"})", R"({"name":"x","organization":"datasets"})", R"({})", "not json"}) {
    auto response = call("POST", "/api/repos/create", body);
    EXPECT_EQ(response.status, 400) << body;
    EXPECT_EQ(header(response, "X-Error-Code"), "BadRequest") << body;
    EXPECT_TRUE(json(response).contains("error"));
  }
}

TEST_F(RouterTest, AuthenticationAndAuthorization) {
  auto missing = call("POST", "/api/repos/create", R"({"name":"x"})", "");
  EXPECT_EQ(missing.status, 401);
  auto invalid = call("POST", "/api/repos/create", R"({"name":"x"})", "not-a-token");
  EXPECT_EQ(invalid.status, 401);
  EXPECT_EQ(header(invalid, "X-Error-Message"), "Invalid credentials in Authorization header");
  auto forbidden = call("POST", "/api/repos/create", R"({"name":"x","organization":"alice"})", k_bob);
  EXPECT_EQ(forbidden.status, 403);
  create("m");
  EXPECT_EQ(commit("/api/models/alice/m", ndjson({header_line("x"), file_line("a.txt", "a")})).status, 200);
  EXPECT_EQ(call("POST", "/api/models/alice/m/commit/main", ndjson({header_line("x"), file_line("a.txt", "b")}), k_bob)
                .status,
            403);
  EXPECT_EQ(call("GET", "/api/models/alice/m", "", "").status, 200);  // public reads
  auto who = call("GET", "/api/whoami-v2");
  EXPECT_EQ(json(who)["name"], "alice");
  EXPECT_EQ(json(who)["orgs"][0]["name"], "org");
  EXPECT_FALSE(json(who).contains("user"));
  EXPECT_EQ(call("GET", "/api/whoami-v2", "", "").status, 401);
  // Basic authentication carries the token as password (git-lfs style).
  hub::HttpRequest basic;
  basic.url = "/api/whoami-v2";
  basic.headers.set("Authorization", "Basic " + util::base64_encode("alice:" + k_alice));
  EXPECT_EQ(router->handle(basic).status, 200);
}

TEST_F(RouterTest, PrivateReposAreHiddenAndTokenReadMode) {
  ASSERT_EQ(call("POST", "/api/repos/create", R"({"name":"secret","private":true})").status, 200);
  EXPECT_EQ(call("GET", "/api/models/alice/secret").status, 200);
  auto hidden = call("GET", "/api/models/alice/secret", "", k_bob);
  EXPECT_EQ(hidden.status, 404);
  EXPECT_EQ(header(hidden, "X-Error-Code"), "RepoNotFound");
  EXPECT_EQ(call("GET", "/api/models/alice/secret", "", "").status, 404);

  Config strict = *router->config();
  strict.read = ReadAccess::token;
  Router reads_need_token(*store, strict, router->options());
  hub::HttpRequest anonymous;
  anonymous.url = "/api/models/alice/secret/refs";
  EXPECT_EQ(reads_need_token.handle(anonymous).status, 401);
}

TEST_F(RouterTest, RefsBranchesAndTags) {
  std::string initial = create("m");
  const std::string repo = "/api/models/alice/m";
  auto refs = json(call("GET", repo + "/refs"));
  EXPECT_TRUE(refs.contains("branches") && refs.contains("tags") && refs.contains("converts"));
  EXPECT_FALSE(refs.contains("pullRequests"));
  EXPECT_TRUE(json(call("GET", repo + "/refs?include_prs=1")).contains("pullRequests"));

  EXPECT_EQ(call("POST", repo + "/branch/dev", "{}").status, 200);
  auto exists = call("POST", repo + "/branch/dev", "");
  EXPECT_EQ(exists.status, 409);
  EXPECT_NE(header(exists, "X-Error-Message").find("refs/heads/dev"), std::string::npos);
  auto bad_start = call("POST", repo + "/branch/x", R"({"startingPoint":"nope"})");
  EXPECT_EQ(bad_start.status, 404);
  EXPECT_EQ(header(bad_start, "X-Error-Code"), "RevisionNotFound");
  EXPECT_EQ(call("POST", repo + "/branch/from-oid", Json{{"startingPoint", initial}}.dump()).status, 200);
  EXPECT_EQ(call("POST", repo + "/branch/feature%2Fx", "").status, 200);  // "/" in a branch name
  EXPECT_EQ(head(repo, "feature/x"), initial);
  EXPECT_EQ(call("POST", repo + "/branch/bad%20name", "").status, 400);

  EXPECT_EQ(call("POST", repo + "/tag/dev", R"({"tag":"v1.0"})").status, 200);
  EXPECT_EQ(call("POST", repo + "/tag/dev", R"({"tag":"v1.0"})").status, 409);
  EXPECT_EQ(call("POST", repo + "/tag/nope", R"({"tag":"v2"})").status, 404);
  EXPECT_EQ(call("POST", repo + "/tag/main", R"({"tag":"has space"})").status, 400);
  EXPECT_EQ(json(call("GET", repo + "/refs"))["tags"][0]["targetCommit"], initial);
  EXPECT_EQ(json(call("GET", repo + "/revision/v1.0"))["sha"], initial);
  EXPECT_EQ(call("DELETE", repo + "/tag/v1.0").status, 200);
  auto missing_tag = call("DELETE", repo + "/tag/v1.0");
  EXPECT_EQ(missing_tag.status, 404);
  EXPECT_EQ(header(missing_tag, "X-Error-Code"), "RevisionNotFound");

  EXPECT_EQ(call("DELETE", repo + "/branch/main").status, 400);
  EXPECT_EQ(call("DELETE", repo + "/branch/dev").status, 200);
  EXPECT_EQ(call("DELETE", repo + "/branch/dev").status, 404);
  EXPECT_EQ(call("GET", repo + "/revision/dev").status, 404);
}

TEST_F(RouterTest, PreuploadModes) {
  create("m");
  std::string text_sample = util::base64_encode("hello");
  std::string binary_sample =
      util::base64_encode(std::string("\x7f"
                                      "ELF\0\0",
                                      6));
  Json request = {{"files",
                   {{{"path", "a.txt"}, {"sample", text_sample}, {"size", 5}},
                    {{"path", "w.bin"}, {"sample", text_sample}, {"size", 5}},
                    {{"path", "x.so"}, {"sample", binary_sample}, {"size", 6}},
                    {{"path", "huge.txt"}, {"sample", text_sample}, {"size", k_lfs_size_threshold}},
                    {{"path", "empty.bin"}, {"sample", ""}, {"size", 0}},
                    {{"path", "c.pyc"}, {"sample", text_sample}, {"size", 5}}}},
                  {"gitIgnore", "*.pyc\n"}};
  auto response = call("POST", "/api/models/alice/m/preupload/main", request.dump());
  ASSERT_EQ(response.status, 200) << response.body;
  auto files = json(response)["files"];
  std::map<std::string, std::string> modes;
  for (const auto& file : files) modes[file["path"]] = file["uploadMode"];
  EXPECT_EQ(modes["a.txt"], "regular");
  EXPECT_EQ(modes["w.bin"], "lfs");     // .gitattributes pattern
  EXPECT_EQ(modes["x.so"], "lfs");      // NUL byte in the sample
  EXPECT_EQ(modes["huge.txt"], "lfs");  // 10 MiB
  EXPECT_EQ(modes["empty.bin"], "regular");
  EXPECT_TRUE(files[5]["shouldIgnore"]);
  EXPECT_FALSE(files[0]["shouldIgnore"]);
  EXPECT_EQ(json(response)["commitOid"], head("/api/models/alice/m"));

  // An existing file comes back with its oid, so unchanged files are skipped by the client.
  ASSERT_EQ(commit("/api/models/alice/m", ndjson({header_line("add"), file_line("a.txt", "hello")})).status, 200);
  auto again = json(call("POST", "/api/models/alice/m/preupload/main", request.dump()));
  EXPECT_EQ(again["files"][0]["oid"], util::git_blob_id("hello"));
  EXPECT_FALSE(again["files"][1].contains("oid"));
  EXPECT_EQ(
      call("POST", "/api/models/alice/m/preupload/main", R"({"files":[{"path":"../x","sample":"","size":1}]})").status,
      400);
  EXPECT_EQ(call("POST", "/api/models/alice/m/preupload/nope", request.dump()).status, 404);
}

TEST_F(RouterTest, LfsBasicUploadVerifyAndAlreadyPresent) {
  create("m");
  std::string content("binary\0content", 14), oid = util::sha256_hex(content);
  Json batch = {{"operation", "upload"},
                {"transfers", {"basic", "multipart"}},
                {"hash_algo", "sha256"},
                {"objects", {{{"oid", oid}, {"size", content.size()}}}},
                {"ref", {{"name", "main"}}}};
  auto response = call("POST", "/alice/m.git/info/lfs/objects/batch", batch.dump());
  ASSERT_EQ(response.status, 200) << response.body;
  auto answer = json(response);
  EXPECT_EQ(answer["transfer"], "basic");
  auto actions = answer["objects"][0]["actions"];
  std::string href = actions["upload"]["href"];
  EXPECT_TRUE(href.starts_with("http://hub.test/lfs/upload/" + oid + "?token=")) << href;
  EXPECT_FALSE(actions["upload"].contains("header"));
  EXPECT_EQ(actions["verify"]["href"], "http://hub.test/alice/m.git/info/lfs/objects/verify");

  EXPECT_EQ(call("PUT", href, "wrong").status, 400);  // wrong size
  EXPECT_EQ(call("PUT", href.substr(0, href.find("token=") + 6) + "forged", content, "").status, 404);
  EXPECT_EQ(call("PUT", href, content, "").status, 200);  // no Authorization: the URL authorizes itself
  EXPECT_EQ(call("POST", actions["verify"]["href"], Json{{"oid", oid}, {"size", content.size()}}.dump()).status, 200);
  EXPECT_EQ(call("POST", actions["verify"]["href"], Json{{"oid", oid}, {"size", 1}}.dump()).status, 404);

  auto present = json(call("POST", "/alice/m.git/info/lfs/objects/batch", batch.dump()));
  EXPECT_FALSE(present["objects"][0].contains("actions"));
  auto invalid = json(call("POST", "/alice/m.git/info/lfs/objects/batch",
                           Json{{"operation", "upload"}, {"objects", {{{"oid", "xyz"}, {"size", 1}}}}}.dump()));
  EXPECT_EQ(invalid["objects"][0]["error"]["code"], 422);
  auto too_big = json(
      call("POST", "/alice/m.git/info/lfs/objects/batch",
           Json{{"operation", "upload"}, {"objects", {{{"oid", std::string(64, 'a')}, {"size", 2 << 20}}}}}.dump()));
  EXPECT_TRUE(too_big["objects"][0].contains("error"));
  EXPECT_EQ(call("POST", "/alice/m.git/info/lfs/objects/batch", batch.dump(), k_bob).status, 403);

  // The uploaded object can now be committed as an lfsFile line.
  Json lfs_line = {{"key", "lfsFile"},
                   {"value", {{"path", "w.dat"}, {"algo", "sha256"}, {"oid", oid}, {"size", content.size()}}}};
  ASSERT_EQ(commit("/api/models/alice/m", ndjson({header_line("lfs"), lfs_line})).status, 200);
  auto tree = json(call("GET", "/api/models/alice/m/tree/main"));
  EXPECT_EQ(tree[1]["lfs"]["oid"], oid);
  EXPECT_EQ(tree[1]["oid"], util::git_blob_id(lfs_pointer(oid, content.size())));
}

TEST_F(RouterTest, LfsMultipartUpload) {
  create("m");
  std::string content(2500, 'x');  // chunk 1024: parts of 1024, 1024, 452
  content[0] = '\0';
  std::string oid = util::sha256_hex(content);
  Json batch = {{"operation", "upload"}, {"objects", {{{"oid", oid}, {"size", content.size()}}}}};
  auto upload =
      json(call("POST", "/alice/m.git/info/lfs/objects/batch", batch.dump()))["objects"][0]["actions"]["upload"];
  ASSERT_TRUE(upload.contains("header"));
  auto urls = upload["header"];
  EXPECT_EQ(urls["chunk_size"], "1024");
  ASSERT_TRUE(urls.contains("3"));
  EXPECT_FALSE(urls.contains("4"));
  Json parts = Json::array();
  for (int part = 1; part <= 3; ++part) {
    std::string bytes = content.substr(static_cast<size_t>(part - 1) * 1024, 1024);
    EXPECT_EQ(call("PUT", urls[std::to_string(part)], bytes + "extra", "").status, 400);  // wrong part size
    auto response = call("PUT", urls[std::to_string(part)], bytes, "");
    ASSERT_EQ(response.status, 200) << response.body;
    std::string etag = header(response, "ETag");
    EXPECT_FALSE(etag.empty());
    parts.push_back({{"partNumber", part}, {"etag", etag}});
  }
  EXPECT_EQ(call("PUT", upload["href"], content, "").status, 400);  // multipart objects are not PUT whole
  Json bad = {{"oid", oid}, {"parts", {parts[0], parts[1]}}};
  EXPECT_EQ(call("POST", upload["href"], bad.dump(), "").status, 400);
  EXPECT_FALSE(store->blob_size(oid));
  auto done = call("POST", upload["href"], Json{{"oid", oid}, {"parts", parts}}.dump(), "");
  ASSERT_EQ(done.status, 200) << done.body;
  EXPECT_EQ(store->blob_size(oid), 2500u);
  EXPECT_EQ(*store->read_blob(oid), content);
}

TEST_F(RouterTest, CommitsDeletionsAndStaleParent) {
  std::string initial = create("m");
  const std::string repo = "/api/models/alice/m";
  auto first = commit(repo, ndjson({header_line("add", initial), file_line("a/b/c.txt", "c"), file_line("a/d.txt", "d"),
                                    file_line("x.bin", std::string("\0\1\2", 3)), file_line("top.txt", "t")}));
  ASSERT_EQ(first.status, 200) << first.body;
  std::string oid = json(first)["commitOid"];
  EXPECT_EQ(json(first)["commitUrl"], "http://hub.test/alice/m/commit/" + oid);
  EXPECT_EQ(head(repo), oid);

  // A second commit pinned to the old parent is refused and changes nothing.
  auto stale = commit(repo, ndjson({header_line("stale", initial), file_line("s.txt", "s")}));
  EXPECT_EQ(stale.status, 412);
  EXPECT_EQ(header(stale, "X-Error-Code"), "PreconditionFailed");
  EXPECT_EQ(head(repo), oid);

  // Inline binary content is stored with LFS, like preupload would have decided.
  auto files = list_all(repo + "/tree/main?recursive=true");
  std::map<std::string, Json> by_path;
  for (const auto& entry : files) by_path[entry["path"]] = entry;
  EXPECT_TRUE(by_path["x.bin"].contains("lfs"));
  EXPECT_FALSE(by_path["top.txt"].contains("lfs"));
  EXPECT_EQ(by_path["a/b"]["type"], "directory");

  auto missing = commit(repo, ndjson({header_line("del"), delete_line("nope.txt")}));
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(header(missing, "X-Error-Code"), "EntryNotFound");
  EXPECT_NE(header(missing, "X-Error-Message").find("A file with this name doesn't exist"), std::string::npos);
  auto deleted = commit(repo, ndjson({header_line("del", oid), delete_line("top.txt"), delete_line("a/", true)}));
  ASSERT_EQ(deleted.status, 200) << deleted.body;
  auto left = json(call("GET", repo + "/tree/main?recursive=true"));
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0]["path"], ".gitattributes");
  EXPECT_EQ(left[1]["path"], "x.bin");

  EXPECT_EQ(commit(repo, ndjson({header_line("x"), file_line("x.bin/y", "conflict")})).status, 400);
  EXPECT_EQ(commit(repo, ndjson({header_line("x"), file_line(".git/config", "x")})).status, 400);
  EXPECT_EQ(commit(repo, ndjson({file_line("a", "no header first")})).status, 400);
  Json unknown_lfs = {{"key", "lfsFile"}, {"value", {{"path", "w"}, {"oid", std::string(64, 'b')}, {"size", 1}}}};
  EXPECT_EQ(commit(repo, ndjson({header_line("x"), unknown_lfs})).status, 400);
  auto no_branch = commit(repo, ndjson({header_line("x")}), "nope");
  EXPECT_EQ(no_branch.status, 404);
  EXPECT_EQ(header(no_branch, "X-Error-Code"), "RevisionNotFound");
  ASSERT_EQ(call("POST", repo + "/tag/main", R"({"tag":"v1"})").status, 200);
  EXPECT_EQ(commit(repo, ndjson({header_line("x")}), "v1").status, 400);  // tags are not committed to
}

TEST_F(RouterTest, CommitWithCreatePrOpensPullRequests) {
  create("m");
  const std::string repo = "/api/models/alice/m";
  std::string main_before = head(repo);
  auto response = call("POST", repo + "/commit/main?create_pr=1", ndjson({header_line("pr"), file_line("p.txt", "p")}));
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_EQ(json(response)["pullRequestUrl"], "http://hub.test/alice/m/discussions/1");
  EXPECT_EQ(head(repo), main_before);
  auto prs = json(call("GET", repo + "/refs?include_prs=1"))["pullRequests"];
  ASSERT_EQ(prs.size(), 1u);
  EXPECT_EQ(prs[0]["ref"], "refs/pr/1");
  EXPECT_EQ(prs[0]["targetCommit"], json(response)["commitOid"]);
  // Later commits to the pull request itself, addressed with %2F.
  EXPECT_EQ(commit(repo, ndjson({header_line("more"), file_line("q.txt", "q")}), "refs%2Fpr%2F1").status, 200);
  EXPECT_EQ(json(call("GET", repo + "/tree/refs%2Fpr%2F1")).size(), 3u);
}

TEST_F(RouterTest, TreeListingPathsAndPagination) {
  create("m");
  const std::string repo = "/api/models/alice/m";
  ASSERT_EQ(commit(repo, ndjson({header_line("add"), file_line("sub/deep/a.py", "a"), file_line("sub/deep/b.py", "b"),
                                 file_line("sub/c.py", "c"), file_line("d.txt", "d")}))
                .status,
            200);
  auto top = json(call("GET", repo + "/tree/main?recursive=false&expand=false"));
  ASSERT_EQ(top.size(), 3u);  // .gitattributes, d.txt, sub
  EXPECT_EQ(top[2]["path"], "sub");
  EXPECT_EQ(top[2]["type"], "directory");
  EXPECT_EQ(top[2]["oid"].get<std::string>().size(), 40u);
  auto deep = json(call("GET", repo + "/tree/main/sub%2Fdeep?recursive=False"));  // Python encodes '/' in the path
  ASSERT_EQ(deep.size(), 2u);
  EXPECT_EQ(deep[0]["path"], "sub/deep/a.py");                            // relative to the repo root
  EXPECT_EQ(json(call("GET", repo + "/tree/main/sub/deep")).size(), 2u);  // Rust keeps '/'
  EXPECT_EQ(deep[0]["size"], 1);
  EXPECT_EQ(deep[0]["oid"], util::git_blob_id("a"));

  // Recursive listing in pages of 3 (the test's page size) linked with absolute URLs.
  auto first = call("GET", repo + "/tree/main?recursive=true");
  EXPECT_EQ(json(first).size(), 3u);
  std::string link = header(first, "Link");
  ASSERT_FALSE(link.empty());
  EXPECT_TRUE(link.starts_with("<http://hub.test/api/models/alice/m/tree/")) << link;
  EXPECT_TRUE(link.ends_with(">; rel=\"next\"")) << link;
  std::vector<std::string> paths;
  for (const auto& item : list_all(repo + "/tree/main?recursive=true")) paths.push_back(item["path"]);
  EXPECT_EQ(paths, (std::vector<std::string>{".gitattributes", "d.txt", "sub", "sub/c.py", "sub/deep", "sub/deep/a.py",
                                             "sub/deep/b.py"}));

  auto expanded = json(call("GET", repo + "/tree/main/sub?expand=true"));
  EXPECT_EQ(expanded[0]["lastCommit"]["title"], "add");
  auto missing = call("GET", repo + "/tree/main/nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(header(missing, "X-Error-Code"), "EntryNotFound");
  auto no_rev = call("GET", repo + "/tree/nope");
  EXPECT_EQ(no_rev.status, 404);
  EXPECT_EQ(header(no_rev, "X-Error-Code"), "RevisionNotFound");
  EXPECT_EQ(call("GET", repo + "/tree/main/..%2Fx").status, 400);
  auto unknown_repo = call("GET", "/api/models/alice/none/tree/main");
  EXPECT_EQ(header(unknown_repo, "X-Error-Code"), "RepoNotFound");

  auto info = json(call("POST", repo + "/paths-info/main", "paths=sub&paths=d.txt&paths=nope&expand=false"));
  ASSERT_EQ(info.size(), 2u);
  EXPECT_EQ(info[0]["type"], "directory");
  auto siblings = json(call("GET", repo + "/revision/main?blobs=true"))["siblings"];
  EXPECT_EQ(siblings.size(), 5u);
  EXPECT_EQ(json(call("GET", repo + "/commits/main")).size(), 2u);
}

TEST_F(RouterTest, ResolveHeadGetAndRanges) {
  create("m", "dataset");
  const std::string repo = "/api/datasets/alice/m";
  auto committed = commit(
      repo, ndjson({header_line("add"), file_line("dir/data.csv", "a,b\n1,2\n"), file_line("w.bin", "weights")}));
  ASSERT_EQ(committed.status, 200);
  std::string oid = json(committed)["commitOid"];

  auto head_response = call("HEAD", "/datasets/alice/m/resolve/main/dir/data.csv", "", "");
  EXPECT_EQ(head_response.status, 200);
  EXPECT_TRUE(head_response.body.empty());
  EXPECT_EQ(header(head_response, "Content-Length"), "8");
  EXPECT_EQ(header(head_response, "ETag"), "\"" + util::git_blob_id("a,b\n1,2\n") + "\"");
  EXPECT_EQ(header(head_response, "X-Repo-Commit"), oid);
  auto lfs_head = call("HEAD", "/datasets/alice/m/resolve/" + oid + "/w.bin", "", "");
  EXPECT_EQ(header(lfs_head, "ETag"), "\"" + util::sha256_hex("weights") + "\"");  // LFS: the sha256

  auto get = call("GET", "/datasets/alice/m/resolve/main/dir%2Fdata.csv", "", "");
  EXPECT_EQ(get.status, 200);
  EXPECT_EQ(get.body, "a,b\n1,2\n");

  hub::HttpRequest ranged;
  ranged.url = "/datasets/alice/m/resolve/main/dir/data.csv";
  ranged.headers.set("Range", "bytes=4-");
  auto partial = router->handle(ranged);
  EXPECT_EQ(partial.status, 206);
  EXPECT_EQ(partial.body, "1,2\n");
  EXPECT_EQ(header(partial, "Content-Range"), "bytes 4-7/8");
  ranged.headers.set("Range", "bytes=-3");
  EXPECT_EQ(router->handle(ranged).body, ",2\n");
  ranged.headers.set("Range", "bytes=100-");
  EXPECT_EQ(router->handle(ranged).status, 416);

  auto missing = call("HEAD", "/datasets/alice/m/resolve/main/nope.csv", "", "");
  EXPECT_EQ(missing.status, 404);
  EXPECT_TRUE(missing.body.empty());  // never a body on HEAD
  EXPECT_EQ(header(missing, "X-Error-Code"), "EntryNotFound");
  EXPECT_EQ(header(missing, "X-Repo-Commit"), oid);
  EXPECT_EQ(header(call("GET", "/datasets/alice/m/resolve/nope/x", "", ""), "X-Error-Code"), "RevisionNotFound");
  EXPECT_EQ(header(call("GET", "/alice/m/resolve/main/w.bin", "", ""), "X-Error-Code"), "RepoNotFound");  // a model
  // Absolute URLs (what an HttpTransport sends) route the same.
  EXPECT_EQ(call("GET", "http://elsewhere:1234/datasets/alice/m/resolve/main/w.bin", "", "").body, "weights");
}

TEST_F(RouterTest, OrganizationsXetAndMiscellaneous) {
  auto org = json(call("GET", "/api/organizations/org/overview", "", ""));
  EXPECT_EQ(org["trustedKernelPublisher"], true);
  EXPECT_EQ(call("GET", "/api/organizations/alice/overview").status, 404);  // a user
  auto xet = call("GET", "/api/models/alice/m/xet-write-token/main");
  EXPECT_EQ(xet.status, 400);
  EXPECT_NE(json(xet)["error"].get<std::string>().find("HF_HUB_DISABLE_XET"), std::string::npos);
  EXPECT_EQ(call("POST", "/api/validate-yaml", R"({"content":"---\n---\n"})").body, "{}");
  EXPECT_EQ(call("GET", "/api/nothing/here").status, 404);
  EXPECT_EQ(call("PATCH", "/api/whoami-v2").status, 405);
  create("gone");
  EXPECT_EQ(call("DELETE", "/api/repos/delete", R"({"name":"gone","organization":"alice","type":"model"})").status,
            200);
  EXPECT_EQ(call("GET", "/api/models/alice/gone").status, 404);
  EXPECT_EQ(call("DELETE", "/api/repos/delete", R"({"name":"gone","organization":"alice","type":"model"})").status,
            404);
}

TEST_F(RouterTest, BodyLimitsAndFileBodies) {
  create("m");
  Config small = *router->config();
  small.limits.max_commit_body = 100;
  Router limited(*store, small, router->options());
  hub::HttpRequest big;
  big.method = "POST";
  big.url = "/api/models/alice/m/commit/main";
  big.headers.set("Authorization", "Bearer " + k_alice);
  big.body = ndjson({header_line("x"), file_line("a.txt", std::string(200, 'a'))});
  auto refused = limited.handle(big);
  EXPECT_EQ(refused.status, 413);
  EXPECT_EQ(refused.headers.get("X-Error-Code"), "PayloadTooLarge");

  // An LFS body given as a file: the caller's file is only read...
  std::string content(3000, 'z');
  content[1] = '\0';
  std::string oid = util::sha256_hex(content);
  Config single = *router->config();
  single.limits.multipart_chunk = 1 << 20;
  Router router_single(*store, single, router->options());
  auto own = m_root / "caller-file";
  { std::ofstream(own, std::ios::binary) << "prefix" << content; }
  hub::HttpRequest put;
  put.method = "PUT";
  Json batch = {{"operation", "upload"}, {"objects", {{{"oid", oid}, {"size", content.size()}}}}};
  hub::HttpRequest batch_request;
  batch_request.method = "POST";
  batch_request.url = "/alice/m.git/info/lfs/objects/batch";
  batch_request.headers.set("Authorization", "Bearer " + k_alice);
  batch_request.body = batch.dump();
  put.url = json(router_single.handle(batch_request))["objects"][0]["actions"]["upload"]["href"];
  put.body_file = own;
  put.body_offset = 6;
  put.body_length = content.size();
  EXPECT_EQ(router_single.handle(put).status, 200);
  EXPECT_TRUE(fs::exists(own));
  EXPECT_EQ(*store->read_blob(oid), content);

  // ...while a spooled body (the listener's temp file) is moved into the blob store.
  std::string other = content + "more";
  std::string other_oid = util::sha256_hex(other);
  batch["objects"] = {{{"oid", other_oid}, {"size", other.size()}}};
  batch_request.body = batch.dump();
  hub::HttpRequest spooled;
  spooled.method = "PUT";
  spooled.url = json(router_single.handle(batch_request))["objects"][0]["actions"]["upload"]["href"];
  auto spool = store->temp_path();
  { std::ofstream(spool, std::ios::binary) << other; }
  spooled.body_file = spool;
  EXPECT_EQ(router_single.route(spooled, true).response.status, 200);
  EXPECT_FALSE(fs::exists(spool));
  EXPECT_EQ(store->blob_size(other_oid), other.size());
}

// ---------------------------------------------------------------------------------------------
// Content access: an object is reachable only through a repo that received or references it

namespace {

Json lfs_batch_body(const std::string& oid, std::size_t size) {
  return {{"operation", "upload"}, {"objects", {{{"oid", oid}, {"size", size}}}}};
}
Json lfs_file_line(const std::string& path, const std::string& oid, std::optional<std::size_t> size) {
  Json value = {{"path", path}, {"algo", "sha256"}, {"oid", oid}};
  if (size) value["size"] = *size;
  return {{"key", "lfsFile"}, {"value", value}};
}
/// `text` with every `a` and `b` replaced by "X", to compare two answers about different objects.
std::string blank(std::string text, const std::string& a, const std::string& b) {
  for (const auto& needle : {a, b})
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at))
      text.replace(at, needle.size(), "X");
  return text;
}
std::string token_of(const std::string& href) { return href.substr(href.find("token=") + 6); }

}  // namespace

class ServerSecurityTest : public RouterTest {
 protected:
  Json batch(const std::string& repo, const std::string& oid, std::size_t size, const std::string& token = k_alice) {
    auto response = call("POST", "/" + repo + ".git/info/lfs/objects/batch", lfs_batch_body(oid, size).dump(), token);
    EXPECT_EQ(response.status, 200) << response.body;
    return json(response)["objects"][0];
  }
  /// Uploads `content` through the LFS flow of `repo` (one PUT: the fixture's chunk is 1024 bytes).
  void upload(const std::string& repo, const std::string& content, const std::string& token = k_alice) {
    auto answer = batch(repo, util::sha256_hex(content), content.size(), token);
    ASSERT_TRUE(answer.contains("actions")) << answer.dump();
    auto put = call("PUT", answer["actions"]["upload"]["href"], content, "");
    ASSERT_EQ(put.status, 200) << put.body;
  }
  hub::HttpResponse verify(const std::string& repo, const std::string& oid, std::size_t size,
                           const std::string& token) {
    return call("POST", "/" + repo + ".git/info/lfs/objects/verify", Json{{"oid", oid}, {"size", size}}.dump(), token);
  }
};

TEST_F(ServerSecurityTest, AnotherRepositorysObjectCannotBeClaimed) {
  ASSERT_EQ(call("POST", "/api/repos/create", R"({"name":"secret","private":true})").status, 200);
  ASSERT_EQ(call("POST", "/api/repos/create", R"({"name":"m"})", k_bob).status, 200);
  std::string secret("\0alice's private weights", 24), oid = util::sha256_hex(secret);
  upload("alice/secret", secret);
  ASSERT_EQ(
      commit("/api/models/alice/secret", ndjson({header_line("w"), lfs_file_line("w.bin", oid, secret.size())})).status,
      200);
  const std::string unknown(64, 'c');  // stored nowhere

  // Batch: an upload action, exactly as for an object that does not exist.
  auto claimed = batch("bob/m", oid, secret.size(), k_bob);
  auto never = batch("bob/m", unknown, secret.size(), k_bob);
  ASSERT_TRUE(claimed.contains("actions"));
  ASSERT_TRUE(never.contains("actions"));
  EXPECT_EQ(claimed.size(), never.size());
  // Verify: 404 alike.
  auto verified = verify("bob/m", oid, secret.size(), k_bob),
       unverified = verify("bob/m", unknown, secret.size(), k_bob);
  EXPECT_EQ(verified.status, 404);
  EXPECT_EQ(unverified.status, 404);
  EXPECT_EQ(blank(verified.body, oid, unknown), blank(unverified.body, oid, unknown));
  // Commit: an lfsFile line (with or without a size) or a regular file given by oid: 400 alike.
  const std::string bob_commit = "/api/models/bob/m/commit/main";
  for (std::optional<std::size_t> size : {std::optional<std::size_t>(secret.size()), std::optional<std::size_t>()}) {
    auto stolen = call("POST", bob_commit, ndjson({header_line("s"), lfs_file_line("w.bin", oid, size)}), k_bob);
    auto missing = call("POST", bob_commit, ndjson({header_line("s"), lfs_file_line("w.bin", unknown, size)}), k_bob);
    EXPECT_EQ(stolen.status, 400);
    EXPECT_EQ(missing.status, 400);
    EXPECT_EQ(blank(stolen.body, oid, unknown), blank(missing.body, oid, unknown));
  }
  auto by_oid = [&](const std::string& id) {
    Json line = {{"key", "file"}, {"value", {{"path", "w.bin"}, {"oid", id}}}};
    return call("POST", bob_commit, ndjson({header_line("s"), line}), k_bob);
  };
  EXPECT_EQ(by_oid(oid).status, 400);
  EXPECT_EQ(blank(by_oid(oid).body, oid, unknown), blank(by_oid(unknown).body, oid, unknown));
  EXPECT_EQ(call("GET", "/bob/m/resolve/main/w.bin", "", k_bob).status, 404);

  // Bob may store the same bytes by sending them: they are checked although the blob exists.
  std::string href = claimed["actions"]["upload"]["href"];
  EXPECT_EQ(call("PUT", href, std::string(secret.size(), 'x'), "").status, 400);
  ASSERT_EQ(call("PUT", href, secret, "").status, 200);
  EXPECT_EQ(verify("bob/m", oid, secret.size(), k_bob).status, 200);
  ASSERT_EQ(
      call("POST", bob_commit, ndjson({header_line("mine"), lfs_file_line("w.bin", oid, secret.size())}), k_bob).status,
      200);
  EXPECT_EQ(call("GET", "/bob/m/resolve/main/w.bin", "", k_bob).body, secret);
  EXPECT_FALSE(batch("bob/m", oid, secret.size(), k_bob).contains("actions"));  // now his
  EXPECT_EQ(batch("bob/m", oid, 3, k_bob)["error"]["code"], 422);               // his: the size may be told

  // Alice's other repos are no different until they receive or reference the object...
  create("other");
  EXPECT_TRUE(batch("alice/other", oid, secret.size()).contains("actions"));
  EXPECT_EQ(verify("alice/other", oid, secret.size(), k_alice).status, 404);
  // ...and a commit of the repo referencing content is enough (inline binary content goes to LFS).
  std::string inline_binary("\0inline", 7), inline_oid = util::sha256_hex(inline_binary);
  ASSERT_EQ(commit("/api/models/alice/other", ndjson({header_line("x"), file_line("x.bin", inline_binary)})).status,
            200);
  EXPECT_FALSE(batch("alice/other", inline_oid, inline_binary.size()).contains("actions"));
  EXPECT_EQ(verify("alice/other", inline_oid, inline_binary.size(), k_alice).status, 200);
  EXPECT_EQ(
      commit("/api/models/alice/other", ndjson({header_line("y"), lfs_file_line("y.bin", inline_oid, {})})).status,
      200);
}

TEST_F(ServerSecurityTest, UploadUrlsAreCheckedByTheirTokenFirst) {
  create("m");
  std::string content("\0stored", 7), oid = util::sha256_hex(content);
  upload("alice/m", content);
  const std::string absent(64, 'd');
  Json completion = {{"oid", oid}, {"parts", Json::array()}};
  struct Case {
    const char* method;
    std::string suffix, body;
  };
  for (const Case& c : {Case{"PUT", "", content}, Case{"PUT", "/1", content}, Case{"POST", "", completion.dump()}}) {
    for (const char* query : {"?token=forged", "", "?token="}) {
      auto existing = call(c.method, "/lfs/upload/" + oid + c.suffix + query, c.body, "");
      auto missing = call(c.method, "/lfs/upload/" + absent + c.suffix + query, c.body, "");
      EXPECT_EQ(existing.status, 404) << c.method << c.suffix << query;
      EXPECT_EQ(existing.status, missing.status);
      EXPECT_EQ(existing.body, missing.body);
      EXPECT_EQ(header(existing, "X-Error-Message"), header(missing, "X-Error-Message"));
    }
  }
  // A real token is only good for its own object...
  std::string other("\0other", 6);
  std::string href = batch("alice/m", util::sha256_hex(other), other.size())["actions"]["upload"]["href"];
  EXPECT_EQ(call("PUT", "/lfs/upload/" + oid + "?token=" + token_of(href), content, "").status, 404);
  // ...a completed upload answers a retry (a lost answer) with 200 until it expires...
  ASSERT_EQ(call("PUT", href, other, "").status, 200);
  EXPECT_EQ(call("PUT", href, other, "").status, 200);
  // ...and then is forgotten.
  m_clock += 2 * 3600 * 1000;
  batch("alice/m", absent, 1);  // a batch expires old uploads
  EXPECT_EQ(call("PUT", href, other, "").status, 404);
}

TEST_F(StoreTest, UploadTokensAreFoundByHashAndComparedWhole) {
  std::string token = "0123456789abcdef0123456789abcdef";
  PendingUpload upload{token, repo.key, util::sha256_hex("uploaded"), 8, 0, 5000, false};
  ASSERT_TRUE(store->add_upload(upload));
  EXPECT_TRUE(*store->find_upload(token, 1000));
  EXPECT_FALSE(*store->find_upload(token.substr(0, 31) + "0", 1000));
  EXPECT_FALSE(*store->find_upload(token.substr(0, 16), 1000));
  EXPECT_FALSE(*store->find_upload(token, 6000));  // expired
  EXPECT_FALSE(*store->may_use_object(repo.key, upload.oid));
  ASSERT_TRUE(store->finish_upload(upload));
  EXPECT_TRUE(*store->may_use_object(repo.key, upload.oid));
  EXPECT_TRUE((*store->find_upload(token, 1000))->completed);
  auto other = store->create_repo({RepoType::model, "bob", "m"}, false, {"i", "", "system", 1, {}});
  EXPECT_FALSE(*store->may_use_object((*other)->key, upload.oid));
  // Referenced by any commit of the repo is as good.
  ASSERT_TRUE(store->commit(repo.key, RefKind::branch, "main", main_head, request_with("c.txt", "content")));
  EXPECT_TRUE(*store->may_use_object(repo.key, util::sha256_hex("content")));
  EXPECT_TRUE(equal_in_constant_time("abc", "abc"));
  EXPECT_FALSE(equal_in_constant_time("abc", "abd"));
  EXPECT_FALSE(equal_in_constant_time("abc", "abcd"));
}

// ---------------------------------------------------------------------------------------------
// Refs: unambiguous names, commit ids first

TEST_F(RouterTest, RefNamesThatReadAsSomethingElseAreRefused) {
  create("m");
  const std::string repo = "/api/models/alice/m";
  for (const std::string& name :
       {std::string(40, 'a'), std::string(64, 'b'), std::string("ABCDEF0123456789ABCDEF0123456789ABCDEF01"),
        std::string("HEAD"), std::string("head"), std::string("FETCH_HEAD"), std::string("refs%2Fheads%2Fx"),
        std::string("refs%2Fpr%2F1")}) {
    auto branch = call("POST", repo + "/branch/" + name, "{}");
    EXPECT_EQ(branch.status, 400) << name;
    EXPECT_EQ(header(branch, "X-Error-Code"), "BadRequest");
    std::string decoded = *hub::url_decode(name);
    EXPECT_EQ(call("POST", repo + "/tag/main", Json{{"tag", decoded}}.dump()).status, 400) << name;
  }
  EXPECT_EQ(call("POST", repo + "/branch/" + std::string(39, 'a'), "{}").status, 200);  // not an id
  // A tag may not take a branch's name, nor a branch a tag's.
  ASSERT_EQ(call("POST", repo + "/branch/dev", "{}").status, 200);
  EXPECT_EQ(call("POST", repo + "/tag/main", R"({"tag":"dev"})").status, 409);
  ASSERT_EQ(call("POST", repo + "/tag/main", R"({"tag":"v1"})").status, 200);
  EXPECT_EQ(call("POST", repo + "/branch/v1", "{}").status, 409);
  // refs/pr/ takes a pull request number only.
  for (const char* bad : {"refs%2Fpr%2Fabc", "refs%2Fpr%2F01", "refs%2Fpr%2F", "refs%2Fpr%2F1x"}) {
    EXPECT_EQ(call("GET", repo + "/tree/" + bad).status, 400) << bad;
    EXPECT_EQ(commit(repo, ndjson({header_line("x"), file_line("a", "a")}), bad).status, 400) << bad;
  }
  EXPECT_EQ(call("GET", repo + "/tree/refs%2Fpr%2F7").status, 404);  // well-formed, missing
}

TEST_F(RouterTest, CommitIdsResolveBeforeRefNames) {
  std::string initial = create("m");
  const std::string repo = "/api/models/alice/m";
  auto second = commit(repo, ndjson({header_line("two"), file_line("a.txt", "a")}));
  ASSERT_EQ(second.status, 200);
  std::string second_oid = json(second)["commitOid"];
  // Data from before these rules: a branch named like the first commit, pointing at the second.
  auto key = (*store->find_repo({RepoType::model, "alice", "m"}))->key;
  ASSERT_TRUE(*store->create_ref(key, RefKind::branch, initial, second_oid));
  EXPECT_EQ(json(call("GET", repo + "/revision/" + initial))["sha"], initial);
  std::string upper = initial;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(json(call("GET", repo + "/revision/" + upper))["sha"], initial);
  EXPECT_EQ(json(call("GET", repo + "/revision/refs%2Fheads%2F" + initial))["sha"], second_oid);
  EXPECT_EQ(commit(repo, ndjson({header_line("x"), file_line("b", "b")}), initial).status, 400);  // a commit
  EXPECT_EQ(head(repo, initial), second_oid);
}

// ---------------------------------------------------------------------------------------------
// Bounded resources

TEST_F(RouterTest, JsonBodiesHaveALowerLimitThanCommits) {
  create("m");
  Config limits = *router->config();
  limits.limits.max_json_body = 200;
  limits.limits.max_commit_body = 1 << 20;
  Router limited(*store, limits, router->options());
  auto send = [&](const std::string& target, const std::string& body) {
    hub::HttpRequest request;
    request.method = "POST";
    request.url = target;
    request.body = body;
    request.headers.set("Authorization", "Bearer " + k_alice);
    return limited.handle(request);
  };
  Json preupload = {{"files", Json::array()}, {"gitIgnore", std::string(300, '#')}};
  EXPECT_EQ(send("/api/models/alice/m/preupload/main", preupload.dump()).status, 413);
  EXPECT_EQ(send("/api/models/alice/m/branch/x", Json{{"startingPoint", std::string(300, 'm')}}.dump()).status, 413);
  EXPECT_EQ(send("/alice/m.git/info/lfs/objects/batch", lfs_batch_body(std::string(300, 'a'), 1).dump()).status, 413);
  auto big_commit =
      send("/api/models/alice/m/commit/main", ndjson({header_line("big"), file_line("a.txt", std::string(5000, 'a'))}));
  EXPECT_EQ(big_commit.status, 200) << big_commit.body;
}

TEST(ServerGuard, BodyLimitsDependOnTheRequest) {
  Limits limits;
  limits.max_lfs_object = 3;
  limits.max_commit_body = 2;
  limits.max_json_body = 1;
  EXPECT_EQ(body_limit("PUT", "/lfs/upload/abc?token=t", limits), 3u);
  EXPECT_EQ(body_limit("PUT", "/lfs/upload/abc/2?token=t", limits), 3u);
  EXPECT_EQ(body_limit("POST", "/lfs/upload/abc?token=t", limits), 1u);  // completion: JSON
  EXPECT_EQ(body_limit("POST", "/api/models/a/b/commit/main?create_pr=1", limits), 2u);
  EXPECT_EQ(body_limit("POST", "/api/kernels/a/b/commit/refs%2Fpr%2F1", limits), 2u);
  EXPECT_EQ(body_limit("POST", "/api/models/a/b/preupload/main", limits), 1u);
  EXPECT_EQ(body_limit("POST", "/a/b.git/info/lfs/objects/batch", limits), 1u);
  EXPECT_EQ(body_limit("POST", "/api/repos/create", limits), 1u);
}

TEST(ServerGuard, HeadersMustArriveInTimeAndWithinLimits) {
  using namespace std::chrono_literals;
  ReadBudget::Limits limits{std::chrono::milliseconds(10'000), 3, 200, 64 * 1024};
  ReadBudget budget(limits);
  auto t0 = ReadBudget::Clock::time_point{} + 1h;
  budget.begin_request(t0);
  EXPECT_EQ(budget.read_deadline(), t0 + 10s);
  // Trickled header lines do not move the deadline.
  EXPECT_TRUE(budget.account_read("GET / HTTP/1.1\r\n", t0 + 2s));
  EXPECT_TRUE(budget.account_read("A: 1\r\n", t0 + 4s));
  EXPECT_TRUE(budget.account_read("B: 2\r\n", t0 + 6s));
  EXPECT_EQ(budget.read_deadline(), t0 + 10s);
  EXPECT_TRUE(budget.account_read("C: 3\r\n", t0 + 6s));
  EXPECT_TRUE(budget.account_read("\r\n", t0 + 6s));  // 3 headers: fine
  budget.begin_request(t0);
  EXPECT_TRUE(budget.account_read("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n", t0));
  EXPECT_FALSE(budget.account_read("D: 4\r\n", t0));  // a fourth header line
  EXPECT_TRUE(budget.header_limit_exceeded());
  budget.begin_request(t0);
  EXPECT_FALSE(budget.header_limit_exceeded());
  EXPECT_TRUE(budget.account_read(std::string(190, 'x'), t0));
  EXPECT_FALSE(budget.account_read(std::string(20, 'x'), t0));  // 210 bytes
  // A body must keep coming: each 64 KiB moves the deadline on.
  budget.begin_request(t0);
  budget.begin_body(t0 + 1s);
  EXPECT_EQ(budget.read_deadline(), t0 + 11s);
  EXPECT_TRUE(budget.account_read(std::string(1000, 'b'), t0 + 5s));
  EXPECT_EQ(budget.read_deadline(), t0 + 11s);
  EXPECT_TRUE(budget.account_read(std::string(64 * 1024, 'b'), t0 + 6s));
  EXPECT_EQ(budget.read_deadline(), t0 + 16s);
  // So must a response be taken; the time spent handling the request does not count.
  EXPECT_EQ(budget.write_deadline(t0 + 100s), t0 + 110s);
  budget.account_write(1000, t0 + 104s);
  EXPECT_EQ(budget.write_deadline(t0 + 104s), t0 + 110s);
  budget.account_write(64 * 1024, t0 + 105s);
  EXPECT_EQ(budget.write_deadline(t0 + 105s), t0 + 115s);
}

TEST(ServerGuard, ClientLimiterCountsEachAddress) {
  ClientLimiter limiter(2);
  EXPECT_TRUE(limiter.acquire("10.0.0.1"));
  EXPECT_TRUE(limiter.acquire("10.0.0.1"));
  EXPECT_FALSE(limiter.acquire("10.0.0.1"));
  EXPECT_TRUE(limiter.acquire("10.0.0.2"));  // others are not affected
  EXPECT_EQ(limiter.active("10.0.0.1"), 2u);
  limiter.release("10.0.0.1");
  EXPECT_TRUE(limiter.acquire("10.0.0.1"));
  limiter.release("10.0.0.1");
  limiter.release("10.0.0.1");
  limiter.release("10.0.0.1");  // one too many: harmless
  EXPECT_EQ(limiter.active("10.0.0.1"), 0u);
}

TEST(ServerWire, LineReaderReadsOneLineAtATime) {
  std::string long_line(200'000, 'c');
  std::string body = "a\n\nbbb\n" + long_line + "\nlast";
  auto file = fresh_root();
  { std::ofstream(file, std::ios::binary) << "xx" << body << "yy"; }
  for (int from_file = 0; from_file < 2; ++from_file) {
    auto reader = from_file ? std::make_unique<LineReader>(file, 2, body.size()) : std::make_unique<LineReader>(body);
    std::vector<std::string> lines;
    std::string line;
    while (reader->next(line)) {
      EXPECT_EQ(line.capacity() < 2 * line.size() + 32, true);  // exactly sized, not grown
      lines.push_back(line);
    }
    EXPECT_FALSE(reader->failed());
    EXPECT_EQ(lines, (std::vector<std::string>{"a", "", "bbb", long_line, "last"}));
  }
  fs::remove(file);
  LineReader missing(file, 0, 10);
  std::string line;
  EXPECT_FALSE(missing.next(line));
  EXPECT_TRUE(missing.failed());
}

TEST(ServerWire, CommitParserLeavesLongContentInTheLine) {
  CommitParser parser;
  std::string description(100'000, 'd');
  Json header = {{"key", "header"}, {"value", {{"summary", "s"}, {"description", description}}}};
  auto first = parser.parse(header.dump());
  ASSERT_TRUE(first && *first) << (first ? "" : first.error());
  EXPECT_EQ((*first)->header.description, description);  // a long string outside "content" too
  std::string binary(150'000, '\0');
  for (size_t i = 0; i < binary.size(); ++i) binary[i] = static_cast<char>(i * 7);
  auto file = parser.parse(file_line("w.bin", binary).dump());
  ASSERT_TRUE(file && *file) << (file ? "" : file.error());
  EXPECT_EQ((*file)->content, binary);
  EXPECT_EQ((*file)->path, "w.bin");
  Json text = {{"key", "file"}, {"value", {{"content", std::string(70'000, 't')}, {"path", "t.txt"}}}};
  EXPECT_EQ((**parser.parse(text.dump())).content, std::string(70'000, 't'));
  Json escaped = {{"key", "file"}, {"value", {{"path", "e.txt"}, {"content", std::string(70'000, '\n')}}}};
  EXPECT_EQ((**parser.parse(escaped.dump())).content, std::string(70'000, '\n'));  // escapes: parsed normally
  EXPECT_FALSE(*parser.parse("   "));                                              // blank lines are skipped
  std::string broken = R"({"key":"file","value":{"path":"b","content":")" + std::string(70'000, 'x');
  EXPECT_FALSE(parser.parse(std::move(broken)));
  Json long_path = {{"key", "file"}, {"value", {{"path", std::string(70'000, 'p')}, {"content", ""}}}};
  EXPECT_FALSE(parser.parse(long_path.dump()));
}

// ---------------------------------------------------------------------------------------------
// One server per root and port; temporary files swept; durable commits

TEST_F(StoreTest, SweepRemovesStaleTemporaryFilesAndOrphanedParts) {
  using namespace std::chrono_literals;
  auto old_file = store->temp_dir() / "old-spool", new_file = store->temp_dir() / "new-spool";
  { std::ofstream(old_file) << "12345"; }
  { std::ofstream(new_file) << "123"; }
  fs::last_write_time(old_file, fs::file_time_type::clock::now() - 2h);
  PendingUpload live{"feedfacefeedfacefeedfacefeedface",           repo.key, util::sha256_hex("x"), 2048, 1024,
                     std::numeric_limits<std::int64_t>::max() / 2, false};
  ASSERT_TRUE(store->add_upload(live));
  fs::create_directories(store->upload_dir(live));
  { std::ofstream(store->upload_dir(live) / "1") << "part"; }
  auto orphan = m_root / "uploads" / std::string(64, 'e');
  fs::create_directories(orphan);
  { std::ofstream(orphan / "1") << "orphan"; }

  auto now = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
                 .count();
  auto report = store->sweep_temporary(now - 3600 * 1000);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->files, 2u);
  EXPECT_EQ(report->bytes, 5u + 6u);
  EXPECT_FALSE(fs::exists(old_file));
  EXPECT_FALSE(fs::exists(orphan));
  EXPECT_TRUE(fs::exists(new_file));
  EXPECT_TRUE(fs::exists(store->upload_dir(live) / "1"));  // a pending upload's parts stay
  EXPECT_EQ(store->sweep_temporary(std::numeric_limits<std::int64_t>::max())->files, 1u);  // at start: all
  EXPECT_FALSE(fs::exists(new_file));
  ASSERT_TRUE(store->expire_uploads(std::numeric_limits<std::int64_t>::max()));
  EXPECT_FALSE(fs::exists(store->upload_dir(live)));  // expired: parts deleted
}

TEST_F(StoreTest, OneServerPerRootAndDurableCommits) {
  ASSERT_TRUE(store->lock_exclusively());
  auto second = Store::open(m_root);
  ASSERT_TRUE(second);
  auto refused = (*second)->lock_exclusively();
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("another kbuild hub serve"), std::string::npos);
  EXPECT_EQ(*store->pragma_for_testing("synchronous"), 2);  // FULL
  EXPECT_EQ(*store->pragma_for_testing("foreign_keys"), 1);
  EXPECT_EQ(*store->pragma_for_testing("user_version"), 2);
  EXPECT_TRUE(fs::exists(m_root / "hub.sqlite-wal"));  // WAL kept
  store.reset();
  EXPECT_TRUE((*second)->lock_exclusively());
}

TEST(ServerListener, ASecondServerCannotShareThePort) {
  ListenerOptions options;
  auto first = Listener::bind(options);
  ASSERT_TRUE(first) << first.error().message;
  options.port = (*first)->port();
  auto second = Listener::bind(options);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, ExitCode::network);
  EXPECT_NE(second.error().message.find("port " + std::to_string(options.port) + " is already in use"),
            std::string::npos)
      << second.error().message;
  EXPECT_NE(second.error().hint.find("--port"), std::string::npos);
}

TEST(StoreMigration, VersionOneDatabasesKeepTheirDataAndGainPullRequests) {
  auto root = fresh_root();
  fs::create_directories(root);
  auto db = db::open(root / "hub.sqlite");
  ASSERT_TRUE(db);
  const std::string first(40, '1'), second(40, '2');
  std::string sql = R"sql(
    CREATE TABLE repos (key INTEGER PRIMARY KEY, type TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
      private INTEGER NOT NULL, object_id TEXT NOT NULL, created_ms INTEGER NOT NULL, UNIQUE (type, namespace, name));
    CREATE TABLE commits (repo INTEGER NOT NULL REFERENCES repos(key) ON DELETE CASCADE, oid TEXT NOT NULL,
      parent TEXT NOT NULL, tree TEXT NOT NULL, title TEXT NOT NULL, message TEXT NOT NULL, author TEXT NOT NULL,
      time_ms INTEGER NOT NULL, PRIMARY KEY (repo, oid));
    CREATE TABLE files (repo INTEGER NOT NULL, commit_oid TEXT NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL,
      sha256 TEXT NOT NULL, blob_id TEXT NOT NULL, lfs INTEGER NOT NULL, PRIMARY KEY (repo, commit_oid, path),
      FOREIGN KEY (repo, commit_oid) REFERENCES commits(repo, oid) ON DELETE CASCADE);
    CREATE TABLE refs (repo INTEGER NOT NULL REFERENCES repos(key) ON DELETE CASCADE, kind TEXT NOT NULL,
      name TEXT NOT NULL, target TEXT NOT NULL, PRIMARY KEY (repo, kind, name));
    CREATE TABLE uploads (token TEXT PRIMARY KEY, oid TEXT NOT NULL, size INTEGER NOT NULL,
      chunk_size INTEGER NOT NULL, expires_ms INTEGER NOT NULL);
    INSERT INTO repos VALUES (1, 'model', 'alice', 'm', 0, 'aaaaaaaaaaaaaaaaaaaaaaaa', 1000);
    INSERT INTO commits VALUES (1, ')sql" +
                    first + R"sql(', '', 't', 'first', '', 'alice', 1000);
    INSERT INTO commits VALUES (1, ')sql" +
                    second + R"sql(', ')sql" + first + R"sql(', 't', 'a change', '', 'bob', 2000);
    INSERT INTO refs VALUES (1, 'branch', 'main', ')sql" +
                    first + R"sql(');
    INSERT INTO refs VALUES (1, 'pr', '1', ')sql" +
                    second + R"sql(');
    INSERT INTO uploads VALUES ('tok', 'oid', 1, 0, 99);
    PRAGMA user_version = 1;)sql";
  ASSERT_TRUE(db::exec(*db, sql.c_str()));
  db::close(*db);
  {
    auto store = Store::open(root);
    ASSERT_TRUE(store) << store.error().message;
    auto repo = *(*store)->find_repo({RepoType::model, "alice", "m"});
    ASSERT_TRUE(repo);
    EXPECT_EQ(*(*store)->find_ref(repo->key, RefKind::branch, "main"), first);
    auto discussions = *(*store)->list_discussions(repo->key);
    ASSERT_EQ(discussions.size(), 1u);
    EXPECT_EQ(discussions[0].num, 1);
    EXPECT_TRUE(discussions[0].is_pr);
    EXPECT_EQ(discussions[0].title, "a change");
    EXPECT_EQ(discussions[0].base, first);
    EXPECT_EQ(discussions[0].status, DiscussionStatus::open);
    EXPECT_EQ(*(*store)->pragma_for_testing("user_version"), 2);
  }
  fs::remove_all(root);
}

// ---------------------------------------------------------------------------------------------
// Multipart uploads resume

TEST_F(ServerSecurityTest, AnUnfinishedMultipartUploadIsResumed) {
  create("m");
  std::string content(2500, 'y');  // parts of 1024, 1024, 452
  content[0] = '\0';
  std::string oid = util::sha256_hex(content);
  auto first = batch("alice/m", oid, content.size())["actions"]["upload"];
  auto part = [&](const Json& upload, int number) {
    auto response =
        call("PUT", upload["header"][std::to_string(number)], content.substr((number - 1) * 1024, 1024), "");
    EXPECT_EQ(response.status, 200) << response.body;
    return Json{{"partNumber", number}, {"etag", header(response, "ETag")}};
  };
  Json parts = Json::array({part(first, 1)});
  auto again = batch("alice/m", oid, content.size())["actions"]["upload"];
  EXPECT_EQ(again["href"], first["href"]);  // the same session: same token, same URLs
  EXPECT_EQ(again["header"], first["header"]);
  parts.push_back(part(again, 2));
  parts.push_back(part(again, 3));  // part 1 is not sent again
  auto done = call("POST", again["href"], Json{{"oid", oid}, {"parts", parts}}.dump(), "");
  ASSERT_EQ(done.status, 200) << done.body;
  EXPECT_EQ(*store->read_blob(oid), content);
  EXPECT_FALSE(batch("alice/m", oid, content.size()).contains("actions"));
  // Another repo never shares a session.
  create("n");
  EXPECT_NE(batch("alice/n", oid, content.size())["actions"]["upload"]["href"], first["href"]);
}

TEST_F(ServerSecurityTest, AnExpiredUploadLosesItsParts) {
  create("m");
  std::string content(2000, 'z');
  std::string oid = util::sha256_hex(content);
  auto first = batch("alice/m", oid, content.size())["actions"]["upload"];
  ASSERT_EQ(call("PUT", first["header"]["1"], content.substr(0, 1024), "").status, 200);
  auto pending = *store->find_upload(token_of(first["href"]), m_clock);
  ASSERT_TRUE(pending);
  auto parts = store->upload_dir(*pending);
  EXPECT_TRUE(fs::exists(parts / "1"));
  m_clock += 2 * 3600 * 1000;  // past the upload TTL
  auto fresh = batch("alice/m", oid, content.size())["actions"]["upload"];
  EXPECT_NE(fresh["href"], first["href"]);
  EXPECT_FALSE(fs::exists(parts));
  EXPECT_EQ(call("PUT", first["header"]["2"], content.substr(1024), "").status, 404);
}

// ---------------------------------------------------------------------------------------------
// Discussions and pull requests

TEST_F(RouterTest, DiscussionsAndPullRequests) {
  std::string initial = create("m");
  const std::string repo = "/api/models/alice/m";
  auto question = call("POST", repo + "/discussions", R"({"title":"A question","description":"why?"})");
  ASSERT_EQ(question.status, 200) << question.body;
  EXPECT_EQ(json(question)["num"], 1);
  auto draft = call("POST", repo + "/discussions", R"({"title":"Add p","description":"d","pullRequest":true})");
  ASSERT_EQ(draft.status, 200) << draft.body;
  EXPECT_EQ(json(draft)["num"], 2);  // numbers are shared
  EXPECT_EQ(json(draft)["status"], "draft");
  EXPECT_EQ(head(repo, "refs/pr/2"), initial);
  EXPECT_EQ(call("POST", repo + "/discussions", R"({"title":"ab"})").status, 400);

  // A commit to refs/pr/2 opens it and becomes an event.
  auto pushed = commit(repo, ndjson({header_line("add p"), file_line("p.txt", "p")}), "refs%2Fpr%2F2");
  ASSERT_EQ(pushed.status, 200) << pushed.body;
  auto details = json(call("GET", repo + "/discussions/2?diff=1"));
  EXPECT_EQ(details["status"], "open");
  EXPECT_EQ(details["isPullRequest"], true);
  EXPECT_EQ(details["changes"]["base"], "refs/heads/main");
  ASSERT_EQ(details["events"].size(), 2u);
  EXPECT_EQ(details["events"][0]["data"]["latest"]["raw"], "d");
  EXPECT_EQ(details["events"][1]["type"], "commit");
  EXPECT_EQ(details["events"][1]["data"]["oid"], json(pushed)["commitOid"]);
  EXPECT_NE(details["diff"].get<std::string>().find("diff --git a/p.txt b/p.txt"), std::string::npos);
  EXPECT_EQ(details["filesWithConflicts"], Json::array());

  // main moves on without conflict; the merge keeps both sides.
  ASSERT_EQ(commit(repo, ndjson({header_line("m"), file_line("m.txt", "m")})).status, 200);
  auto merged = call("POST", repo + "/discussions/2/merge", "");
  ASSERT_EQ(merged.status, 200) << merged.body;
  details = json(call("GET", repo + "/discussions/2"));
  EXPECT_EQ(details["status"], "merged");
  EXPECT_EQ(details["changes"]["mergeCommitId"], head(repo));
  EXPECT_EQ(details["events"].back()["data"]["status"], "merged");
  std::set<std::string> paths;
  for (const auto& item : json(call("GET", repo + "/tree/main"))) paths.insert(item["path"]);
  EXPECT_EQ(paths, (std::set<std::string>{".gitattributes", "m.txt", "p.txt"}));
  EXPECT_EQ(call("POST", repo + "/discussions/2/merge", "").status, 400);  // merged already

  auto list = json(call("GET", repo + "/discussions"));
  EXPECT_EQ(list["count"], 2);
  EXPECT_EQ(list["start"], 0);
  EXPECT_EQ(list["discussions"][0]["num"], 2);  // newest first
  EXPECT_EQ(list["discussions"][0]["repo"]["name"], "alice/m");
  EXPECT_EQ(json(call("GET", repo + "/discussions?type=pull_request"))["count"], 1);
  EXPECT_EQ(json(call("GET", repo + "/discussions?status=open"))["discussions"][0]["num"], 1);
  EXPECT_EQ(json(call("GET", repo + "/discussions?author=bob"))["count"], 0);
  EXPECT_EQ(json(call("GET", repo + "/discussions?p=1"))["discussions"].size(), 0u);

  auto closed = call("POST", repo + "/discussions/1/status", R"({"status":"closed","comment":"done"})");
  ASSERT_EQ(closed.status, 200) << closed.body;
  EXPECT_EQ(json(closed)["newStatus"]["data"]["status"], "closed");
  EXPECT_EQ(call("POST", repo + "/discussions/2/status", R"({"status":"open"})").status, 400);  // merged stays
  auto comment = call("POST", repo + "/discussions/1/comment", R"({"comment":"hi"})");
  EXPECT_EQ(json(comment)["newMessage"]["data"]["latest"]["raw"], "hi");
  auto events = json(call("GET", repo + "/discussions/1"))["events"];
  ASSERT_EQ(events.size(), 4u);  // why?, done, closed, hi
  EXPECT_EQ(events[2]["type"], "status-change");
  EXPECT_EQ(call("GET", repo + "/discussions/9").status, 404);
  EXPECT_EQ(call("GET", repo + "/discussions/x").status, 404);
  EXPECT_EQ(call("POST", repo + "/discussions/1/comment", R"({"comment":"hi"})", k_bob).status, 403);
}

TEST_F(RouterTest, PullRequestConflictsAndStaleParents) {
  std::string initial = create("m");
  const std::string repo = "/api/models/alice/m";
  ASSERT_EQ(commit(repo, ndjson({header_line("one"), file_line("a.txt", "1")})).status, 200);
  std::string current = head(repo);
  auto stale =
      call("POST", repo + "/commit/main?create_pr=1", ndjson({header_line("pr", initial), file_line("a.txt", "2")}));
  EXPECT_EQ(stale.status, 412);
  EXPECT_EQ(header(stale, "X-Error-Code"), "PreconditionFailed");
  EXPECT_TRUE(json(call("GET", repo + "/refs?include_prs=1"))["pullRequests"].empty());
  auto opened =
      call("POST", repo + "/commit/main?create_pr=1", ndjson({header_line("pr", current), file_line("a.txt", "2")}));
  ASSERT_EQ(opened.status, 200) << opened.body;
  ASSERT_EQ(commit(repo, ndjson({header_line("three"), file_line("a.txt", "3")})).status, 200);
  std::string main_head = head(repo);
  auto details = json(call("GET", repo + "/discussions/1"));
  EXPECT_EQ(details["title"], "pr");
  EXPECT_EQ(details["filesWithConflicts"], Json::array({"a.txt"}));
  auto conflict = call("POST", repo + "/discussions/1/merge", "");
  EXPECT_EQ(conflict.status, 409);
  EXPECT_EQ(head(repo), main_head);
  EXPECT_EQ(json(call("GET", repo + "/discussions/1"))["status"], "open");
}

// ---------------------------------------------------------------------------------------------
// Smaller Hub deviations

TEST_F(RouterTest, SuspiciousPathsAndEmptyCommitsAreRefused) {
  create("m");
  const std::string repo = "/api/models/alice/m";
  for (const char* path : {"a\\b.txt", "~/x", "a/~/b", "~", "a%2e%2e/x", "a%2Fb", "x%5cy", "%2E", "a%5C"}) {
    auto response = commit(repo, ndjson({header_line("x"), file_line(path, "x")}));
    EXPECT_EQ(response.status, 400) << path;
    Json preupload = {{"files", {{{"path", path}, {"size", 1}, {"sample", ""}}}}};
    EXPECT_EQ(call("POST", repo + "/preupload/main", preupload.dump()).status, 400) << path;
  }
  EXPECT_EQ(commit(repo, ndjson({header_line("x"), file_line("~x/a~", "fine"), file_line("100%.txt", "ok")})).status,
            200);
  EXPECT_EQ(call("GET", repo + "/tree/main/a%252e").status, 400);  // decodes to "a%2e"
  EXPECT_EQ(call("GET", "/alice/m/resolve/main/a%5Cb", "", "").status, 400);
  EXPECT_EQ(call("GET", "/alice/m/resolve/main/~/b", "", "").status, 400);
  EXPECT_EQ(call("POST", repo + "/paths-info/main", R"({"paths":["a\\b"]})").status, 200);  // a form: one odd key
  hub::HttpRequest json_paths;
  json_paths.method = "POST";
  json_paths.url = repo + "/paths-info/main";
  json_paths.body = R"({"paths":["a\\b"]})";
  json_paths.headers.set("Content-Type", "application/json");
  EXPECT_EQ(router->handle(json_paths).status, 400);

  std::string before = head(repo);
  auto empty = commit(repo, ndjson({header_line("nothing")}));
  EXPECT_EQ(empty.status, 400);
  EXPECT_NE(header(empty, "X-Error-Message").find("no operations"), std::string::npos);
  EXPECT_EQ(commit(repo, ndjson({header_line("nothing")}) + "\n  \n").status, 400);
  EXPECT_EQ(head(repo), before);
}

TEST(ServerGuard, AmbiguousFramingIsRefusedBeforeTheBody) {
  using Lengths = std::vector<std::string>;
  EXPECT_FALSE(framing_problem("POST", {"18"}, false, "application/json"));
  EXPECT_FALSE(framing_problem("POST", {}, true, "application/x-ndjson"));
  EXPECT_FALSE(framing_problem("GET", {}, false, ""));
  EXPECT_FALSE(framing_problem("GET", {"0"}, false, ""));
  EXPECT_EQ(framing_problem("POST", Lengths{"18", "18"}, false, ""), "duplicate Content-Length headers");
  EXPECT_EQ(framing_problem("POST", {"18"}, true, ""), "both Content-Length and Transfer-Encoding");
  for (const char* bad : {"+18", "-1", "1 8", "", "0x10", "99999999999999999999"})
    EXPECT_EQ(framing_problem("PUT", {bad}, false, ""), "invalid Content-Length") << bad;
  EXPECT_TRUE(framing_problem("GET", {"3"}, false, ""));
  EXPECT_TRUE(framing_problem("HEAD", {}, true, ""));
  EXPECT_TRUE(framing_problem("POST", {"10"}, false, "Multipart/Form-Data; boundary=x"));
}
