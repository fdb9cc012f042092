#pragma once
// The versions of the third-party libraries kbuild runs with (`kbuild --version`). Each module reports
// the libraries it links (they are private to it): util here, then config::toml_library_version,
// toolchain::zip_library_version, hub::curl_library_version, server::server_library_versions.

#include <string>
#include <utility>
#include <vector>

namespace kbuild::util {

/// (name, version) pairs, e.g. {"OpenSSL", "3.0.17"}.
using LibraryVersions = std::vector<std::pair<std::string, std::string>>;

/// OpenSSL (libcrypto, as loaded), fmt and spdlog (as compiled against).
LibraryVersions library_versions();

}  // namespace kbuild::util
