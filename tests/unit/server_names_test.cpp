// Names and shapes the registry refuses before it stores or parses anything: paths a clone could
// not check out (path_rules.hpp) and JSON nested or sized to exhaust memory (wire_json.hpp); and idle
// keep-alive connections parked off the workers (idle_connections.hpp).

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <vector>

#include "kbuild/server/guard.hpp"
#include "kbuild/server/idle_connections.hpp"
#include "kbuild/server/path_rules.hpp"
#include "kbuild/server/wire_json.hpp"
#include "unit/server_fixtures.hpp"

using namespace kbuild;
using namespace kbuild::server;
using namespace kbuild::server::test_support;

TEST(ServerWire, JsonShapeIsBoundedBeforeParsing) {
  using wire_json::json_shape_problem;
  EXPECT_FALSE(json_shape_problem(R"({"paths": ["a", "b"], "x": [[[[1]]]], "s": "[[[[[[,,,,"})"));
  EXPECT_FALSE(json_shape_problem(std::string(64, '[') + std::string(64, ']')));
  auto deep = json_shape_problem(std::string(65, '['));
  ASSERT_TRUE(deep);
  EXPECT_NE(deep->find("deeper than 64"), std::string::npos);
  std::string many = "[" + std::string(wire_json::k_max_json_values, ',') + "]";
  EXPECT_NE(json_shape_problem(many).value_or("").find("more than 1000000 values"), std::string::npos);
  EXPECT_FALSE(json_shape_problem("\"" + std::string(2'000'000, ',') + "\""));  // inside a string: no values
}

TEST_F(RouterTest, DeepOrHugeJsonIsRefusedBeforeItIsParsed) {
  create("m");
  const std::string repo = "/api/models/alice/m";
  net::HttpRequest paths;  // anonymous, as JSON
  paths.method = "POST";
  paths.url = repo + "/paths-info/main";
  paths.body = std::string(1 << 20, '[');
  paths.headers.set("Content-Type", "application/json");
  auto deep = router->handle(paths);
  EXPECT_EQ(deep.status, 400);
  EXPECT_NE(json(deep)["error"].get<std::string>().find("deeper than 64"), std::string::npos);
  auto line = commit(repo, ndjson({header_line("x")}) + std::string(1 << 20, '[') + "\n");
  EXPECT_EQ(line.status, 400);
  EXPECT_NE(json(line)["error"].get<std::string>().find("commit line 2: JSON nested deeper"), std::string::npos);
}

TEST(PathRules, WhatGitOrACloneWouldRefuseOrConflate) {
  for (const char* good : {"a.txt", "build/torch-cpu/_ops.py", "caf\xc3\xa9.txt", "a b/c", ".gitattributes", "x.git",
                           "console.txt", "com10", "\xe6\x97\xa5\xe6\x9c\xac.md"})
    EXPECT_FALSE(path_problem(good)) << good << ": " << *path_problem(good);
  for (const char* bad : {".GIT/config",
                          "a/.Git/x",
                          ".git./x",
                          ".git /x",
                          "GIT~1/x",
                          ".g\xe2\x80\x8cit/x",
                          "cafe\xcc\x81.txt",  // NFD
                          "abc\xe2\x80\xaetxt.exe",
                          "zero\xe2\x80\x8bwidth",  // U+202E, U+200B
                          "CON",
                          "con.txt",
                          "sub/Nul.json",
                          "LPT1",
                          "com3.py",
                          "a./b",
                          "b ",
                          "a:b",
                          "q?",
                          "x\x01y",
                          "\xff\xfe"}) {
    auto problem = path_problem(bad);
    EXPECT_TRUE(problem) << bad;
  }
  EXPECT_NE(path_problem("cafe\xcc\x81.txt")->find("NFC"), std::string::npos);
  EXPECT_NE(path_problem("a\xe2\x80\xae"
                         "b")
                ->find("U+202E"),
            std::string::npos);
  EXPECT_EQ(case_fold("README.md"), case_fold("readme.MD"));
  EXPECT_EQ(case_collision({"a.txt", "b.txt"}), std::nullopt);
  EXPECT_EQ(case_collision({"A.txt", "b", "a.txt"}), (std::pair<std::string, std::string>{"A.txt", "a.txt"}));
  EXPECT_EQ(case_collision({"Docs/x", "docs/y"}), (std::pair<std::string, std::string>{"Docs", "docs"}));
  EXPECT_EQ(case_collision({"docs/x", "docs/y", "docs"}), std::nullopt);  // the same folder (a D/F clash is elsewhere)
  EXPECT_TRUE(case_collision({"\xc3\x84.txt", "\xc3\xa4.txt"}));          // Ä and ä: one name on macOS and Windows
  EXPECT_FALSE(case_collision({"STRASSE",
                               "stra\xc3\x9f"
                               "e"}));  // ß and ss: two names everywhere
}

TEST_F(RouterTest, CommitsRefuseNamesAClonesFileSystemWouldRefuseOrConflate) {
  create("m");
  const std::string repo = "/api/models/alice/m";
  ASSERT_EQ(commit(repo, ndjson({header_line("one"), file_line("A.txt", "a")})).status, 200);
  auto twin = commit(repo, ndjson({header_line("two"), file_line("a.txt", "b")}));
  EXPECT_EQ(twin.status, 400);
  EXPECT_NE(json(twin)["error"].get<std::string>().find("A.txt and a.txt differ only in case"), std::string::npos);
  auto dotgit = commit(repo, ndjson({header_line("three"), file_line(".GIT/config", "x")}));
  EXPECT_EQ(dotgit.status, 400);
  EXPECT_NE(json(dotgit)["error"].get<std::string>().find(".git as some file systems read it"), std::string::npos);
  EXPECT_EQ(commit(repo, ndjson({header_line("four"), file_line("cafe\xcc\x81", "x")})).status, 400);
  auto preupload = call("POST", repo + "/preupload/main", R"({"files":[{"path":"CON.txt","size":1,"sample":""}]})");
  EXPECT_EQ(preupload.status, 400);
  EXPECT_EQ(commit(repo, ndjson({header_line("five"), file_line("ok/b.txt", "x")})).status, 200);
}

TEST(ServerGuard, TokenFailuresAreLimitedPerAddressAndWindow) {
  TokenFailureLimiter limiter(3, 60'000, 2);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(limiter.retry_after_ms("a", 1000), 0);
    limiter.failed("a", 1000);
  }
  EXPECT_EQ(limiter.retry_after_ms("a", 1000), 60'000);
  EXPECT_EQ(limiter.retry_after_ms("a", 31'000), 30'000);
  EXPECT_EQ(limiter.retry_after_ms("b", 31'000), 0);  // another address
  EXPECT_EQ(limiter.retry_after_ms("a", 61'000), 0);  // the window ended
  limiter.failed("a", 61'000);
  EXPECT_EQ(limiter.retry_after_ms("a", 61'000), 0);  // a new window with one failure
  limiter.failed("b", 62'000);
  limiter.failed("c", 63'000);  // full (2): the oldest window ("a") goes
  for (int i = 0; i < 3; ++i) limiter.failed("c", 63'000);
  EXPECT_GT(limiter.retry_after_ms("c", 63'000), 0);
}

TEST_F(RouterTest, GuessingTokensFromOneAddressIsRefusedForAMinute) {
  auto attempt = [&](const std::string& client, const std::string& token) {
    net::HttpRequest request;
    request.method = "GET";
    request.url = "/api/whoami-v2";
    request.client = client;
    request.headers.set("Authorization", "Bearer " + token);
    return router->handle(request);
  };
  for (int i = 0; i < 20; ++i) ASSERT_EQ(attempt("10.0.0.1", "hf_guess_" + std::to_string(i)).status, 401);
  auto refused = attempt("10.0.0.1", "hf_guess_21");
  EXPECT_EQ(refused.status, 429);
  EXPECT_FALSE(header(refused, "Retry-After").empty());
  EXPECT_EQ(attempt("10.0.0.1", k_alice).status, 429);  // even a right token, until the minute ends
  EXPECT_EQ(attempt("10.0.0.2", "hf_guess_x").status, 401);
  EXPECT_EQ(attempt("10.0.0.2", k_alice).status, 200);
}

TEST_F(RouterTest, RightsFollowTheRepositorysOwnSpellingNotTheUrls) {
  // A token whose namespace differs from the organisation's only in case.
  const std::string carol = "tok-carol-1234567890";
  Config config;
  config.tokens = {{k_alice, "alice", {"org"}}, {k_bob, "bob", {}}, {carol, "carol", {"ORG"}}};
  config.organizations = {{"org", true}};
  RouterOptions options;
  options.clock = &m_ticking_clock;
  router = std::make_unique<Router>(*store, config, options);
  ASSERT_EQ(call("POST", "/api/repos/create", R"({"name":"secret","organization":"org","private":true})").status, 200);
  ASSERT_EQ(call("POST", "/api/repos/create", R"({"name":"open","organization":"org"})").status, 200);
  EXPECT_EQ(call("GET", "/api/models/ORG/secret", "", carol).status, 404);  // private: not visible
  EXPECT_EQ(call("GET", "/api/models/ORG/open", "", carol).status, 200);    // public: readable
  auto write = call("POST", "/api/models/ORG/open/commit/main", ndjson({header_line("x"), file_line("b", "b")}), carol);
  EXPECT_EQ(write.status, 403);
  EXPECT_EQ(call("DELETE", "/api/repos/delete", R"({"name":"open","organization":"ORG","type":"model"})", carol).status,
            403);
  EXPECT_EQ(call("GET", "/api/models/org/open").status, 200);  // still there
}

// ---------------------------------------------------------------------------------------------
// Idle keep-alive connections parked off the workers (real sockets: a socketpair per connection)

TEST(IdleConnections, AParkedConnectionComesBackWhenItsRequestArrivesAndEndsWhenIdleTooLong) {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<int> ready, expired;
  auto record = [&](std::vector<int>& into) {
    return [&](IdleConnection c) {
      std::lock_guard lock(mutex);
      into.push_back(c.sock);
      changed.notify_all();
    };
  };
  IdleConnections idle(record(ready), record(expired));
  int talking[2], silent[2], late[2];
  for (int* pair : {talking, silent, late}) ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  auto now = std::chrono::steady_clock::now();
  idle.park({talking[0], "a", false, 5, now + std::chrono::seconds(30)});
  idle.park({silent[0], "b", false, 5, now + std::chrono::milliseconds(150)});
  idle.park({late[0], "c", false, 5, now + std::chrono::seconds(30)});
  EXPECT_EQ(idle.parked(), 3u);
  ASSERT_EQ(::write(talking[1], "GET", 3), 3);
  {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(
        changed.wait_for(lock, std::chrono::seconds(5), [&] { return ready.size() == 1 && expired.size() == 1; }));
  }
  EXPECT_EQ(ready, std::vector<int>{talking[0]});   // its request arrived: back to a worker
  EXPECT_EQ(expired, std::vector<int>{silent[0]});  // idle past its deadline: ended
  idle.stop();                                      // the server stops: what is still parked is ended
  EXPECT_EQ(expired, (std::vector<int>{silent[0], late[0]}));
  idle.park({talking[0], "a", false, 5, now + std::chrono::seconds(30)});  // after stop: ended at once
  EXPECT_EQ(expired.back(), talking[0]);
  EXPECT_EQ(ready.size(), 1u);
  for (int* pair : {talking, silent, late}) ::close(pair[0]), ::close(pair[1]);
}
