#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <deque>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "kbuild/hub/ca_bundle.hpp"
#include "kbuild/hub/client.hpp"
#include "kbuild/hub/commit_plan.hpp"
#include "kbuild/hub/curl_transport.hpp"
#include "kbuild/hub/retry.hpp"
#include "kbuild/hub/token.hpp"
#include "kbuild/hub/url_download.hpp"
#include "support/mem_fs.hpp"

using namespace kbuild;
using namespace kbuild::hub;
using namespace kbuild::net;

TEST(HubToken, ResolutionOrderFollowsHuggingfaceHub) {
  fakes::MemFileSystem fs;
  fs.put("/home/u/.cache/huggingface/token", "hf_file\r\n");
  fs.put("/hf/token", "  hf_home  \n");
  fs.put("/custom", "hf_path");
  EXPECT_EQ(resolve_token({{"HOME", "/home/u"}}, fs)->value, "hf_file");
  EXPECT_EQ(resolve_token({{"HOME", "/home/u"}, {"HF_HOME", "/hf"}}, fs)->value, "hf_home");
  EXPECT_EQ(resolve_token({{"HF_HOME", "/hf"}, {"HF_TOKEN_PATH", "/custom"}}, fs)->value, "hf_path");
  auto env = resolve_token({{"HF_TOKEN", "hf_env"}, {"HF_HOME", "/hf"}}, fs);
  EXPECT_EQ(env->value, "hf_env");
  EXPECT_EQ(env->origin, "HF_TOKEN");
  EXPECT_EQ(resolve_token({{"HUGGING_FACE_HUB_TOKEN", "hf_legacy"}}, fs)->value, "hf_legacy");
  fs.put("/empty", "\n");
  EXPECT_FALSE(resolve_token({{"HF_TOKEN_PATH", "/empty"}}, fs));
  EXPECT_EQ(resolve_endpoint(std::nullopt, {{"HF_ENDPOINT", "http://127.0.0.1:8080/"}}), "http://127.0.0.1:8080");
  EXPECT_EQ(resolve_endpoint(std::nullopt, {}), "https://huggingface.co");
  EXPECT_EQ(resolve_endpoint(std::string("http://x"), {{"HF_ENDPOINT", "http://y"}}), "http://x");
}

TEST(HubToken, RedactionHidesTheToken) {
  Token token{"hf_secret123", "HF_TOKEN"};
  EXPECT_EQ(redact("Bearer hf_secret123 and hf_secret123", token), "Bearer hf_*** and hf_***");
  EXPECT_EQ(redact("nothing here", std::nullopt), "nothing here");
}

namespace {
std::expected<HttpResponse, TransportError> status(int code, std::map<std::string, std::string> headers = {}) {
  HttpResponse response;
  response.status = code;
  for (auto& [k, v] : headers) response.headers.set(k, v);
  return response;
}
}  // namespace

TEST(HubRetry, RetriesTransientFailuresWithBackoff) {
  RetryPolicy policy;
  EXPECT_EQ(retry_delay(policy, 0, status(503)), 1.0);
  EXPECT_EQ(retry_delay(policy, 3, status(502)), 8.0);
  EXPECT_EQ(retry_delay(policy, 4, status(500)), 8.0);
  EXPECT_FALSE(retry_delay(policy, 5, status(500)));  // 6 attempts in all
  EXPECT_EQ(retry_delay(policy, 1, std::unexpected(TransportError{"reset", false})), 2.0);
  // A request that timed out is tried once more, not five times: a silent Hub is exit 4 in seconds.
  EXPECT_EQ(retry_delay(policy, 0, std::unexpected(TransportError{"timeout", true}), true), 1.0);
  EXPECT_FALSE(retry_delay(policy, 1, std::unexpected(TransportError{"timeout", true}), true));
  // A file transfer (no deadline) that stalled is retried like any transport fault.
  EXPECT_EQ(retry_delay(policy, 1, std::unexpected(TransportError{"stalled", true})), 2.0);
  EXPECT_EQ(retry_delay(policy, 4, std::unexpected(TransportError{"reset", false})), 8.0);
  // A connection that cannot be made at all is retried twice only.
  EXPECT_EQ(retry_delay(policy, 1, std::unexpected(TransportError{"refused", false, true})), 2.0);
  EXPECT_FALSE(retry_delay(policy, 2, std::unexpected(TransportError{"refused", false, true})));
  EXPECT_FALSE(retry_delay(policy, 0, status(404)));
  EXPECT_FALSE(retry_delay(policy, 0, status(401)));
  EXPECT_FALSE(retry_delay(policy, 0, status(200)));
}

