#include "kbuild/hub/client.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <regex>
#include <thread>

#include "kbuild/util/hash.hpp"

namespace kbuild::hub {

using nlohmann::json;

namespace {

Error hub_error(std::string message, std::string hint = {}) {
  return Error{ExitCode::network, std::move(message), std::move(hint)};
}

Error transport_error(std::string message, std::string hint = {}) {
  Error error = hub_error(std::move(message), std::move(hint));
  error.kind = ErrorKind::transport;
  return error;
}

std::string strip_query(const std::string& url) { return url.substr(0, url.find('?')); }

// The next page of a paginated listing: Link: <url>; rel="next".
std::optional<std::string> next_link(const HttpResponse& response) {
  auto link = response.headers.get("link");
  if (!link) return std::nullopt;
  static const std::regex k_next(R"(<([^>]+)>\s*;\s*rel="?next"?)");
  std::smatch match;
  if (std::regex_search(*link, match, k_next)) return match[1].str();
  return std::nullopt;
}

std::string server_message(const HttpResponse& response) {
  if (auto message = response.headers.get("x-error-message")) return *message;
  try {
    auto j = json::parse(response.body);
    if (j.contains("error")) return j["error"].is_string() ? j["error"].get<std::string>() : j["error"].dump();
  } catch (const std::exception&) {
  }
  std::string body = response.body.substr(0, 200);
  return body.find('<') == std::string::npos ? body : "";
}

}  // namespace

HubClient::HubClient(HttpTransport& transport, std::string endpoint, std::optional<Token> token, RetryPolicy retry,
                     Sleeper sleep, Logger log)
    : m_transport(transport),
      m_endpoint(std::move(endpoint)),
      m_token(std::move(token)),
      m_retry(retry),
      m_sleep(std::move(sleep)),
      m_log(std::move(log)) {
  if (!m_sleep) m_sleep = [](double seconds) { std::this_thread::sleep_for(std::chrono::duration<double>(seconds)); };
}

void HubClient::log(const std::string& line) const {
  if (m_log) m_log(redact(line, m_token));
}

std::string HubClient::prefix(const RepoRef& repo) const {
  if (repo.type == "model") return "";
  return repo.type + "s/";
}

std::string HubClient::api(const RepoRef& repo) const { return m_endpoint + "/api/" + repo.type + "s/" + repo.id; }

std::string HubClient::repo_url(const RepoRef& repo) const { return m_endpoint + "/" + prefix(repo) + repo.id; }

std::expected<HttpResponse, TransportError> HubClient::send_with_retries(HttpRequest request, bool retry) {
  for (int attempt = 0;; ++attempt) {
    auto start = std::chrono::steady_clock::now();
    ++m_stats.requests;
    auto outcome = m_transport.send(request);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (outcome)
      log("kbuild: " + request.method + " " + strip_query(request.url) + " -> " + std::to_string(outcome->status) +
          " (" + std::to_string(static_cast<int>(ms)) + " ms)");
    else
      log("kbuild: " + request.method + " " + strip_query(request.url) + " -> " + outcome.error().message);
    if (!retry) return outcome;
    auto delay = retry_delay(m_retry, attempt, outcome);
    if (!delay) return outcome;
    std::string wait = std::to_string(static_cast<int>(std::ceil(*delay))) + " s";
    log("kbuild: retrying in " + wait);
    if (m_notice)
      m_notice(redact(
          (outcome ? request.method + " " + strip_query(request.url) + " answered " + std::to_string(outcome->status)
                   : "cannot reach " + m_endpoint + " (" + outcome.error().message + ")") +
              "; retrying in " + wait,
          m_token));
    m_sleep(*delay);
  }
}

Error HubClient::error_for(const HttpResponse& response, const Call& call) const {
  Error error = describe_status(response, call);
  error.kind = ErrorKind::http;
  error.http_status = response.status;
  return error;
}

Error HubClient::describe_status(const HttpResponse& response, const Call& call) const {
  std::string detail = redact(server_message(response), m_token);
  std::string code = response.headers.get("x-error-code").value_or("");
  std::string suffix = detail.empty() ? "" : ": " + detail;
  switch (response.status) {
    case 401:
      return hub_error("the Hub at " + m_endpoint + " rejected the credentials while trying to " + call.what +
                           " (401 Unauthorized)" + suffix,
                       m_token ? "the token from " + m_token->origin +
                                     " is invalid or expired for this endpoint; "
                                     "set HF_TOKEN or log in again (huggingface-cli login)"
                               : "no token found: set HF_TOKEN or log in (huggingface-cli login)");
    case 403:
      return hub_error("not allowed to " + call.what + " (403 Forbidden)" + suffix,
                       "use a token with write access to this namespace; publishing kernels to an organisation "
                       "may need its approval");
    case 404:
      if (code == "RevisionNotFound")
        return hub_error("revision not found while trying to " + call.what + suffix, "check the branch or tag name");
      if (code == "EntryNotFound") return hub_error("file not found while trying to " + call.what + suffix);
      return hub_error("repository not found while trying to " + call.what + " (404)" + suffix,
                       "check the repository id and that your token can see it");
    case 409:
      return hub_error("conflict while trying to " + call.what + " (409)" + suffix);
    case 412:
      return hub_error("the branch moved while trying to " + call.what + " (412 Precondition Failed)" + suffix,
                       "someone else pushed to it; run the command again");
    default:
      return hub_error("the Hub answered " + std::to_string(response.status) + " while trying to " + call.what + suffix,
                       response.status >= 500 ? "the server had a problem; try again later" : "");
  }
}

std::expected<HttpResponse, Error> HubClient::send(const Call& call, const std::vector<int>& accepted) {
  HttpRequest request;
  request.method = call.method;
  request.url = call.url;
  request.body = call.body;
  if (!call.content_type.empty()) request.headers.set("content-type", call.content_type);
  if (call.authorize && m_token) request.headers.set("authorization", "Bearer " + m_token->value);
  auto outcome = send_with_retries(std::move(request), call.retry);
  if (!outcome)
    return std::unexpected(
        transport_error("cannot reach " + m_endpoint + " to " + call.what + ": " + outcome.error().message,
                        "check the endpoint (HF_ENDPOINT / --endpoint) and your network"));
  bool ok = outcome->status >= 200 && outcome->status < 300;
  for (int status : accepted) ok = ok || outcome->status == status;
  if (!ok) return std::unexpected(error_for(*outcome, call));
  return *outcome;
}

Result<std::string> HubClient::whoami() {
  if (!m_token) return fail(hub_error("no Hub token found", "set HF_TOKEN or log in (huggingface-cli login)"));
  KB_TRY_ASSIGN(auto response, send({"GET", m_endpoint + "/api/whoami-v2", "", "", true, false, "identify the token"}));
  try {
    return json::parse(response.body).at("name").get<std::string>();
  } catch (const std::exception&) {
    return fail(hub_error("unexpected answer from " + m_endpoint + "/api/whoami-v2"));
  }
}

Result<std::string> HubClient::create_repo(const RepoRef& repo, bool private_repo, bool exist_ok) {
  size_t slash = repo.id.find('/');
  json body = {{"name", repo.id.substr(slash + 1)},
               {"organization", repo.id.substr(0, slash)},
               {"type", repo.type},
               {"private", private_repo},
               {"visibility", private_repo ? "private" : "public"}};
  KB_TRY_ASSIGN(auto response, send({"POST", m_endpoint + "/api/repos/create", body.dump(), "application/json", true,
                                     false, "create repository " + repo.id},
                                    exist_ok ? std::vector<int>{409} : std::vector<int>{}));
  return repo_url(repo);
}

Result<Refs> HubClient::list_refs(const RepoRef& repo) {
  KB_TRY_ASSIGN(auto response, send({"GET", api(repo) + "/refs", "", "", true, true, "list the refs of " + repo.id}));
  try {
    auto j = json::parse(response.body);
    Refs refs;
    for (const auto& branch : j.at("branches")) refs.branches[branch.at("name")] = branch.at("targetCommit");
    for (const auto& tag : j.at("tags")) refs.tags[tag.at("name")] = tag.at("targetCommit");
    return refs;
  } catch (const std::exception& e) {
    return fail(hub_error(std::string("unexpected refs listing: ") + e.what()));
  }
}

Result<void> HubClient::create_branch(const RepoRef& repo, const std::string& branch,
                                      const std::optional<std::string>& from) {
  json body = json::object();
  if (from) body["startingPoint"] = *from;
  KB_TRY(send({"POST", api(repo) + "/branch/" + url_encode(branch), body.dump(), "application/json", true, false,
               "create branch " + branch + " of " + repo.id}));
  return {};
}

Result<void> HubClient::create_tag(const RepoRef& repo, const std::string& revision, const std::string& tag) {
  json body = {{"tag", tag}};
  KB_TRY(send({"POST", api(repo) + "/tag/" + url_encode(revision), body.dump(), "application/json", true, false,
               "tag " + repo.id + " " + tag}));
  return {};
}

Result<void> HubClient::delete_tag(const RepoRef& repo, const std::string& tag) {
  KB_TRY(send({"DELETE", api(repo) + "/tag/" + url_encode(tag), "", "", true, false, "delete tag " + tag}));
  return {};
}

Result<std::vector<RemoteFile>> HubClient::list_tree(const RepoRef& repo, const std::string& revision,
                                                     const std::string& path) {
  std::vector<RemoteFile> files;
  std::optional<std::string> url = api(repo) + "/tree/" + url_encode(revision) +
                                   (path.empty() ? "" : "/" + url_encode(path, true)) + "?recursive=true&expand=false";
  while (url) {
    KB_TRY_ASSIGN(auto response, send({"GET", *url, "", "", true, true, "list the files of " + repo.id}));
    try {
      for (const auto& entry : json::parse(response.body)) {
        if (entry.value("type", "") != "file") continue;
        RemoteFile file;
        file.path = entry.at("path");
        file.oid = entry.at("oid");
        file.size = entry.value("size", 0ull);
        if (entry.contains("lfs") && entry["lfs"].is_object()) file.lfs_sha256 = entry["lfs"].at("oid");
        files.push_back(std::move(file));
      }
    } catch (const std::exception& e) {
      return fail(hub_error(std::string("unexpected tree listing: ") + e.what()));
    }
    url = next_link(response);
  }
  return files;
}

Result<std::vector<TreeEntry>> HubClient::list_folder(const RepoRef& repo, const std::string& revision,
                                                      const std::string& path) {
  std::vector<TreeEntry> entries;
  std::optional<std::string> url =
      api(repo) + "/tree/" + url_encode(revision) + "/" + url_encode(path, true) + "?expand=false";
  while (url) {
    KB_TRY_ASSIGN(auto response, send({"GET", *url, "", "", true, true, "list " + path + " in " + repo.id}, {404}));
    if (response.status == 404) {
      if (response.headers.get("x-error-code").value_or("") == "EntryNotFound") return entries;
      return fail(error_for(response, {"GET", *url, "", "", true, true, "list " + path + " in " + repo.id}));
    }
    try {
      for (const auto& item : json::parse(response.body)) {
        TreeEntry entry;
        entry.path = item.at("path");
        entry.is_dir = item.value("type", "") == "directory";
        entry.oid = item.value("oid", "");
        entry.size = item.value("size", 0ull);
        if (item.contains("lfs") && item["lfs"].is_object()) entry.lfs_sha256 = item["lfs"].at("oid");
        entries.push_back(std::move(entry));
      }
    } catch (const std::exception& e) {
      return fail(hub_error(std::string("unexpected tree listing: ") + e.what()));
    }
    url = next_link(response);
  }
  return entries;
}

Result<std::optional<OrganizationOverview>> HubClient::organization_overview(const std::string& name) {
  Call call{"GET",
            m_endpoint + "/api/organizations/" + url_encode(name) + "/overview",
            "",
            "",
            true,
            true,
            "read the overview of organisation " + name};
  KB_TRY_ASSIGN(auto response, send(call, {404}));
  if (response.status == 404) return std::optional<OrganizationOverview>();
  try {
    auto j = json::parse(response.body);
    OrganizationOverview overview;
    overview.name = j.value("name", name);
    // The loader tests truthiness: any JSON value that Python would call true counts.
    const auto& flag = j.contains("trustedKernelPublisher") ? j["trustedKernelPublisher"] : json(false);
    overview.trusted_kernel_publisher = flag.is_boolean() ? flag.get<bool>() : (!flag.is_null() && flag != json(0));
    return std::optional(overview);
  } catch (const std::exception& e) {
    return fail(hub_error(std::string("unexpected organisation overview: ") + e.what()));
  }
}

std::string HubClient::resolve_url(const RepoRef& repo, const std::string& revision, const std::string& path) const {
  return m_endpoint + "/" + prefix(repo) + repo.id + "/resolve/" + url_encode(revision) + "/" + url_encode(path, true);
}

namespace {
// scheme://host[:port] of a URL, lowercased, for comparing origins.
std::string origin_of(const std::string& url) {
  size_t scheme = url.find("://");
  if (scheme == std::string::npos) return "";
  size_t end = url.find('/', scheme + 3);
  std::string origin = url.substr(0, end);
  std::transform(origin.begin(), origin.end(), origin.begin(), [](unsigned char c) { return std::tolower(c); });
  return origin;
}
}  // namespace

std::expected<HttpResponse, Error> HubClient::get_following(HttpRequest request, const std::string& what,
                                                            Headers* first_headers) {
  const std::string home = origin_of(m_endpoint);
  for (int redirects = 0;; ++redirects) {
    request.headers = Headers();
    if (m_token && origin_of(request.url) == home) request.headers.set("authorization", "Bearer " + m_token->value);
    auto outcome = send_with_retries(request, true);
    if (!outcome)
      return std::unexpected(
          transport_error("cannot reach " + m_endpoint + " to " + what + ": " + outcome.error().message,
                          "check the endpoint (HF_ENDPOINT / --endpoint) and your network"));
    int status = outcome->status;
    if (redirects == 0 && first_headers) *first_headers = outcome->headers;
    if (status >= 300 && status < 400 && status != 304) {
      auto location = outcome->headers.get("location");
      if (!location || redirects == 5)
        return std::unexpected(hub_error("too many or malformed redirects while trying to " + what));
      if (location->starts_with("/")) location = home + *location;
      request.url = *location;
      continue;
    }
    if (status < 200 || status >= 300)
      return std::unexpected(error_for(*outcome, {"GET", request.url, "", "", true, true, what}));
    return *outcome;
  }
}

Result<std::string> HubClient::download_text(const RepoRef& repo, const std::string& revision, const std::string& path,
                                             std::uint64_t max_bytes) {
  HttpRequest request;
  request.url = resolve_url(repo, revision, path);
  KB_TRY_ASSIGN(auto response, get_following(request, "download " + path + " of " + repo.id + "@" + revision));
  if (response.body.size() > max_bytes)
    return fail(hub_error(path + " of " + repo.id + " is larger than " + std::to_string(max_bytes) + " bytes"));
  m_stats.bytes_downloaded += response.body.size();
  return response.body;
}

Result<DownloadedFile> HubClient::download_file(const RepoRef& repo, const std::string& revision,
                                                const std::string& path, const std::filesystem::path& destination) {
  HttpRequest request;
  request.url = resolve_url(repo, revision, path);
  request.response_file = destination;
  Headers hub_headers;  // the Hub's own answer, before any redirect to a CDN
  KB_TRY(get_following(request, "download " + path + " of " + repo.id + "@" + revision, &hub_headers));
  DownloadedFile file;
  file.etag = hub_headers.get("x-linked-etag").value_or(hub_headers.get("etag").value_or(""));
  if (file.etag.starts_with("W/")) file.etag.erase(0, 2);
  if (file.etag.size() >= 2 && file.etag.front() == '"' && file.etag.back() == '"')
    file.etag = file.etag.substr(1, file.etag.size() - 2);
  file.commit = hub_headers.get("x-repo-commit").value_or("");
  std::error_code ec;
  file.size = std::filesystem::file_size(destination, ec);
  if (ec) return fail(hub_error("the download of " + path + " left no file at " + destination.string()));
  m_stats.bytes_downloaded += file.size;
  return file;
}

Result<std::map<std::string, UploadMode>> HubClient::preupload(const RepoRef& repo, const std::string& revision,
                                                               const std::vector<LocalFile>& files) {
  std::map<std::string, UploadMode> modes;
  for (size_t start = 0; start < files.size(); start += 256) {
    json body = {{"files", json::array()}};
    for (size_t i = start; i < std::min(files.size(), start + 256); ++i) {
      std::string sample(512, '\0');
      std::FILE* f = std::fopen(files[i].source.c_str(), "rb");
      if (!f) return fail(hub_error("cannot read " + files[i].source.string()));
      sample.resize(std::fread(sample.data(), 1, sample.size(), f));
      std::fclose(f);
      body["files"].push_back(
          {{"path", files[i].path}, {"sample", util::base64_encode(sample)}, {"size", files[i].size}});
    }
    KB_TRY_ASSIGN(auto response, send({"POST", api(repo) + "/preupload/" + url_encode(revision), body.dump(),
                                       "application/json", true, true, "prepare the upload to " + repo.id}));
    try {
      const json answer = json::parse(response.body);  // named: a temporary would die before the loop runs
      for (const auto& file : answer.at("files")) {
        std::string path = file.at("path").get<std::string>();
        modes[path] = file.at("uploadMode").get<std::string>() == "lfs" ? UploadMode::lfs : UploadMode::regular;
      }
    } catch (const std::exception& e) {
      return fail(hub_error(std::string("unexpected preupload answer: ") + e.what()));
    }
  }
  return modes;
}

Result<void> HubClient::upload_lfs(const RepoRef& repo, const std::string& revision,
                                   const std::vector<LocalFile>& files,
                                   const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
  std::uint64_t total = 0, done = 0;
  for (const auto& f : files) total += f.size;
  for (size_t start = 0; start < files.size(); start += 256) {
    json body = {{"operation", "upload"},
                 {"transfers", {"basic", "multipart"}},
                 {"objects", json::array()},
                 {"hash_algo", "sha256"},
                 {"ref", {{"name", revision}}}};
    std::map<std::string, const LocalFile*> by_oid;
    for (size_t i = start; i < std::min(files.size(), start + 256); ++i) {
      body["objects"].push_back({{"oid", files[i].sha256}, {"size", files[i].size}});
      by_oid[files[i].sha256] = &files[i];
    }
    HttpRequest request;
    request.method = "POST";
    request.url = m_endpoint + "/" + prefix(repo) + repo.id + ".git/info/lfs/objects/batch";
    request.body = body.dump();
    request.headers.set("accept", "application/vnd.git-lfs+json");
    request.headers.set("content-type", "application/vnd.git-lfs+json");
    if (m_token) request.headers.set("authorization", "Bearer " + m_token->value);
    Call call{"POST", request.url, "", "", true, true, "negotiate the LFS upload to " + repo.id};
    auto outcome = send_with_retries(request, true);
    if (!outcome) return fail(transport_error("cannot reach " + m_endpoint + ": " + outcome.error().message));
    if (outcome->status < 200 || outcome->status >= 300) return fail(error_for(*outcome, call));
    json answer;
    try {
      answer = json::parse(outcome->body);
    } catch (const std::exception&) {
      return fail(hub_error("unexpected LFS batch answer"));
    }
    for (const auto& object : answer.value("objects", json::array())) {
      std::string oid = object.value("oid", "");
      const LocalFile* file = by_oid.count(oid) ? by_oid[oid] : nullptr;
      if (!file) continue;
      if (object.contains("error"))
        return fail(hub_error("the Hub refused " + file->path + ": " + object["error"].value("message", "")));
      if (!object.contains("actions") || !object["actions"].contains("upload")) {
        done += file->size;  // already stored
        if (progress) progress(done, total);
        continue;
      }
      const auto& upload = object["actions"]["upload"];
      std::string href = upload.at("href");
      json header = upload.value("header", json::object());
      auto report = [&](std::uint64_t sent, std::uint64_t) {
        if (progress) progress(done + sent, total);
      };
      if (header.contains("chunk_size")) {
        std::uint64_t chunk =
            std::stoull(header["chunk_size"].is_string() ? header["chunk_size"].get<std::string>()
                                                         : std::to_string(header["chunk_size"].get<std::uint64_t>()));
        json parts = json::array();
        for (std::uint64_t part = 1; (part - 1) * chunk < file->size; ++part) {
          std::string key = std::to_string(part);
          if (!header.contains(key))
            return fail(hub_error("the LFS server sent no URL for part " + key + " of " + file->path));
          HttpRequest put;
          put.method = "PUT";
          put.url = header[key].get<std::string>();
          put.body_file = file->source;
          put.body_offset = (part - 1) * chunk;
          put.body_length = std::min(chunk, file->size - (part - 1) * chunk);
          std::uint64_t base = (part - 1) * chunk;
          put.on_upload_progress = [&, base](std::uint64_t sent, std::uint64_t t) { report(base + sent, t); };
          auto sent = send_with_retries(put, true);
          if (!sent) return fail(hub_error("upload of " + file->path + " failed: " + sent.error().message));
          if (sent->status < 200 || sent->status >= 300)
            return fail(
                error_for(*sent, {"PUT", put.url, "", "", false, true, "upload part " + key + " of " + file->path}));
          parts.push_back({{"partNumber", part}, {"etag", sent->headers.get("etag").value_or("")}});
        }
        HttpRequest complete;
        complete.method = "POST";
        complete.url = href;
        complete.body = json{{"oid", oid}, {"parts", parts}}.dump();
        complete.headers.set("accept", "application/vnd.git-lfs+json");
        complete.headers.set("content-type", "application/vnd.git-lfs+json");
        auto finished = send_with_retries(complete, true);
        if (!finished || finished->status < 200 || finished->status >= 300)
          return fail(hub_error("the multipart upload of " + file->path + " could not be completed"));
      } else {
        HttpRequest put;
        put.method = "PUT";
        put.url = href;
        put.body_file = file->source;
        put.on_upload_progress = report;
        auto sent = send_with_retries(put, true);
        if (!sent) return fail(hub_error("upload of " + file->path + " failed: " + sent.error().message));
        if (sent->status < 200 || sent->status >= 300)
          return fail(error_for(*sent, {"PUT", href, "", "", false, true, "upload " + file->path}));
      }
      if (object["actions"].contains("verify")) {
        KB_TRY(send({"POST", object["actions"]["verify"].at("href"), json{{"oid", oid}, {"size", file->size}}.dump(),
                     "application/vnd.git-lfs+json", true, true, "verify the upload of " + file->path}));
      }
      ++m_stats.lfs_objects_uploaded;
      m_stats.lfs_bytes_uploaded += file->size;
      done += file->size;
      if (progress) progress(done, total);
    }
  }
  return {};
}

Result<CommitResult> HubClient::commit(const RepoRef& repo, const std::string& revision, const std::string& ndjson,
                                       bool create_pr) {
  m_stats.inline_bytes += ndjson.size();
  KB_TRY_ASSIGN(auto response,
                send({"POST", api(repo) + "/commit/" + url_encode(revision) + (create_pr ? "?create_pr=1" : ""), ndjson,
                      "application/x-ndjson", true, true, "commit to " + repo.id + "@" + revision}));
  try {
    auto j = json::parse(response.body);
    CommitResult result{j.at("commitOid"), j.value("commitUrl", ""), std::nullopt};
    if (j.contains("pullRequestUrl") && j["pullRequestUrl"].is_string()) result.pull_request_url = j["pullRequestUrl"];
    return result;
  } catch (const std::exception& e) {
    return fail(hub_error(std::string("unexpected commit answer: ") + e.what()));
  }
}

}  // namespace kbuild::hub
