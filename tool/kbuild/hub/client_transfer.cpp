// HubClient, second half: downloads (following redirects), preupload, LFS uploads (basic and
// multipart, resumable) and commits. The first half is client.cpp.
#include <nlohmann/json.hpp>

#include <cctype>
#include <fstream>

#include "kbuild/hub/client.hpp"
#include "kbuild/hub/client_errors.hpp"
#include "kbuild/util/hash.hpp"

namespace kbuild::hub {

using nlohmann::json;

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

std::expected<net::HttpResponse, Error> HubClient::get_following(net::HttpRequest request, const std::string& what,
                                                                 net::Headers* first_headers) {
  const std::string home = origin_of(m_endpoint);
  for (int redirects = 0;; ++redirects) {
    request.headers = net::Headers();
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
  net::HttpRequest request;
  request.url = resolve_url(repo, revision, path);
  KB_TRY_ASSIGN(auto response, get_following(request, "download " + path + " of " + repo.id + "@" + revision));
  if (response.body.size() > max_bytes)
    return fail(hub_error(path + " of " + repo.id + " is larger than " + std::to_string(max_bytes) + " bytes"));
  m_stats.bytes_downloaded += response.body.size();
  return response.body;
}

Result<DownloadedFile> HubClient::download_file(const RepoRef& repo, const std::string& revision,
                                                const std::string& path, const std::filesystem::path& destination) {
  net::HttpRequest request;
  request.url = resolve_url(repo, revision, path);
  request.response_file = destination;
  net::Headers hub_headers;  // the Hub's own answer, before any redirect to a CDN
  KB_TRY_ASSIGN(net::HttpResponse response,
                get_following(request, "download " + path + " of " + repo.id + "@" + revision, &hub_headers));
  DownloadedFile file;
  file.etag = hub_headers.get("x-linked-etag").value_or(hub_headers.get("etag").value_or(""));
  if (file.etag.starts_with("W/")) file.etag.erase(0, 2);
  if (file.etag.size() >= 2 && file.etag.front() == '"' && file.etag.back() == '"')
    file.etag = file.etag.substr(1, file.etag.size() - 2);
  file.commit = hub_headers.get("x-repo-commit").value_or("");
  file.size = response.file_bytes;
  m_stats.bytes_downloaded += file.size;
  return file;
}

Result<std::map<std::string, UploadMode>> HubClient::preupload(const RepoRef& repo, const std::string& revision,
                                                               const std::vector<LocalFile>& files) {
  std::map<std::string, UploadMode> modes;
  for (size_t start = 0; start < files.size(); start += 256) {
    json body = {{"files", json::array()}};
    for (size_t i = start; i < std::min(files.size(), start + 256); ++i) {
      body["files"].push_back(
          {{"path", files[i].path}, {"sample", util::base64_encode(files[i].sample)}, {"size", files[i].size}});
    }
    KB_TRY_ASSIGN(auto response, send({"POST", api(repo) + "/preupload/" + net::url_encode(revision), body.dump(),
                                       "application/json", true, true, "prepare the upload to " + repo.id}));
    try {
      const json answer = json::parse(response.body);  // named: a temporary would die before the loop runs
      for (const auto& file : answer.at("files")) {
        std::string path = file.at("path").get<std::string>();
        modes[path] = file.at("uploadMode").get<std::string>() == "lfs" ? UploadMode::lfs : UploadMode::regular;
      }
    } catch (const std::exception& e) {
      return fail(malformed_answer(m_endpoint, "prepare the upload to " + repo.id, e));
    }
  }
  return modes;
}

namespace {
std::uint64_t number_field(const json& value) {
  return value.is_string() ? std::stoull(value.get<std::string>()) : value.get<std::uint64_t>();
}
}  // namespace

Result<std::string> HubClient::lfs_batch(const RepoRef& repo, const std::string& revision,
                                         const std::vector<const LocalFile*>& files) {
  json body = {{"operation", "upload"},
               {"transfers", {"basic", "multipart"}},
               {"objects", json::array()},
               {"hash_algo", "sha256"},
               {"ref", {{"name", revision}}}};
  for (const LocalFile* file : files) body["objects"].push_back({{"oid", file->sha256}, {"size", file->size}});
  net::HttpRequest request;
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
  return outcome->body;
}

Result<void> HubClient::put_body(net::HttpRequest put, const std::string& what) {
  auto sent = send_with_retries(std::move(put), true);
  if (!sent) return fail(transport_error("upload of " + what + " failed: " + sent.error().message));
  if (sent->status < 200 || sent->status >= 300)
    return fail(error_for(*sent, {"PUT", "", "", "", false, true, "upload " + what}));
  m_last_etag = sent->headers.get("etag").value_or("");
  return {};
}

namespace {

// Whether an ETag (quoted or not) is the hex sha256 or md5 of `bytes`.
bool etag_names_part(std::string etag, std::string_view bytes) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  for (char& c : etag) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return etag == util::sha256_hex(bytes) || etag == util::md5_hex(bytes);
}

Result<std::string> read_slice(const std::filesystem::path& path, std::uint64_t offset, std::uint64_t length) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes(length, '\0');
  if (!in.seekg(static_cast<std::streamoff>(offset)) || !in.read(bytes.data(), static_cast<std::streamsize>(length)))
    return fail(hub_error("cannot read " + path.string() + " to upload it"));
  return bytes;
}

}  // namespace