TEST(HubRetry, HonoursRetryAfterAndRateLimit) {
  RetryPolicy policy;
  EXPECT_EQ(retry_delay(policy, 0, status(429, {{"Retry-After", "3"}})), 4.0);
  EXPECT_EQ(retry_delay(policy, 0, status(429, {{"RateLimit", "\"api\";r=0;t=12"}})), 13.0);
  EXPECT_EQ(retry_delay(policy, 0, status(503, {{"Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT"}})), 1.0);
  // A server asking for more than max_server_wait_seconds is reported, not waited on.
  EXPECT_EQ(retry_delay(policy, 0, status(429, {{"Retry-After", "600"}})), 601.0);
  EXPECT_FALSE(retry_delay(policy, 0, status(429, {{"Retry-After", "601"}})));
  EXPECT_FALSE(retry_delay(policy, 0, status(429, {{"RateLimit", "\"api\";r=0;t=86400"}})));
  const std::string forever(400, '9');  // past what a double holds: never an exception
  EXPECT_FALSE(retry_delay(policy, 0, status(503, {{"Retry-After", forever}})));
  EXPECT_FALSE(retry_delay(policy, 0, status(429, {{"RateLimit", "\"api\";r=0;t=" + forever}})));
  EXPECT_EQ(retry_delay(policy, 0, status(503, {{"Retry-After", "1e300"}})), 1.0);  // not delay-seconds: ignored
  EXPECT_EQ(long_wait_hint(policy, *status(429, {{"Retry-After", "3600"}})).substr(0, 40),
            "the server asks to wait 3600 s before th");
  EXPECT_NE(long_wait_hint(policy, *status(503, {{"Retry-After", forever}})).find("wait forever"), std::string::npos);
  EXPECT_EQ(long_wait_hint(policy, *status(429, {{"Retry-After", "30"}})), "");
  EXPECT_EQ(long_wait_hint(policy, *status(404, {{"Retry-After", "3600"}})), "");  // not retried anyway
  EXPECT_EQ(retry_delay(policy, 0, status(429, {{"Retry-After", "0000000000005"}})), 6.0);
}

TEST(HubUpload, TheSessionOfAnUploadURLOutlivesItsCredentials) {
  EXPECT_EQ(net::url_without_credentials("http://h/lfs/upload/ab?session=12&token=secret"),
            "http://h/lfs/upload/ab?session=12");
  EXPECT_EQ(net::url_without_credentials("http://h/lfs/upload/ab?token=one"), "http://h/lfs/upload/ab");
  EXPECT_EQ(net::url_without_credentials("https://s3/x?uploadId=7&X-Amz-Signature=s&Expires=9&&Signature=z&part=2"),
            "https://s3/x?uploadId=7&part=2");
  EXPECT_EQ(net::url_without_credentials("http://h/plain"), "http://h/plain");
  EXPECT_NE(net::url_without_credentials("http://h/u?session=1&token=a"),
            net::url_without_credentials("http://h/u?session=2&token=a"));
}

TEST(HubPlan, AddsChangedDeletesStaleInsideOwnedPrefixesOnly) {
  std::vector<LocalFile> local = {{"build/v1/a.py", "/x/a.py", 3, "sa", "ga", ""},
                                  {"build/v1/lib.so", "/x/lib.so", 10, "slib", "glib", ""},
                                  {"build/v1/new.py", "/x/new.py", 1, "sn", "gn", ""}};
  std::vector<RemoteFile> remote = {{"build/v1/a.py", "ga", 3, std::nullopt},
                                    {"build/v1/lib.so", "pointer-oid", 10, std::string("slib-old")},
                                    {"build/v1/stale.py", "gs", 1, std::nullopt},
                                    {"build/v2/other.py", "go", 1, std::nullopt},
                                    {".gitattributes", "gg", 1, std::nullopt}};
  auto plan = plan_commit(local, remote, {"build/v1/"});
  ASSERT_EQ(plan.adds.size(), 2u);
  EXPECT_EQ(plan.adds[0].path, "build/v1/lib.so");  // LFS content changed
  EXPECT_EQ(plan.adds[1].path, "build/v1/new.py");
  EXPECT_EQ(plan.deletes, std::vector<std::string>{"build/v1/stale.py"});
  EXPECT_EQ(plan.unchanged, std::vector<std::string>{"build/v1/a.py"});
  // Identical LFS content is unchanged, whatever the pointer's blob id.
  remote[1].lfs_sha256 = "slib";
  EXPECT_EQ(plan_commit(local, remote, {"build/v1/"}).adds.size(), 1u);
  // A new branch owns all of build/.
  EXPECT_EQ(plan_commit(local, remote, {"build/", "build/v1/"}).deletes.size(), 2u);
}

