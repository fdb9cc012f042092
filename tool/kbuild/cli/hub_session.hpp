#pragma once
// The Hub client as commands configure it: endpoint and token from flags and the environment
// (hub/token.hpp), curl transport, retries, -v logging with the token redacted.

#include <memory>
#include <optional>
#include <string>

#include "kbuild/cli/command.hpp"
#include "kbuild/hub/client.hpp"
#include "kbuild/hub/curl_transport.hpp"
#include "kbuild/lock/variant_select.hpp"
#include "kbuild/toolchain/provision.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/process.hpp"
#include "kbuild/util/system.hpp"

namespace kbuild::cli {

struct HubSession {
  std::unique_ptr<hub::CurlTransport> transport;
  std::unique_ptr<hub::HubClient> client;
  std::optional<hub::Token> token;
};

/// A Hub client for `endpoint` (or HF_ENDPOINT, or the Hub), with the token the official clients
/// would use, requests timed by the services' clock and logged at debug level (`verbose` turns it on).
HubSession open_hub(Services& services, const std::optional<std::string>& endpoint, bool verbose);

/// The Hub user the configured token belongs to, asked once with a short deadline (3 s, no retry),
/// for commands that only use it as a default (`init`'s repository owner); nullopt without a token,
/// with HF_HUB_OFFLINE set, when the Hub does not answer in time or names no valid namespace (no
/// error: the caller keeps its placeholder).
std::optional<std::string> token_owner_quickly(Services& services);

/// What the `kernels` loader would see on this machine, from the Torch of `python`; an error (exit
/// code 3) when that interpreter has no usable Torch.
Result<lock::SystemFacts> probe_system_facts(util::ProcessLauncher& launcher, const util::FileSystem& fs,
                                             const std::string& python);

/// Source-archive downloads for toolchain provisioning, over `transport` (which must outlive it).
toolchain::UrlDownloader url_downloader(net::HttpTransport& transport);

}  // namespace kbuild::cli
