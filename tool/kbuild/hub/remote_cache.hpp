#pragma once
// The remote tier of the compile cache over HTTP (cache/remote.hpp): GET <url>/<path> (200: the
// file, 404: none), PUT <url>/<path> (any 2xx: stored). Other statuses and transport failures are
// errors, which the cache turns into a warning and a miss.

#include "kbuild/cache/remote.hpp"
#include "kbuild/net/http.hpp"

namespace kbuild::hub {

class HttpRemoteStore final : public cache::RemoteStore {
 public:
  HttpRemoteStore(net::HttpTransport& transport, cache::RemoteSettings settings)
      : m_transport(transport), m_settings(std::move(settings)) {}
  Result<std::optional<std::string>> get(const std::string& path) override;
  Result<void> put(const std::string& path, const std::string& bytes) override;

 private:
  net::HttpRequest request(const std::string& method, const std::string& path) const;

  net::HttpTransport& m_transport;
  cache::RemoteSettings m_settings;
};

}  // namespace kbuild::hub