TEST(HubPlan, TagRules) {
  EXPECT_EQ(tag_major("v1.0.0"), 1);
  EXPECT_EQ(tag_major("v12.3.40"), 12);
  EXPECT_EQ(tag_major("v0.1.0"), 0);
  for (const char* bad : {"1.0.0", "v1.0", "v1.0.0-rc1", "v01.0.0", "v1.0.0 ", "vx.y.z", ""})
    EXPECT_FALSE(tag_major(bad)) << bad;
}

TEST(HubPlan, NdjsonCommitPayload) {
  std::string body = encode_commit("Upload", "", std::string("abc"),
                                   {{CommitOp::Kind::add_inline, "a.py", "aGk=", "", 0},
                                    {CommitOp::Kind::add_lfs, "lib.so", "", "ff", 12},
                                    {CommitOp::Kind::remove, "old.py", "", "", 0}});
  EXPECT_EQ(body,
            "{\"key\":\"header\",\"value\":{\"summary\":\"Upload\",\"description\":\"\",\"parentCommit\":\"abc\"}}\n"
            "{\"key\":\"file\",\"value\":{\"content\":\"aGk=\",\"path\":\"a.py\",\"encoding\":\"base64\"}}\n"
            "{\"key\":\"lfsFile\",\"value\":{\"path\":\"lib.so\",\"algo\":\"sha256\",\"oid\":\"ff\",\"size\":12}}\n"
            "{\"key\":\"deletedFile\",\"value\":{\"path\":\"old.py\"}}\n");
  EXPECT_EQ(encode_commit("s", "d", std::nullopt, {}).find("parentCommit"), std::string::npos);
}

namespace {
// Answers requests from a queue and records them.
class ScriptedTransport final : public HttpTransport {
 public:
  std::deque<std::expected<HttpResponse, TransportError>> answers;
  std::vector<HttpRequest> requests;
  std::expected<HttpResponse, TransportError> send(const HttpRequest& request) override {
    requests.push_back(request);
    auto answer = answers.front();
    answers.pop_front();
    return answer;
  }
};
}  // namespace

TEST(HubClientTest, RetriesThenSucceedsAndSleepsAsTold) {
  ScriptedTransport transport;
  transport.answers = {status(503, {{"Retry-After", "2"}}), std::unexpected(TransportError{"reset", false}),
                       status(200)};
  transport.answers.back()->body = R"({"branches":[{"name":"main","targetCommit":"c1"}],"tags":[],"converts":[]})";
  std::vector<double> slept;
  HubClient client(transport, "http://hub", Token{"hf_tok", "HF_TOKEN"}, {}, [&](double s) { slept.push_back(s); });
  auto refs = client.list_refs({"kernel", "org/k"});
  ASSERT_TRUE(refs) << refs.error().message;
  EXPECT_EQ(refs->branches.at("main"), "c1");
  EXPECT_EQ(slept, (std::vector<double>{3.0, 2.0}));
  EXPECT_EQ(transport.requests[0].url, "http://hub/api/kernels/org/k/refs");
  EXPECT_EQ(*transport.requests[0].headers.get("authorization"), "Bearer hf_tok");
}