Result<void> HubClient::upload_multipart(const LocalFile& file, const std::string& upload_json, const LfsResume* resume,
                                         const std::function<void(std::uint64_t)>& progress) {
  const json upload = json::parse(upload_json);
  const std::string href = upload.at("href");
  // A resumed upload is handed out again with fresh credentials in its URL; its parts are saved under
  // what stays the same.
  const std::string session = net::url_without_credentials(href);
  const json header = upload.value("header", json::object());
  std::uint64_t chunk = number_field(header.at("chunk_size"));
  if (chunk == 0) return fail(hub_error("the LFS server sent a chunk size of 0 for " + file.path));
  // Parts acknowledged by an earlier, interrupted attempt of the same upload session are not sent again.
  std::map<std::uint64_t, std::string> done =
      resume && resume->load ? resume->load(file.sha256, session) : std::map<std::uint64_t, std::string>{};
  json parts = json::array();
  for (std::uint64_t part = 1; (part - 1) * chunk < file.size; ++part) {
    std::string key = std::to_string(part);
    std::uint64_t base = (part - 1) * chunk;
    if (auto it = done.find(part); it != done.end()) {
      parts.push_back({{"partNumber", part}, {"etag", it->second}});
      if (progress) progress(std::min(file.size, base + chunk));
      continue;
    }
    if (!header.contains(key))
      return fail(hub_error("the LFS server sent no URL for part " + key + " of " + file.path));
    net::HttpRequest put;
    put.method = "PUT";
    put.url = header[key].get<std::string>();
    if (file.content) {
      put.body = file.content->substr(base, chunk);
    } else {
      put.body_file = file.source;
      put.body_offset = base;
      put.body_length = std::min(chunk, file.size - base);
    }
    if (progress)
      put.on_upload_progress = [&progress, base](std::uint64_t sent, std::uint64_t) { progress(base + sent); };
    std::string bytes = put.body_file ? std::string() : put.body;
    if (put.body_file) {
      KB_TRY_ASSIGN(bytes, read_slice(*put.body_file, base, *put.body_length));
    }
    KB_TRY(put_body(std::move(put), "part " + key + " of " + file.path));
    parts.push_back({{"partNumber", part}, {"etag", m_last_etag}});
    // Saved for a later run only when it is the part's digest (this registry: sha256; S3: md5): an
    // ETag a proxy mangled would otherwise be reused by every rerun, which then fails the same way.
    if (resume && resume->save && etag_names_part(m_last_etag, bytes))
      resume->save(file.sha256, session, part, m_last_etag);
  }
  net::HttpRequest complete;
  complete.method = "POST";
  complete.url = href;
  complete.body = json{{"oid", file.sha256}, {"parts", parts}}.dump();
  complete.headers.set("accept", "application/vnd.git-lfs+json");
  complete.headers.set("content-type", "application/vnd.git-lfs+json");
  auto finished = send_with_retries(complete, true);
  bool completed = finished && finished->status >= 200 && finished->status < 300;
  // A refused completion means some saved part is not what the server holds: the next run uploads
  // every part again instead of failing the same way forever.
  if (!completed && finished && resume && resume->forget) resume->forget(file.sha256);
  if (!finished) return fail(transport_error("the multipart upload of " + file.path + " could not be completed"));
  if (!completed)
    return fail(error_for(*finished, {"POST", href, "", "", false, true, "complete the upload of " + file.path}));
  return {};
}

