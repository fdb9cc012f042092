#pragma once
// The one shape of every use case:
//
//   Result<XOutcome> x(const XRequest& request, Services& services);
//
// The request is data (what the user asked for, already parsed by cli/); Services are every side
// effect the use case may have, as seams: the real implementations in the executable (cli/app.cpp),
// data-driven fakes in unit tests (tests/support/services_fixture.hpp). While a use case runs, the
// Reporter is its only voice (progress, warnings, diagnostics, questions); what it produced is the
// outcome, which cli/ prints (text or --json) and turns into an exit code.

#include <filesystem>

#include "kbuild/config/diagnostic.hpp"
#include "kbuild/exec/command_runner.hpp"
#include "kbuild/exec/reporter.hpp"
#include "kbuild/net/http.hpp"
#include "kbuild/toolchain/provision.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/process.hpp"
#include "kbuild/util/system.hpp"

namespace kbuild::usecase {

struct Services {
  util::FileSystem& fs;
  util::ProcessLauncher& launcher;  ///< probes and tools: python, pip, pytest, nvcc, g++, git
  exec::CommandRunner& runner;      ///< compile and link commands of a build
  net::HttpTransport& http;         ///< the Hub, the remote compile cache, source archives
  const util::Environment& env;     ///< CUDA_HOME, CXX, KBUILD_CACHE, HF_TOKEN, HF_ENDPOINT, ...
  const util::Clock& clock;
  util::Random& random;
  exec::Reporter& reporter;
};

/// The reporter's diagnostics() as the sink config parsers take.
config::DiagnosticSink diagnostics_to(exec::Reporter& reporter);

/// Source-archive downloads for toolchain provisioning (CUTLASS releases no package index serves),
/// over `transport`, which must outlive the result. An interrupt is reported as one (exit 130).
/// Downloads through `transport` with retries; `accept`, when not empty, is sent as the Accept header.
toolchain::UrlDownloader url_downloader(net::HttpTransport& transport, std::string accept = {});

}  // namespace kbuild::usecase
