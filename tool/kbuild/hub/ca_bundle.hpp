#pragma once
// Which certificate authorities HTTPS trusts. A libcurl from the system knows its distribution's
// bundle; the static libcurl of the wheel (docs/install.md) has none compiled in, since one binary
// runs on Debian, RHEL, SUSE and Alpine, which keep the bundle in different places. So kbuild names
// it: the user's choice first (CURL_CA_BUNDLE, SSL_CERT_FILE, SSL_CERT_DIR, as curl and OpenSSL
// read them), else the first bundle of the list below that exists.

#include <functional>
#include <string>
#include <vector>

#include "kbuild/util/system.hpp"

namespace kbuild::hub {

struct CaLocation {
  std::string file;       ///< a PEM bundle (CURLOPT_CAINFO); empty: none
  std::string directory;  ///< a hashed certificate directory (CURLOPT_CAPATH); empty: none
  bool empty() const { return file.empty() && directory.empty(); }
};

/// The bundles of the distributions kbuild's wheel runs on, in the order they are tried.
const std::vector<std::string>& known_ca_bundles();

/// Where the CAs are, from the environment and `exists` (a file test); empty when nothing is found,
/// and then libcurl's own default applies.
CaLocation find_ca_location(const util::Environment& env, const std::function<bool(const std::string&)>& exists);

}  // namespace kbuild::hub
