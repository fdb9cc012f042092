#pragma once
// Downloading one file from a plain URL (not a Hub repository), for artifacts pinned by sha256 that
// no package index serves, such as CUTLASS source archives. Redirects are followed (at most 5,
// absolute, scheme-relative or origin-relative; never from https down to http), transient failures
// are retried with the Hub client's policy, and the body is streamed to the destination file. The
// caller verifies the content (sha256); a download larger than `max_bytes` is stopped there and is
// an error.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "kbuild/hub/retry.hpp"
#include "kbuild/net/http.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::hub {

struct UrlDownloadOptions {
  std::uint64_t max_bytes = std::uint64_t{1} << 30;
  RetryPolicy retry;
  std::function<void(double seconds)> sleep;  ///< empty: really sleep
  std::string accept;                         ///< the Accept header, when not empty
};

/// Writes the body of a 2xx answer to `destination` (created or truncated); its size in bytes.
Result<std::uint64_t> download_url(net::HttpTransport& transport, const std::string& url,
                                   const std::filesystem::path& destination, const UrlDownloadOptions& options = {});

}  // namespace kbuild::hub