TEST(HubClientTest, AServerAskingForALongerWaitIsReportedAtOnceWithWhatItAsked) {
  ScriptedTransport transport;
  transport.answers = {status(429, {{"RateLimit", "\"api\";r=0;t=3600"}})};
  std::vector<double> slept;
  HubClient client(transport, "http://hub", std::nullopt, {}, [&](double s) { slept.push_back(s); });
  auto refs = client.list_refs({"kernel", "org/k"});
  ASSERT_FALSE(refs);
  EXPECT_TRUE(slept.empty());
  EXPECT_EQ(transport.requests.size(), 1u);
  EXPECT_NE(refs.error().message.find("answered 429"), std::string::npos) << refs.error().message;
  EXPECT_NE(refs.error().hint.find("asks to wait 3600 s"), std::string::npos) << refs.error().hint;
}

TEST(HubClientTest, ErrorsAreSpecificAndNeverShowTheToken) {
  ScriptedTransport transport;
  auto unauthorized = status(401, {{"X-Error-Message", "Invalid credentials in Authorization header hf_tok"}});
  transport.answers = {unauthorized};
  std::vector<std::string> logged;
  HubClient client(transport, "http://hub", Token{"hf_tok", "/home/u/.cache/huggingface/token"}, {}, {},
                   [&](const std::string& line) { logged.push_back(line); });
  auto result = client.create_repo({"kernel", "org/k"}, false, true);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ExitCode::network);
  EXPECT_NE(result.error().message.find("401 Unauthorized"), std::string::npos);
  EXPECT_EQ(result.error().message.find("hf_tok"), std::string::npos);
  EXPECT_NE(result.error().hint.find("/home/u/.cache/huggingface/token"), std::string::npos);
  for (const auto& line : logged) EXPECT_EQ(line.find("hf_tok"), std::string::npos) << line;

  transport.answers = {status(404, {{"X-Error-Code", "RepoNotFound"}})};
  auto missing = client.list_tree({"kernel", "org/k"}, "v1");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("repository not found"), std::string::npos);
  transport.answers = {status(412)};
  auto moved = client.commit({"kernel", "org/k"}, "v1", "{}\n", false);
  ASSERT_FALSE(moved);
  EXPECT_NE(moved.error().message.find("412"), std::string::npos);
  EXPECT_EQ(moved.error().kind, ErrorKind::http);  // what publish's re-planning decides on
  EXPECT_EQ(moved.error().http_status, 412);
  transport.answers = {std::unexpected(TransportError{"refused", false, true}),
                       std::unexpected(TransportError{"refused", false, true}),
                       std::unexpected(TransportError{"refused", false, true})};
  HubClient quick(transport, "http://hub", Token{"hf_tok", "HF_TOKEN"}, {}, [](double) {});
  auto unreachable = quick.list_refs({"kernel", "org/k"});
  ASSERT_FALSE(unreachable);
  EXPECT_EQ(unreachable.error().kind, ErrorKind::transport);
  EXPECT_EQ(unreachable.error().code, ExitCode::network);
}

TEST(HubClientTest, CreateRepoAcceptsExistingAndTreeFollowsPagination) {
  ScriptedTransport transport;
  transport.answers = {status(409)};
  HubClient client(transport, "http://hub", Token{"t", "HF_TOKEN"});
  EXPECT_EQ(*client.create_repo({"kernel", "org/k"}, false, true), "http://hub/kernels/org/k");
  auto body = nlohmann::json::parse(transport.requests[0].body);
  EXPECT_EQ(body["name"], "k");
  EXPECT_EQ(body["organization"], "org");
  EXPECT_EQ(body["type"], "kernel");
  auto page1 = status(200, {{"Link", "<http://hub/api/kernels/org/k/tree/v1?recursive=true&cursor=2>; rel=\"next\""}});
  page1->body = R"([{"type":"file","path":"a","oid":"o1","size":1},{"type":"directory","path":"build","oid":"t"}])";
  auto page2 = status(200);
  page2->body =
      R"([{"type":"file","path":"build/x.so","oid":"o2","size":5,"lfs":{"oid":"s2","size":5,"pointerSize":130}}])";
  transport.answers = {page1, page2};
  auto tree = client.list_tree({"kernel", "org/k"}, "v1");
  ASSERT_TRUE(tree);
  ASSERT_EQ(tree->size(), 2u);
  EXPECT_EQ(*(*tree)[1].lfs_sha256, "s2");
  EXPECT_EQ(transport.requests[2].url, "http://hub/api/kernels/org/k/tree/v1?recursive=true&cursor=2");
}

