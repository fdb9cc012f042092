// What a client may reach and resume: objects only through repos that hold them, upload tokens,
// resumable multipart uploads, discussions and pull requests, refused paths.

#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "unit/server_fixtures.hpp"

using namespace kbuild;
using namespace kbuild::server;
using namespace kbuild::net;
using namespace kbuild::server::test_support;

// ---------------------------------------------------------------------------------------------
// Content access: an object is reachable only through a repo that received or references it

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
  // The same session (its parts kept) with a fresh token: the database holds only tokens' hashes, so
  // it cannot hand the first one out again; both open the session.
  EXPECT_NE(again["href"], first["href"]);
  EXPECT_EQ(again["header"].size(), first["header"].size());
  EXPECT_EQ((*store->find_upload(token_of(first["href"]), m_clock))->id,
            (*store->find_upload(token_of(again["href"]), m_clock))->id);
  EXPECT_EQ(net::url_without_credentials(again["href"].get<std::string>()),
            net::url_without_credentials(first["href"].get<std::string>()));
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
  net::HttpRequest json_paths;
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
