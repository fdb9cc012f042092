#pragma once
// `kbuild publish` as a use case: the release gate (usecase/freshness.hpp: build/ must be current
// and compiled for every declared capability, unless allowed), the matrix's variants (what the
// release lacks is named; --require-all refuses it), then hub::publish (hub/publish.hpp: validate,
// plan, upload, commit, tag) over services.http with the configured token.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/hub/publish.hpp"
#include "kbuild/usecase/services.hpp"

namespace kbuild::usecase {

struct PublishRequest {
  std::filesystem::path kernel_dir;  ///< absolute
  std::string tag;                   ///< vMAJOR.MINOR.PATCH, or empty (branch vN only)
  std::optional<std::string> repo_id;
  std::optional<std::string> endpoint;  ///< --endpoint (else HF_ENDPOINT, else the Hub)
  bool private_repo = false;
  bool create_pr = false;
  bool dry_run = false;
  bool force = false;                          ///< move an existing tag
  std::vector<std::filesystem::path> sources;  ///< --from directories (absolute); empty: build/
  bool require_all = false;
  bool allow_stale = false;
  bool allow_partial_archs = false;
  bool allow_other_commit = false;  ///< publish variants that record another commit than HEAD
  bool require_signed = false;      ///< refuse variants without a valid metadata.json.sigstore
};

/// hub::PublishOutcome (status "uploaded", "no_changes", "dry_run", "pull_request_created").
using PublishOutcome = hub::PublishOutcome;

/// Progress ("uploading 3 file(s) through LFS") through reporter.info, bytes through
/// reporter.transfer, the gate's and the matrix's notes through reporter.warning and info.
Result<PublishOutcome> publish(const PublishRequest& request, Services& services);

}  // namespace kbuild::usecase