TEST(HubClientTest, PreuploadReadsTheServersModes) {
  ScriptedTransport transport;
  auto answer = status(200);
  answer->body =
      R"({"files":[{"path":"a.so","uploadMode":"lfs","shouldIgnore":false},{"path":"b.py","uploadMode":"regular","shouldIgnore":false}]})";
  transport.answers = {answer};
  HubClient client(transport, "http://hub", Token{"t", "HF_TOKEN"});
  auto dir = std::filesystem::temp_directory_path() / "kbuild-preupload-test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "a.so") << std::string(
      "\x7f"
      "ELF\0\0",
      6);
  std::ofstream(dir / "b.py") << "print()\n";
  util::RealFileSystem real;
  auto a = describe_file(real, dir / "a.so", "a.so");
  auto b = describe_file(real, dir / "b.py", "b.py");
  ASSERT_TRUE(a && b);
  auto modes = client.preupload({"kernel", "org/k"}, "v1", {*a, *b});
  ASSERT_TRUE(modes) << modes.error().message;
  ASSERT_EQ(modes->size(), 2u);
  EXPECT_EQ(modes->at("a.so"), UploadMode::lfs);
  EXPECT_EQ(modes->at("b.py"), UploadMode::regular);
  auto sent = nlohmann::json::parse(transport.requests[0].body);
  EXPECT_EQ(sent["files"][0]["size"], 6);
  std::filesystem::remove_all(dir);
}

TEST(HubClientTest, ConsumerCallsReadFoldersOrganisationsAndFiles) {
  ScriptedTransport transport;
  HubClient client(transport, "http://hub", Token{"hf_tok", "HF_TOKEN"}, {}, [](double) {});
  auto listing = status(200);
  listing->body =
      R"([{"type":"directory","path":"build/torch-cpu","oid":"t"},{"type":"file","path":"build/x","oid":"o"}])";
  transport.answers = {listing, status(404, {{"X-Error-Code", "EntryNotFound"}}),
                       status(404, {{"X-Error-Code", "RevisionNotFound"}})};
  auto entries = client.list_folder({"kernel", "org/k"}, "v1", "build");
  ASSERT_TRUE(entries);
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_TRUE((*entries)[0].is_dir);
  EXPECT_EQ(transport.requests[0].url, "http://hub/api/kernels/org/k/tree/v1/build?expand=false");
  auto empty = client.list_folder({"kernel", "org/k"}, "v1", "build");
  ASSERT_TRUE(empty);  // no build/ folder: nothing to list
  EXPECT_TRUE(empty->empty());
  EXPECT_FALSE(client.list_folder({"kernel", "org/k"}, "v9", "build"));  // no such revision: an error

  auto overview = status(200);
  overview->body = R"({"name":"org","trustedKernelPublisher":true})";
  transport.answers = {overview, status(404)};
  EXPECT_TRUE((*client.organization_overview("org"))->trusted_kernel_publisher);
  EXPECT_FALSE(*client.organization_overview("user"));
}

TEST(HubClientTest, DownloadsFollowRedirectsWithoutLeakingTheToken) {
  ScriptedTransport transport;
  HubClient client(transport, "http://hub", Token{"hf_tok", "HF_TOKEN"}, {}, [](double) {});
  auto redirect = status(302, {{"Location", "http://cdn.example/blob?sig=1"},
                               {"X-Linked-Etag", "\"" + std::string(64, 'e') + "\""},
                               {"X-Repo-Commit", std::string(40, 'c')}});
  auto body = status(200);
  body->file_bytes = 5;  // what a real transport reports after writing response_file
  transport.answers = {redirect, body};
  auto dir = std::filesystem::path("/downloads");
  // The client reports the Hub's own headers (before the redirect) and the size the transport wrote.
  auto file = client.download_file({"kernel", "org/k"}, "v1", "build/a b.so", dir / "f");
  ASSERT_TRUE(file) << file.error().message;
  EXPECT_EQ(file->size, 5u);
  EXPECT_EQ(file->etag, std::string(64, 'e'));
  EXPECT_EQ(file->commit, std::string(40, 'c'));
  ASSERT_EQ(transport.requests.size(), 2u);
  EXPECT_EQ(transport.requests[0].url, "http://hub/kernels/org/k/resolve/v1/build/a%20b.so");
  EXPECT_EQ(*transport.requests[0].headers.get("authorization"), "Bearer hf_tok");
  EXPECT_EQ(transport.requests[1].url, "http://cdn.example/blob?sig=1");
  EXPECT_FALSE(transport.requests[1].headers.has("authorization"));  // another host never sees the token
  EXPECT_EQ(transport.requests[1].response_file, dir / "f");
}

