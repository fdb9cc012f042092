#include "kbuild/util/library_versions.hpp"

#include <fmt/core.h>
#include <openssl/crypto.h>
#include <spdlog/version.h>

namespace kbuild::util {

LibraryVersions library_versions() {
  return {{"OpenSSL", OpenSSL_version(OPENSSL_VERSION_STRING)},
          {"fmt", fmt::format("{}.{}.{}", FMT_VERSION / 10000, FMT_VERSION / 100 % 100, FMT_VERSION % 100)},
          {"spdlog", fmt::format("{}.{}.{}", SPDLOG_VER_MAJOR, SPDLOG_VER_MINOR, SPDLOG_VER_PATCH)}};
}

}  // namespace kbuild::util
