#pragma once
// Shared fixtures of the registry's unit tests (server_*_test.cpp): a fresh temporary root with
// SQLite, a Store with one repo, a Router with two tokens and a ticking clock, and helpers for the
// commit and LFS wire formats.

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "kbuild/server/config.hpp"
#include "kbuild/server/router.hpp"
#include "kbuild/server/store.hpp"
#include "kbuild/util/hash.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::server::test_support {

using Json = nlohmann::json;
namespace fs = std::filesystem;

inline fs::path fresh_root() {
  static std::atomic<int> counter{0};
  auto root = fs::temp_directory_path() /
              ("kbuild-server-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  fs::remove_all(root);
  return root;
}

// Ids and tokens from the kernel's randomness (stateless, so shared by threads).
inline util::RealRandom g_random;

// A wall clock that moves one second at each reading, so every request has its own timestamp.
class TickingClock final : public util::Clock {
 public:
  explicit TickingClock(std::int64_t& unix_ms) : m_unix_ms(unix_ms) {}
  std::chrono::steady_clock::time_point now() const override { return {}; }
  std::int64_t unix_ms() const override { return m_unix_ms += 1000; }

 private:
  std::int64_t& m_unix_ms;
};

inline const std::string k_alice = "tok-alice-123456";
inline const std::string k_bob = "tok-bob-1234567";

inline std::string ndjson(std::initializer_list<Json> lines) {
  std::string out;
  for (const auto& line : lines) out += line.dump() + "\n";
  return out;
}
inline Json header_line(const std::string& summary, const std::string& parent = "") {
  Json value = {{"summary", summary}, {"description", ""}};
  if (!parent.empty()) value["parentCommit"] = parent;
  return {{"key", "header"}, {"value", value}};
}
inline Json file_line(const std::string& path, std::string_view content) {
  return {{"key", "file"},
          {"value", {{"path", path}, {"content", util::base64_encode(content)}, {"encoding", "base64"}}}};
}
inline Json delete_line(const std::string& path, bool folder = false) {
  return {{"key", folder ? "deletedFolder" : "deletedFile"}, {"value", {{"path", path}}}};
}

inline Json lfs_batch_body(const std::string& oid, std::size_t size) {
  return {{"operation", "upload"}, {"objects", {{{"oid", oid}, {"size", size}}}}};
}
inline Json lfs_file_line(const std::string& path, const std::string& oid, std::optional<std::size_t> size) {
  Json value = {{"path", path}, {"algo", "sha256"}, {"oid", oid}};
  if (size) value["size"] = *size;
  return {{"key", "lfsFile"}, {"value", value}};
}
/// `text` with every `a` and `b` replaced by "X", to compare two answers about different objects.
inline std::string blank(std::string text, const std::string& a, const std::string& b) {
  for (const auto& needle : {a, b})
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at))
      text.replace(at, needle.size(), "X");
  return text;
}
inline std::string token_of(const std::string& href) { return href.substr(href.find("token=") + 6); }

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_root = fresh_root();
    auto opened = Store::open(m_root, g_random);
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

class RouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_root = fresh_root();
    store = std::move(*Store::open(m_root, g_random));
    Config config;
    config.tokens = {{k_alice, "alice", {"org"}}, {k_bob, "bob", {}}};
    config.organizations = {{"org", true}};
    config.limits.multipart_chunk = 1024;
    config.limits.max_lfs_object = 1 << 20;
    RouterOptions options;
    options.base_url = "http://hub.test/";
    options.clock = &m_ticking_clock;
    options.tree_page_size = 3;
    router = std::make_unique<Router>(*store, config, options);
  }
  void TearDown() override {
    router.reset();
    store.reset();
    fs::remove_all(m_root);
  }

  net::HttpResponse call(const std::string& method, const std::string& target, const std::string& body = "",
                         const std::string& token = k_alice) {
    net::HttpRequest request;
    request.method = method;
    request.url = target;
    request.body = body;
    if (!token.empty()) request.headers.set("Authorization", "Bearer " + token);
    return router->handle(request);
  }
  static Json json(const net::HttpResponse& response) { return Json::parse(response.body); }
  static std::string header(const net::HttpResponse& response, const std::string& name) {
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
  net::HttpResponse commit(const std::string& api_repo, const std::string& body, const std::string& revision = "main") {
    return call("POST", api_repo + "/commit/" + revision, body);
  }

  fs::path m_root;
  std::int64_t m_clock = 1700000000000;
  TickingClock m_ticking_clock{m_clock};
  std::unique_ptr<Store> store;
  std::unique_ptr<Router> router;
};

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
  net::HttpResponse verify(const std::string& repo, const std::string& oid, std::size_t size,
                           const std::string& token) {
    return call("POST", "/" + repo + ".git/info/lfs/objects/verify", Json{{"oid", oid}, {"size", size}}.dump(), token);
  }
};

}  // namespace kbuild::server::test_support