TEST(UrlDownload, FollowsRedirectsRetriesAndReportsFailures) {
  auto ok = [](std::uint64_t bytes) {
    HttpResponse response;
    response.status = 200;
    response.file_bytes = bytes;
    return std::expected<HttpResponse, TransportError>(response);
  };
  std::vector<double> slept;
  UrlDownloadOptions options;
  options.sleep = [&](double seconds) { slept.push_back(seconds); };
  ScriptedTransport transport;
  transport.answers = {status(302, {{"Location", "https://codeload.example/zip/v4.0.0"}}), status(503),
                       status(301, {{"Location", "/final.zip"}}), ok(1234)};
  auto size = download_url(transport, "https://github.example/archive/v4.0.0.zip", "/tmp/x.zip", options);
  ASSERT_TRUE(size) << size.error().message;
  EXPECT_EQ(*size, 1234u);
  ASSERT_EQ(transport.requests.size(), 4u);
  EXPECT_EQ(transport.requests[1].url, "https://codeload.example/zip/v4.0.0");
  EXPECT_EQ(transport.requests[3].url, "https://codeload.example/final.zip");
  EXPECT_EQ(transport.requests[3].response_file, std::filesystem::path("/tmp/x.zip"));
  EXPECT_EQ(slept, std::vector<double>{1.0});

  transport.answers = {status(302, {{"Location", "//mirror.example/v4.zip"}}), ok(7)};
  ASSERT_TRUE(download_url(transport, "https://github.example/a.zip", "/tmp/x.zip", options));
  EXPECT_EQ(transport.requests.back().url, "https://mirror.example/v4.zip");  // keeps the scheme
  transport.answers = {status(302, {{"Location", "http://mirror.example/v4.zip"}})};
  auto downgrade = download_url(transport, "https://github.example/a.zip", "/tmp/x.zip", options);
  ASSERT_FALSE(downgrade);
  EXPECT_NE(downgrade.error().message.find("from https to plain http"), std::string::npos);

  transport.answers = {status(404)};
  auto missing = download_url(transport, "https://github.example/archive/v9.zip", "/tmp/x.zip", options);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("HTTP 404"), std::string::npos);
  EXPECT_EQ(missing.error().code, kbuild::ExitCode::network);  // docs/cli.md: network and server errors are 4

  transport.answers = {status(302, {{"Location", "file:///etc/passwd"}})};
  EXPECT_FALSE(download_url(transport, "https://github.example/a.zip", "/tmp/x.zip", options));
  auto ftp = download_url(transport, "ftp://example/a.zip", "/tmp/x.zip", options);
  ASSERT_FALSE(ftp);
  EXPECT_EQ(ftp.error().code, kbuild::ExitCode::usage);  // a URL kbuild cannot use at all
  transport.answers.clear();
  for (int i = 0; i < 6; ++i) transport.answers.push_back(status(302, {{"Location", "/again"}}));
  auto loop = download_url(transport, "https://github.example/a.zip", "/tmp/x.zip", options);
  ASSERT_FALSE(loop);
  EXPECT_NE(loop.error().message.find("redirects"), std::string::npos);

  options.max_bytes = 100;
  transport.answers = {ok(101)};
  EXPECT_FALSE(download_url(transport, "https://github.example/a.zip", "/tmp/x.zip", options));
  EXPECT_EQ(transport.requests.back().max_response_bytes, 100u);  // the transport stops there
  HttpResponse stopped;
  stopped.status = 200;
  stopped.too_large = true;
  transport.answers = {stopped};
  auto large = download_url(transport, "https://github.example/a.zip", "/tmp/x.zip", options);
  ASSERT_FALSE(large);
  EXPECT_NE(large.error().message.find("larger than 100 bytes"), std::string::npos);
}

