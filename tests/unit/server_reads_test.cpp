// Reading through Router::handle: tree listings, resolve and ranges, organisations, body limits, ref
// names that read as something else.

#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "kbuild/server/file_io.hpp"
#include "unit/server_fixtures.hpp"

using namespace kbuild;
using namespace kbuild::server;
using namespace kbuild::net;
using namespace kbuild::server::test_support;

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

  net::HttpRequest ranged;
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

TEST_F(RouterTest, OrganizationCountsLeavePrivateReposToThoseWhoMaySeeThem) {
  auto kernels = [&](const std::string& token) {
    return json(call("GET", "/api/organizations/org/overview", "", token))["numKernels"].get<int>();
  };
  const std::string create_in_org = "/api/repos/create";
  ASSERT_EQ(call("POST", create_in_org, R"({"name":"open","organization":"org","type":"kernel"})").status, 200);
  ASSERT_EQ(
      call("POST", create_in_org, R"({"name":"hidden","organization":"org","type":"kernel","private":true})").status,
      200);
  EXPECT_EQ(kernels(""), 1);       // anonymous
  EXPECT_EQ(kernels(k_bob), 1);    // a token without the organisation
  EXPECT_EQ(kernels(k_alice), 2);  // a member, who may read the private one
}

TEST_F(RouterTest, OrganizationNamesAreCaseInsensitiveLikeRepoIds) {
  ASSERT_EQ(call("POST", "/api/repos/create", R"({"name":"relu","organization":"org","type":"kernel"})").status, 200);
  auto overview = call("GET", "/api/organizations/Org/overview", "", "");
  ASSERT_EQ(overview.status, 200) << overview.body;
  EXPECT_EQ(json(overview)["name"], "org");  // the configured spelling
  EXPECT_EQ(json(overview)["numKernels"], 1);
  EXPECT_EQ(json(overview)["trustedKernelPublisher"], true);
  EXPECT_EQ(call("GET", "/api/organizations/ALICE/overview").status, 404);  // still a user
}

TEST_F(RouterTest, RepoIdsAreCaseInsensitiveAndKeepTheirSpelling) {
  create("MyKernel");
  auto info = call("GET", "/api/models/ALICE/mykernel");
  ASSERT_EQ(info.status, 200) << info.body;
  EXPECT_EQ(json(info)["id"], "alice/MyKernel");
  auto twin = call("POST", "/api/repos/create", R"({"name":"mykernel"})");
  EXPECT_EQ(twin.status, 409);
  EXPECT_NE(json(twin)["url"].get<std::string>().find("alice/MyKernel"), std::string::npos);
  EXPECT_EQ(call("DELETE", "/api/repos/delete", R"({"name":"MYKERNEL","type":"model"})").status, 200);
  EXPECT_EQ(call("GET", "/api/models/alice/MyKernel").status, 404);
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
  net::HttpRequest big;
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
  net::HttpRequest put;
  put.method = "PUT";
  Json batch = {{"operation", "upload"}, {"objects", {{{"oid", oid}, {"size", content.size()}}}}};
  net::HttpRequest batch_request;
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
  net::HttpRequest spooled;
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
    std::string decoded = *net::url_decode(name);
    EXPECT_EQ(call("POST", repo + "/tag/main", Json{{"tag", decoded}}.dump()).status, 400) << name;
  }
  EXPECT_EQ(call("POST", repo + "/branch/" + std::string(39, 'a'), "{}").status, 200);  // not an id
  // A tag may not take a branch's name, nor a branch a tag's.
  ASSERT_EQ(call("POST", repo + "/branch/dev", "{}").status, 200);
  EXPECT_EQ(call("POST", repo + "/tag/main", R"({"tag":"dev"})").status, 409);
  ASSERT_EQ(call("POST", repo + "/tag/main", R"({"tag":"v1"})").status, 200);
  EXPECT_EQ(call("POST", repo + "/branch/v1", "{}").status, 409);
  // git keeps refs as files: main/sub cannot sit next to main, nor dev next to dev/x.
  EXPECT_EQ(call("POST", repo + "/branch/main%2Fsub", "{}").status, 409);
  ASSERT_EQ(call("POST", repo + "/branch/feature%2Fx", "{}").status, 200);
  EXPECT_EQ(call("POST", repo + "/branch/feature", "{}").status, 409);
  EXPECT_EQ(call("POST", repo + "/tag/main", R"({"tag":"v1/rc"})").status, 409);
  // A name holding an escape that a second decoding turns into ".." or "/".
  EXPECT_EQ(call("POST", repo + "/branch/%252e%252e", "{}").status, 400);
  EXPECT_EQ(call("POST", repo + "/tag/main", R"({"tag":"a%2fb"})").status, 400);
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
    net::HttpRequest request;
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
