#include "kbuild/cache/remote.hpp"

#include <charconv>

namespace kbuild::cache {

Result<std::optional<RemoteSettings>> remote_settings(const util::Environment& env) {
  auto url = env.get("KBUILD_REMOTE_CACHE");
  if (!url || url->empty()) return std::optional<RemoteSettings>();
  RemoteSettings settings;
  settings.url = *url;
  while (settings.url.ends_with('/')) settings.url.pop_back();
  if (!(settings.url.starts_with("http://") || settings.url.starts_with("https://")) ||
      settings.url.find_first_of(" \t\r\n") != std::string::npos)
    return fail("KBUILD_REMOTE_CACHE=" + *url + " is not an http(s) URL",
                "e.g. KBUILD_REMOTE_CACHE=http://cache.internal:8080/kbuild", ExitCode::usage);
  std::string mode = env.get_or("KBUILD_REMOTE_CACHE_MODE", "read-write");
  if (mode != "read-write" && mode != "read-only")
    return fail("KBUILD_REMOTE_CACHE_MODE=" + mode + " is not read-write or read-only", "", ExitCode::usage);
  settings.writable = mode == "read-write";
  settings.bearer_token = env.get("KBUILD_REMOTE_CACHE_TOKEN");
  settings.basic_user = env.get("KBUILD_REMOTE_CACHE_USER");
  settings.basic_password = env.get("KBUILD_REMOTE_CACHE_PASSWORD");
  if (settings.basic_user.has_value() != settings.basic_password.has_value())
    return fail("KBUILD_REMOTE_CACHE_USER and KBUILD_REMOTE_CACHE_PASSWORD go together", "", ExitCode::usage);
  if (auto timeout = env.get("KBUILD_REMOTE_CACHE_TIMEOUT")) {
    double seconds = 0;
    auto [end, ec] = std::from_chars(timeout->data(), timeout->data() + timeout->size(), seconds);
    if (ec != std::errc() || end != timeout->data() + timeout->size() || !(seconds > 0) || seconds > 3600)
      return fail("KBUILD_REMOTE_CACHE_TIMEOUT=" + *timeout + " is not a number of seconds (0 < s <= 3600)", "",
                  ExitCode::usage);
    settings.timeout_seconds = seconds;
  }
  return std::optional<RemoteSettings>(settings);
}

}  // namespace kbuild::cache