Result<void> HubClient::upload_lfs(const RepoRef& repo, const std::string& revision,
                                   const std::vector<LocalFile>& files,
                                   const std::function<void(std::uint64_t, std::uint64_t)>& progress,
                                   const LfsResume* resume) {
  std::uint64_t total = 0, done = 0;
  for (const auto& f : files) total += f.size;
  auto report = [&](std::uint64_t within) {
    if (progress) progress(done + within, total);
  };
  for (size_t start = 0; start < files.size(); start += 256) {
    std::vector<const LocalFile*> chunk;
    std::map<std::string, const LocalFile*> by_oid;
    for (size_t i = start; i < std::min(files.size(), start + 256); ++i) {
      chunk.push_back(&files[i]);
      by_oid[files[i].sha256] = &files[i];
    }
    KB_TRY_ASSIGN(std::string answer_text, lfs_batch(repo, revision, chunk));
    json answer;
    try {
      answer = json::parse(answer_text);
    } catch (const std::exception& e) {
      return fail(malformed_answer(m_endpoint, "negotiate the LFS upload to " + repo.id, e));
    }
    for (const auto& object : answer.value("objects", json::array())) {
      auto found = by_oid.find(object.value("oid", ""));
      if (found == by_oid.end()) continue;
      const LocalFile& file = *found->second;
      if (object.contains("error"))
        return fail(hub_error("the Hub refused " + file.path + ": " + object["error"].value("message", "")));
      bool needs_upload = object.contains("actions") && object["actions"].contains("upload");
      if (needs_upload) {
        const auto& upload = object["actions"]["upload"];
        if (upload.value("header", json::object()).contains("chunk_size")) {
          KB_TRY(upload_multipart(file, upload.dump(), resume, report));
        } else {
          net::HttpRequest put;
          put.method = "PUT";
          put.url = upload.at("href");
          if (file.content)
            put.body = *file.content;
          else
            put.body_file = file.source;
          if (progress) put.on_upload_progress = [&](std::uint64_t sent, std::uint64_t) { report(sent); };
          KB_TRY(put_body(std::move(put), file.path));
        }
        if (object["actions"].contains("verify"))
          KB_TRY(send({"POST", object["actions"]["verify"].at("href"),
                       json{{"oid", file.sha256}, {"size", file.size}}.dump(), "application/vnd.git-lfs+json", true,
                       true, "verify the upload of " + file.path}));
        if (resume && resume->forget) resume->forget(file.sha256);
        ++m_stats.lfs_objects_uploaded;
        m_stats.lfs_bytes_uploaded += file.size;
      }
      done += file.size;
      report(0);
    }
  }
  return {};
}

Result<CommitResult> HubClient::commit(const RepoRef& repo, const std::string& revision, const std::string& ndjson,
                                       bool create_pr) {
  m_stats.inline_bytes += ndjson.size();
  KB_TRY_ASSIGN(auto response,
                send({"POST", api(repo) + "/commit/" + net::url_encode(revision) + (create_pr ? "?create_pr=1" : ""),
                      ndjson, "application/x-ndjson", true, true, "commit to " + repo.id + "@" + revision}));
  try {
    auto j = json::parse(response.body);
    CommitResult result{j.at("commitOid"), j.value("commitUrl", ""), std::nullopt};
    if (j.contains("pullRequestUrl") && j["pullRequestUrl"].is_string()) result.pull_request_url = j["pullRequestUrl"];
    return result;
  } catch (const std::exception& e) {
    return fail(malformed_answer(m_endpoint, "commit to " + repo.id, e));
  }
}

}  // namespace kbuild::hub
