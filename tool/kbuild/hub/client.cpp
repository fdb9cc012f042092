#include "kbuild/hub/client.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <regex>
#include <thread>

#include "kbuild/hub/client_errors.hpp"
#include "kbuild/util/hash.hpp"
#include "kbuild/util/log.hpp"

namespace kbuild::hub {

using nlohmann::json;

Error hub_error(std::string message, std::string hint) {
  return Error{ExitCode::network, std::move(message), std::move(hint)};
}

Error malformed_answer(const std::string& endpoint, const std::string& what, const std::exception& problem) {
  util::log::debug("unreadable answer while trying to " + what + ": " + problem.what());
  return hub_error("the Hub at " + endpoint + " answered the request to " + what +
                       " with something kbuild cannot read (not the Hub API's JSON)",
                   "check that HF_ENDPOINT (--endpoint) names a Hub; a proxy in between may have changed the answer; "
                   "run again with -v to see the requests");
}

Error transport_error(std::string message, std::string hint) {
  Error error = hub_error(std::move(message), std::move(hint));
  error.kind = ErrorKind::transport;
  return error;
}

namespace {

std::string strip_query(const std::string& url) { return url.substr(0, url.find('?')); }

// The next page of a paginated listing: Link: <url>; rel="next".
std::optional<std::string> next_link(const net::HttpResponse& response) {
  auto link = response.headers.get("link");
  if (!link) return std::nullopt;
  static const std::regex k_next(R"(<([^>]+)>\s*;\s*rel="?next"?)");
  std::smatch match;
  if (std::regex_search(*link, match, k_next)) return match[1].str();
  return std::nullopt;
}

std::string server_message(const net::HttpResponse& response) {
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

HubClient::HubClient(net::HttpTransport& transport, std::string endpoint, std::optional<Token> token, RetryPolicy retry,
                     Sleeper sleep, Logger log)
    : m_transport(transport),
      m_endpoint(std::move(endpoint)),
      m_token(std::move(token)),
      m_retry(retry),
      m_sleep(std::move(sleep)),
      m_log(std::move(log)) {
  static const util::RealClock real_clock;
  m_clock = &real_clock;
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

std::expected<net::HttpResponse, net::TransportError> HubClient::send_with_retries(net::HttpRequest request,
                                                                                   bool retry) {
  for (int attempt = 0;; ++attempt) {
    auto start = m_clock->now();
    ++m_stats.requests;
    auto outcome = m_transport.send(request);
    double ms = 1000 * m_clock->seconds_since(start);
    if (outcome)
      log("kbuild: " + request.method + " " + strip_query(request.url) + " -> " + std::to_string(outcome->status) +
          " (" + std::to_string(static_cast<int>(ms)) + " ms)");
    else
      log("kbuild: " + request.method + " " + strip_query(request.url) + " -> " + outcome.error().message);
    if (!retry) return outcome;
    auto delay = retry_delay(m_retry, attempt, outcome, request.timeout_seconds > 0);
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

Error HubClient::error_for(const net::HttpResponse& response, const Call& call) const {
  Error error = describe_status(response, call);
  error.kind = ErrorKind::http;
  error.http_status = response.status;
  return error;
}

Error HubClient::describe_status(const net::HttpResponse& response, const Call& call) const {
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
    default: {
      std::string hint = long_wait_hint(m_retry, response);
      if (hint.empty() && response.status >= 500) hint = "the server had a problem; try again later";
      return hub_error("the Hub answered " + std::to_string(response.status) + " while trying to " + call.what + suffix,
                       hint);
    }
  }
}

std::expected<net::HttpResponse, Error> HubClient::send(const Call& call, const std::vector<int>& accepted) {
  net::HttpRequest request;
  request.method = call.method;
  request.url = call.url;
  request.body = call.body;
  if (!call.content_type.empty()) request.headers.set("content-type", call.content_type);
  if (call.authorize && m_token) request.headers.set("authorization", "Bearer " + m_token->value);
  const bool request_timed = call.method == "GET" || call.method == "HEAD";
  if (request_timed) request.timeout_seconds = m_retry.request_timeout_seconds;
  auto outcome = send_with_retries(std::move(request), call.retry);
  if (!outcome && outcome.error().timeout && request_timed)
    return std::unexpected(transport_error(
        m_endpoint + " did not answer within " + std::to_string(static_cast<int>(m_retry.request_timeout_seconds)) +
            " s while trying to " + call.what,
        "check the endpoint (HF_ENDPOINT / --endpoint); KBUILD_HUB_TIMEOUT=SECONDS allows a slow Hub more time"));
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
  } catch (const std::exception& e) {
    return fail(malformed_answer(m_endpoint, "identify the token", e));
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
                                     true, "create repository " + repo.id},
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
    return fail(malformed_answer(m_endpoint, "list the refs of " + repo.id, e));
  }
}

Result<bool> HubClient::create_branch(const RepoRef& repo, const std::string& branch,
                                      const std::optional<std::string>& from) {
  json body = json::object();
  if (from) body["startingPoint"] = *from;
  // Retried like every request; a 409 means it exists (made by us on an attempt whose answer was
  // lost, or by a concurrent publish): both are fine, the caller plans against its head.
  KB_TRY_ASSIGN(auto response, send({"POST", api(repo) + "/branch/" + net::url_encode(branch), body.dump(),
                                     "application/json", true, true, "create branch " + branch + " of " + repo.id},
                                    {409}));
  return response.status != 409;
}

Result<void> HubClient::create_tag(const RepoRef& repo, const std::string& revision, const std::string& tag) {
  json body = {{"tag", tag}};
  Call call{"POST",
            api(repo) + "/tag/" + net::url_encode(revision),
            body.dump(),
            "application/json",
            true,
            true,
            "tag " + repo.id + " " + tag};
  KB_TRY_ASSIGN(auto response, send(call, {409}));
  if (response.status != 409) return {};
  // It exists: success when it already names this commit (an earlier attempt was applied).
  KB_TRY_ASSIGN(Refs refs, list_refs(repo));
  auto it = refs.tags.find(tag);
  if (it != refs.tags.end() && it->second == revision) return {};
  return fail(error_for(response, call));
}

Result<void> HubClient::delete_tag(const RepoRef& repo, const std::string& tag) {
  KB_TRY_ASSIGN(
      auto response,
      send({"DELETE", api(repo) + "/tag/" + net::url_encode(tag), "", "", true, true, "delete tag " + tag}, {404}));
  (void)response;  // 404: already gone (an earlier attempt was applied)
  return {};
}

Result<std::vector<RemoteFile>> HubClient::list_tree(const RepoRef& repo, const std::string& revision,
                                                     const std::string& path) {
  std::vector<RemoteFile> files;
  std::optional<std::string> url = api(repo) + "/tree/" + net::url_encode(revision) +
                                   (path.empty() ? "" : "/" + net::url_encode(path, true)) +
                                   "?recursive=true&expand=false";
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
      return fail(malformed_answer(m_endpoint, "list the files of " + repo.id, e));
    }
    url = next_link(response);
  }
  return files;
}

Result<std::vector<TreeEntry>> HubClient::list_folder(const RepoRef& repo, const std::string& revision,
                                                      const std::string& path) {
  std::vector<TreeEntry> entries;
  std::optional<std::string> url =
      api(repo) + "/tree/" + net::url_encode(revision) + "/" + net::url_encode(path, true) + "?expand=false";
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
      return fail(malformed_answer(m_endpoint, "list the files of " + repo.id, e));
    }
    url = next_link(response);
  }
  return entries;
}

Result<std::optional<OrganizationOverview>> HubClient::organization_overview(const std::string& name) {
  Call call{"GET",
            m_endpoint + "/api/organizations/" + net::url_encode(name) + "/overview",
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
    return fail(malformed_answer(m_endpoint, "describe organisation " + name, e));
  }
}

std::string HubClient::resolve_url(const RepoRef& repo, const std::string& revision, const std::string& path) const {
  return m_endpoint + "/" + prefix(repo) + repo.id + "/resolve/" + net::url_encode(revision) + "/" +
         net::url_encode(path, true);
}

}  // namespace kbuild::hub
