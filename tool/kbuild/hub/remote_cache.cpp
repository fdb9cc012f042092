#include "kbuild/hub/remote_cache.hpp"

#include "kbuild/util/hash.hpp"

namespace kbuild::hub {

// Objects larger than this are refused as an answer (a library of every architecture stays far below).
constexpr size_t k_max_entry_bytes = size_t{2} << 30;

net::HttpRequest HttpRemoteStore::request(const std::string& method, const std::string& path) const {
  net::HttpRequest request;
  request.method = method;
  request.url = m_settings.url + "/" + net::url_encode(path, true);
  request.timeout_seconds = m_settings.timeout_seconds;
  if (m_settings.bearer_token) request.headers.set("authorization", "Bearer " + *m_settings.bearer_token);
  if (m_settings.basic_user)
    request.headers.set("authorization",
                        "Basic " + util::base64_encode(*m_settings.basic_user + ":" + *m_settings.basic_password));
  return request;
}

Result<std::optional<std::string>> HttpRemoteStore::get(const std::string& path) {
  auto response = m_transport.send(request("GET", path));
  if (!response) return fail("GET " + path + ": " + response.error().message);
  if (response->status == 404) return std::optional<std::string>();
  if (response->status != 200) return fail("GET " + path + ": HTTP " + std::to_string(response->status));
  if (response->body.size() > k_max_entry_bytes) return fail("GET " + path + ": answer too large");
  return std::optional<std::string>(std::move(response->body));
}

Result<void> HttpRemoteStore::put(const std::string& path, const std::string& bytes) {
  auto put = request("PUT", path);
  put.body = bytes;
  put.headers.set("content-type", "application/octet-stream");
  auto response = m_transport.send(put);
  if (!response) return fail("PUT " + path + ": " + response.error().message);
  if (response->status < 200 || response->status >= 300)
    return fail(
        "PUT " + path + ": HTTP " + std::to_string(response->status) +
        (response->status == 401 || response->status == 403 ? " (check KBUILD_REMOTE_CACHE_TOKEN or _USER)" : ""));
  return {};
}

}  // namespace kbuild::hub
