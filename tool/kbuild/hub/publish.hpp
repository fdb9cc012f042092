#pragma once
// `kbuild publish`: build/<variant>/ directories -> a kernel repository on the Hub.
//
//   1. validate, before any request (hub/inventory.hpp): every variant of build/ (or of --from
//      directories) has metadata.json and matches its digest, all variants have one kernel version N
//      and one ops id, the tag is vMAJOR.MINOR.PATCH with MAJOR == N; with --require-all, every
//      variant of the matrix is there;
//   2. create the repository if missing (exist_ok), create branch vN from main if missing;
//   3. plan each branch's commit as data: on vN, every file of the published variants
//      (build/<variant>/...) and benchmarks/benchmark*.py, deleting stale files inside those
//      variants only (on a new branch: every inherited build/ file); on main, README.md (the card);
//   4. upload: the server decides inline vs LFS per file (preupload); LFS objects it already has
//      are not sent again; commit in chunks of at most 1000 operations, each with parentCommit; a
//      412 (the branch moved) re-plans against the new head, up to ten times. Every plan is made
//      against the tree of the exact commit the refs named (by its id, not the branch's name);
//   5. tag the final commit of vN, which holds every published file (an existing tag is refused
//      unless --force; one made meanwhile by another publisher is an error unless it names that commit).

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/config/model.hpp"
#include "kbuild/hub/client.hpp"
#include "kbuild/hub/commit_plan.hpp"
#include "kbuild/hub/inventory.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::hub {

struct PublishOptions {
  std::filesystem::path kernel_dir;
  std::string tag;
  std::optional<std::string> repo_id;
  std::string repo_type = "kernel";
  bool private_repo = false;
  bool create_pr = false;
  bool dry_run = false;
  bool force = false;
  /// Whether the client has a token. Publishing (not --dry-run) needs one; checked after the local
  /// validation, so that a wrong tag or a bad build is reported first.
  bool has_token = true;
  /// --from: directories of variants built elsewhere (see inventory_build); empty: build/.
  std::vector<std::filesystem::path> sources;
  /// The variants of the kernel's matrix; those not published are named (hooks.info), and with
  /// `require_all` refused before any request.
  std::vector<std::string> expected_variants;
  bool require_all = false;
};

struct PlannedBranch {
  std::string branch;
  bool exists = false;
  CommitPlan plan;
};

/// How a publish ended (also the `status` of `kbuild publish --json`, as to_string spells it).
enum class PublishStatus { uploaded, no_changes, dry_run, pull_request_created };
/// "uploaded", "no_changes", "dry_run", "pull_request_created".
const char* to_string(PublishStatus status);

struct PublishOutcome {
  PublishStatus status = PublishStatus::no_changes;
  std::string kernel;  ///< general.name
  std::string repo_id;
  std::string branch;
  std::string tag;
  std::string commit;  ///< the commit the tag points to
  std::string url;
  std::optional<std::string> pull_request_url;
  std::vector<std::string> variants;
  std::vector<std::string> missing;          ///< expected variants not published
  std::vector<std::string> signed_variants;  ///< published with a metadata.json.sigstore
  std::vector<PlannedBranch> plans;
  TrafficStats traffic;
};

struct PublishHooks {
  std::function<void(const std::string&)> info;
  std::function<void(std::uint64_t done, std::uint64_t total)> upload_progress;
};

/// The model card (README.md on main), rendered from templates/CARD.md.in.
Result<std::string> render_card(const util::FileSystem& fs, const config::KernelConfig& config,
                                const std::filesystem::path& kernel_dir, const std::string& repo_id,
                                const std::vector<std::string>& variants);

Result<PublishOutcome> publish(HubClient& client, util::FileSystem& fs, const config::KernelConfig& config,
                               const PublishOptions& options, const PublishHooks& hooks);

}  // namespace kbuild::hub