namespace {
// A one-shot HTTP server on loopback: answers every connection with `body` and no Content-Length
// (so only counting the bytes can bound it), then closes.
class EndlessishServer {
 public:
  explicit EndlessishServer(std::string body) : m_body(std::move(body)) {
    m_socket = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(m_socket, reinterpret_cast<sockaddr*>(&address), sizeof address);
    ::listen(m_socket, 4);
    socklen_t length = sizeof address;
    ::getsockname(m_socket, reinterpret_cast<sockaddr*>(&address), &length);
    m_port = ntohs(address.sin_port);
    m_thread = std::thread([this] {
      for (int served = 0; served < 2; ++served) {
        int client = ::accept(m_socket, nullptr, nullptr);
        if (client < 0) return;
        char request[4096];
        (void)::recv(client, request, sizeof request, 0);
        std::string answer = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + m_body;
        for (size_t sent = 0; sent < answer.size();) {
          ssize_t n = ::send(client, answer.data() + sent, answer.size() - sent, MSG_NOSIGNAL);
          if (n <= 0) break;
          sent += static_cast<size_t>(n);
        }
        ::close(client);
      }
    });
  }
  ~EndlessishServer() {
    ::shutdown(m_socket, SHUT_RDWR);
    ::close(m_socket);
    m_thread.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(m_port) + "/archive.zip"; }

 private:
  std::string m_body;
  int m_socket = -1;
  int m_port = 0;
  std::thread m_thread;
};
}  // namespace

TEST(UrlDownload, TheCurlTransportStopsABodyPastTheLimit) {
  EndlessishServer server(std::string(4u << 20, 'z'));
  auto file = std::filesystem::temp_directory_path() / ("kbuild-url-" + std::to_string(::getpid()));
  kbuild::hub::CurlTransport transport;
  UrlDownloadOptions options;
  options.max_bytes = 64u << 10;
  auto refused = download_url(transport, server.url(), file, options);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("larger than 65536 bytes"), std::string::npos) << refused.error().message;
  EXPECT_LE(std::filesystem::file_size(file), options.max_bytes);
  options.max_bytes = 8u << 20;
  auto whole = download_url(transport, server.url(), file, options);
  ASSERT_TRUE(whole) << whole.error().message;
  EXPECT_EQ(*whole, 4u << 20);
  EXPECT_EQ(std::filesystem::file_size(file), 4u << 20);
  std::filesystem::remove(file);
}

TEST(CaBundle, TheUsersChoiceComesFirstThenTheDistributionsBundle) {
  auto only = [](std::set<std::string> files) {
    return [files](const std::string& path) { return files.count(path) > 0; };
  };
  // RHEL's bundle where Debian's is absent; Alpine's last.
  util::MapEnvironment none;
  EXPECT_EQ(find_ca_location(none, only({"/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"})).file,
            "/etc/pki/tls/certs/ca-bundle.crt");
  EXPECT_EQ(find_ca_location(none, only({"/etc/ssl/cert.pem"})).file, "/etc/ssl/cert.pem");
  EXPECT_EQ(find_ca_location(none, only({"/etc/ssl/ca-bundle.pem"})).file, "/etc/ssl/ca-bundle.pem");
  EXPECT_TRUE(find_ca_location(none, only({})).empty());
  // CURL_CA_BUNDLE before SSL_CERT_FILE, kept even where the file is missing (curl then says so);
  // SSL_CERT_DIR alone is a choice too, and no bundle is added to it.
  util::MapEnvironment both({{"CURL_CA_BUNDLE", "/a.pem"}, {"SSL_CERT_FILE", "/b.pem"}});
  EXPECT_EQ(find_ca_location(both, only({"/etc/ssl/cert.pem"})).file, "/a.pem");
  util::MapEnvironment ssl({{"SSL_CERT_FILE", "/b.pem"}, {"CURL_CA_BUNDLE", ""}});
  EXPECT_EQ(find_ca_location(ssl, only({})).file, "/b.pem");
  util::MapEnvironment dir(std::map<std::string, std::string>{{"SSL_CERT_DIR", "/certs"}});
  auto location = find_ca_location(dir, only({"/etc/ssl/certs/ca-certificates.crt"}));
  EXPECT_EQ(location.directory, "/certs");
  EXPECT_EQ(location.file, "");
}
