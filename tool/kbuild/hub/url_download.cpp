#include "kbuild/hub/url_download.hpp"

#include <chrono>
#include <thread>

namespace kbuild::hub {

namespace {

// A download that the network or the server failed is a network error (exit code 4, docs/cli.md);
// a URL kbuild cannot use at all is a usage error (2).
Error download_error(std::string message, std::string hint, ExitCode code = ExitCode::network) {
  return Error{code, std::move(message), std::move(hint)};
}

// "scheme://host[:port]" of an absolute URL; empty when `url` is not one.
std::string origin_of(const std::string& url) {
  size_t scheme = url.find("://");
  if (scheme == std::string::npos) return "";
  return url.substr(0, url.find('/', scheme + 3));
}

bool is_http_url(const std::string& url) { return url.starts_with("https://") || url.starts_with("http://"); }

}  // namespace

Result<std::uint64_t> download_url(net::HttpTransport& transport, const std::string& url,
                                   const std::filesystem::path& destination, const UrlDownloadOptions& options) {
  if (!is_http_url(url))
    return fail(download_error("cannot download \"" + url + "\": only http:// and https:// URLs are supported",
                               "give an http(s) URL", ExitCode::usage));
  auto sleep = options.sleep ? options.sleep : [](double seconds) {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  };
  net::HttpRequest request;
  request.url = url;
  request.response_file = destination;
  request.max_response_bytes = options.max_bytes;
  if (!options.accept.empty()) request.headers.set("Accept", options.accept);
  for (int redirects = 0;; ++redirects) {
    std::expected<net::HttpResponse, net::TransportError> outcome;
    for (int attempt = 0;; ++attempt) {
      outcome = transport.send(request);
      auto delay = retry_delay(options.retry, attempt, outcome);
      if (!delay) break;
      sleep(*delay);
    }
    if (!outcome)
      return fail(download_error("cannot download " + request.url + ": " + outcome.error().message,
                                 "check your network and proxy settings (https_proxy)"));
    const int status = outcome->status;
    if (status >= 300 && status < 400 && status != 304) {
      auto location = outcome->headers.get("location");
      if (!location || redirects == 5)
        return fail(download_error("too many or malformed redirects downloading " + url, "check the URL"));
      if (location->starts_with("//"))
        *location = request.url.substr(0, request.url.find("://") + 1) + *location;
      else if (location->starts_with("/"))
        *location = origin_of(request.url) + *location;
      if (!is_http_url(*location))
        return fail(download_error(url + " redirects to an unsupported URL: " + *location, "check the URL"));
      if (request.url.starts_with("https://") && !location->starts_with("https://"))
        return fail(download_error(url + " redirects from https to plain http (" + *location + "); refused",
                                   "use a mirror that stays on https"));
      request.url = *location;
      continue;
    }
    if (status < 200 || status >= 300) {
      std::string hint = long_wait_hint(options.retry, *outcome);
      if (hint.empty())
        hint = status == 404 ? "check that the release exists at that URL" : "try again later, or check the URL";
      return fail(download_error("downloading " + request.url + " answered HTTP " + std::to_string(status), hint));
    }
    if (outcome->too_large || outcome->file_bytes > options.max_bytes)
      return fail(
          download_error(url + " is larger than " + std::to_string(options.max_bytes) + " bytes", "check the URL"));
    return outcome->file_bytes;
  }
}

}  // namespace kbuild::hub
