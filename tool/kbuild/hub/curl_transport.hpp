#pragma once
// net::HttpTransport over libcurl. One easy handle is reused, so connections are kept alive across
// requests. Upload bodies given as files are streamed from disk (never held whole in memory).
// Connect timeout 30 s; a transfer that moves less than 1 byte/s for 60 s is abandoned (no total
// timeout, so large uploads on slow links finish).

#include <memory>

#include "kbuild/net/http.hpp"

namespace kbuild::hub {

/// libcurl's version and its TLS library, as loaded ("7.88.1 (OpenSSL/3.0.17)").
std::string curl_library_version();

class CurlTransport final : public net::HttpTransport {
 public:
  CurlTransport();
  ~CurlTransport() override;
  CurlTransport(const CurlTransport&) = delete;
  CurlTransport& operator=(const CurlTransport&) = delete;

  std::expected<net::HttpResponse, net::TransportError> send(const net::HttpRequest& request) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

}  // namespace kbuild::hub
