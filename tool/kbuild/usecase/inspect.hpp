#pragma once
// What a kernel repository publishes and what this machine would load from it, as use cases:
//   versions  the version branches and tags of a Hub repository (lock/inspect.hpp list_versions)
//   info      one revision of a Hub repository, or a local kernel's build/ (describe_revision)
//   whoami    the Hub account of the configured token
// The machine's facts come from the Torch of `python`; without a usable Torch these still answer,
// with `system` empty and `system_note` saying why.

#include <cstdint>
#include <optional>
#include <string>

#include "kbuild/lock/inspect.hpp"
#include "kbuild/usecase/services.hpp"

namespace kbuild::usecase {

struct InspectRequest {
  std::string target;                    ///< a repository id (namespace/name); for info also a local kernel directory
  std::optional<std::uint64_t> version;  ///< info: the newest release of this major version
  std::optional<std::string> revision;   ///< info: a branch, tag or commit
  std::string python = "python3";
  std::optional<std::string> endpoint;
  bool offline = false;  ///< --offline; HF_HUB_OFFLINE too: the Hugging Face cache instead of the Hub
};

struct VersionsOutcome {
  lock::VersionsReport report;
  std::string endpoint;  ///< the Hub asked; offline: the cache read
  std::optional<lock::SystemFacts> system;
  std::string system_note;  ///< why `system` is unknown
};

struct InfoOutcome {
  lock::RevisionReport report;
  std::optional<lock::SystemFacts> system;
  std::string system_note;
};

Result<VersionsOutcome> versions(const InspectRequest& request, Services& services);
Result<InfoOutcome> info(const InspectRequest& request, Services& services);

struct WhoamiOutcome {
  std::string name;
  std::string token_origin;  ///< "HF_TOKEN", the token file, ...
  std::string endpoint;
};

struct WhoamiRequest {
  std::optional<std::string> endpoint;  ///< --endpoint; default $HF_ENDPOINT, else the Hub
};

/// An error (exit 2) without a token; the Hub's answer otherwise.
Result<WhoamiOutcome> whoami(const WhoamiRequest& request, Services& services);

}  // namespace kbuild::usecase
