#include "kbuild/usecase/services.hpp"

#include "kbuild/hub/url_download.hpp"
#include "kbuild/util/interrupt.hpp"

namespace kbuild::usecase {

config::DiagnosticSink diagnostics_to(exec::Reporter& reporter) {
  return [&reporter](const std::vector<config::Diagnostic>& found) { reporter.diagnostics(found); };
}

toolchain::UrlDownloader url_downloader(net::HttpTransport& transport, std::string accept) {
  return [&transport, accept](const std::string& url, const std::filesystem::path& destination) -> Result<void> {
    hub::UrlDownloadOptions options;
    options.accept = accept;
    auto downloaded = hub::download_url(transport, url, destination, options);
    if (!downloaded && util::interrupted()) return util::interrupted_failure("while downloading " + url);
    KB_TRY(downloaded);
    return {};
  };
}

}  // namespace kbuild::usecase
