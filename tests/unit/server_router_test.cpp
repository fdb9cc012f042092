// Writing through Router::handle: repos, authentication, refs, preupload, LFS uploads, commits.

#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "kbuild/server/file_io.hpp"
#include "unit/server_fixtures.hpp"

using namespace kbuild;
using namespace kbuild::server;
using namespace kbuild::net;
using namespace kbuild::server::test_support;

// ---------------------------------------------------------------------------------------------
// Router

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
  net::HttpRequest basic;
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
  net::HttpRequest anonymous;
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
  // A trailing '/' of a write is part of the name: "x/" is no branch name (it is not branch "x").
  auto trailing = call("POST", repo + "/branch/x/", "");
  EXPECT_EQ(trailing.status, 400);
  EXPECT_NE(header(trailing, "X-Error-Message").find("\"x/\""), std::string::npos);
  EXPECT_EQ(call("GET", repo + "/revision/x").status, 404);
  EXPECT_EQ(call("POST", repo + "/tag/main/", R"({"tag":"v9"})").status, 404);  // no revision "main/"
  EXPECT_EQ(call("GET", repo + "/refs/").status, 200);                          // a read ignores it

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
  EXPECT_TRUE(href.starts_with("http://hub.test/lfs/upload/" + oid + "?session=")) << href;
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
