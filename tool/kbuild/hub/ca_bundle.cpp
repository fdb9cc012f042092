#include "kbuild/hub/ca_bundle.hpp"

#include <vector>

namespace kbuild::hub {

const std::vector<std::string>& known_ca_bundles() {
  static const std::vector<std::string> bundles = {
      "/etc/ssl/certs/ca-certificates.crt",                 // Debian, Ubuntu, Arch, Gentoo
      "/etc/pki/tls/certs/ca-bundle.crt",                   // RHEL, Rocky, Alma, Fedora, Amazon Linux
      "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",  // RHEL 7 and later (the same file, newer name)
      "/etc/ssl/ca-bundle.pem",                             // openSUSE, SLES
      "/etc/ssl/cert.pem",                                  // Alpine, Void
  };
  return bundles;
}

CaLocation find_ca_location(const util::Environment& env, const std::function<bool(const std::string&)>& exists) {
  CaLocation chosen;
  for (const char* name : {"CURL_CA_BUNDLE", "SSL_CERT_FILE"}) {
    std::string value = env.get_or(name, "");
    if (!value.empty()) {
      chosen.file = value;
      break;
    }
  }
  chosen.directory = env.get_or("SSL_CERT_DIR", "");
  if (!chosen.empty()) return chosen;  // the user's choice, even where it does not exist: curl says so
  for (const auto& bundle : known_ca_bundles())
    if (exists(bundle)) return CaLocation{bundle, ""};
  return chosen;
}

}  // namespace kbuild::hub
