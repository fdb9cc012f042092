// The registry's pure rules (git ids, names, attributes), its configuration, the listener's guards
// and the wire parsers.

#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <set>
#include <thread>

#include "kbuild/server/file_io.hpp"
#include "kbuild/server/guard.hpp"
#include "kbuild/server/listener.hpp"
#include "kbuild/server/wire.hpp"
#include "unit/server_fixtures.hpp"

using namespace kbuild;
using namespace kbuild::server;
using namespace kbuild::net;
using namespace kbuild::server::test_support;

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
// Configuration

TEST(StoreRandomness, IdsAndTokensComeFromTheGivenSource) {
  // The Store's ids and the registry's tokens use the randomness they are given (the seam), not a
  // source of their own: two sources with the same sequence give the same ids.
  auto root = fresh_root();
  util::SequenceRandom random, expected;
  auto store = Store::open(root, random);
  ASSERT_TRUE(store) << store.error().message;
  auto created = (*store)->create_repo({RepoType::model, "alice", "m"}, false, {"initial", "", "system", 1000, {}});
  ASSERT_TRUE(created && *created);
  EXPECT_EQ((**created).object_id, util::to_hex(expected.bytes(12)));
  EXPECT_EQ(generate_token(random), "hf_" + util::base32_lower_nopad(expected.bytes(21)).substr(0, 34));
  store->reset();
  fs::remove_all(root);
}

TEST(ServerConfig, ParsesEveryTable) {
  auto config = parse_config(R"(
[server]
read = "token"
[limits]
max-lfs-object = 1000
multipart-chunk = 100
[[tokens]]
token = "hf_abcdefgh0123456789"
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
  ASSERT_NE(config->find_token("hf_abcdefgh0123456789"), nullptr);
  EXPECT_EQ(config->find_token("hf_abcdefgX"), nullptr);
  EXPECT_TRUE(config->find_token("hf_abcdefgh0123456789")->may_write("org"));
  EXPECT_TRUE(config->find_organization("org")->trusted_kernel_publisher);
  EXPECT_FALSE(config->find_organization("alice"));
}

TEST(ServerConfig, UnknownKeysAreErrorsWithLocations) {
  auto config = parse_config(
      "[server]\nread = \"public\"\nreed = 1\n\n[[tokens]]\ntoken = \"hf_abcdefgh0123456789\"\nuser = \"a\"\nrole = "
      "\"x\"\n",
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
  auto short_token = parse_config("[[tokens]]\ntoken = \"hf_12345678\"\nuser = \"a\"\n", "c");  // guessable
  ASSERT_FALSE(short_token);
  EXPECT_NE(short_token.error().message.find("20-256 printable"), std::string::npos);
  EXPECT_FALSE(parse_config("x = [", "c"));
}

TEST(ServerConfig, AddTokenAppendsAndKeepsTheFile) {
  auto root = fresh_root();
  fs::create_directories(root);
  { std::ofstream(root / "config.toml") << "# my registry\n[server]\nread = \"public\"\n"; }
  auto first = add_token(root, "alice", {"org"}, g_random);
  auto second = add_token(root, "bob", {}, g_random);
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
  EXPECT_FALSE(add_token(root, "bad name", {}, g_random));
  fs::remove_all(root);
}

TEST(ServerConfig, EditsArePrivateAtomicAndConcurrentSafe) {
  auto root = fresh_root();
  std::vector<std::thread> threads;
  std::vector<std::string> tokens(8);
  for (size_t i = 0; i < tokens.size(); ++i)
    threads.emplace_back(
        [&, i] { tokens[i] = add_token(root, "user" + std::to_string(i), {}, g_random).value_or(""); });
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
  auto store = Store::open(root, g_random);
  ASSERT_TRUE(store);
  auto token = add_token(root, "alice", {"acme"}, g_random);
  ASSERT_TRUE(token);
  RouterOptions options;
  options.config_file = root / "config.toml";
  std::vector<std::string> complaints;
  options.on_config_error = [&](const std::string& message) { complaints.push_back(message); };
  Router router(**store, *load_config(root), options);
  auto whoami = [&](const std::string& t) {
    net::HttpRequest request;
    request.url = "/api/whoami-v2";
    request.headers.set("Authorization", "Bearer " + t);
    return router.handle(request).status;
  };
  auto trusted = [&] {
    net::HttpRequest request;
    request.url = "/api/organizations/acme/overview";
    return Json::parse(router.handle(request).body).value("trustedKernelPublisher", false);
  };
  EXPECT_EQ(whoami(*token), 200);
  auto later = add_token(root, "bob", {}, g_random);
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

TEST(ServerGuard, ARequestThroughATrustedProxyIsTheClientsItForwards) {
  const std::vector<std::string> proxies = {"127.0.0.1", "10.0.0.5"};
  EXPECT_EQ(forwarded_client("192.0.2.7", "203.0.113.9", proxies), "192.0.2.7");  // not a proxy: ignored
  EXPECT_EQ(forwarded_client("127.0.0.1", "203.0.113.9", proxies), "203.0.113.9");
  EXPECT_EQ(forwarded_client("127.0.0.1", "", proxies), "127.0.0.1");
  // Read from the right: what the client wrote to the left of its proxy chain is not believed.
  EXPECT_EQ(forwarded_client("127.0.0.1", "6.6.6.6, 203.0.113.9, 10.0.0.5", proxies), "203.0.113.9");
  EXPECT_EQ(forwarded_client("127.0.0.1", "203.0.113.9, not-an-address", proxies), "127.0.0.1");
  EXPECT_EQ(forwarded_client("::ffff:127.0.0.1", " 2001:DB8::1 ", proxies), "2001:db8::1");
  EXPECT_EQ(canonical_ip("::ffff:10.0.0.5"), "10.0.0.5");
  EXPECT_FALSE(canonical_ip("localhost"));

  const std::string secret = "proxy-secret = \"" + std::string(40, 's') + "\"\n";
  auto config = parse_config("[server]\ntrusted-proxies = [\"127.0.0.1\", \"::1\"]\n" + secret, "c");
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->trusted_proxies, (std::vector<std::string>{"127.0.0.1", "::1"}));
  EXPECT_EQ(config->proxy_secret, std::string(40, 's'));
  // Without a secret any client on a proxy's host could name any client: refused, with the fix.
  auto no_secret = parse_config("[server]\ntrusted-proxies = [\"127.0.0.1\"]\n", "c");
  ASSERT_FALSE(no_secret);
  EXPECT_NE(no_secret.error().message.find("needs server.proxy-secret"), std::string::npos);
  auto short_secret = parse_config("[server]\ntrusted-proxies = [\"127.0.0.1\"]\nproxy-secret = \"short\"\n", "c");
  ASSERT_FALSE(short_secret);
  EXPECT_NE(short_secret.error().message.find("32 to 256 printable"), std::string::npos);
  auto bad = parse_config("[server]\ntrusted-proxies = [\"nginx\", 3]\n" + secret, "c");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("c:2:20"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("c:2:29"), std::string::npos) << bad.error().message;
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
