#include "kbuild/usecase/inspect.hpp"

#include "kbuild/lock/cache_index.hpp"
#include "kbuild/lock/hf_cache.hpp"
#include "kbuild/lock/local_index.hpp"
#include "kbuild/net/names.hpp"
#include "kbuild/usecase/hub_access.hpp"

namespace kbuild::usecase {

namespace {

Result<void> check_repo_id(const std::string& repo_id) {
  if (net::is_valid_repo_id(repo_id)) return {};
  return fail("\"" + repo_id + "\" is not a Hub repository id",
              "write it as namespace/name, e.g. kernels-community/relu", ExitCode::usage);
}

// The machine's facts, or nullopt with a note: these use cases still answer without a Torch.
std::optional<lock::SystemFacts> optional_system(Services& services, const std::string& python, std::string& note) {
  auto facts = probe_system_facts(services, python);
  if (facts) return *facts;
  note = facts.error().message;
  return std::nullopt;
}

// A path (".", "/x", "./x", "../x") or an existing directory with build.toml or build/ names a local
// kernel; anything else a Hub repository.
bool names_local_kernel(const util::FileSystem& fs, const std::string& argument) {
  if (argument == "." || argument.starts_with("/") || argument.starts_with("./") || argument.starts_with("../"))
    return true;
  return fs.stat(argument).is_dir && (fs.stat(argument + "/build.toml").exists || fs.stat(argument + "/build").is_dir);
}

Result<lock::RevisionReport> describe_local(const InspectRequest& request, Services& services,
                                            const std::optional<lock::SystemFacts>& system) {
  if (request.version || request.revision)
    return fail("--version and --revision name revisions of a Hub repository, not of a local directory",
                "leave them out for " + request.target, ExitCode::usage);
  std::error_code ec;
  auto dir = std::filesystem::absolute(request.target, ec).lexically_normal();
  if (!dir.has_filename() && dir != dir.root_path()) dir = dir.parent_path();
  if (!services.fs.stat(dir / "build").is_dir)
    return fail(dir.string() + " has no build/", "build it first: kbuild build " + request.target, ExitCode::usage);
  lock::LocalKernelIndex local(services.fs, dir);
  KB_TRY_ASSIGN(auto report,
                lock::describe_revision(dir.string(), {std::nullopt, local.local_commit()}, system, local));
  report.revision = "build/";
  report.source = "local directory";
  report.commit = "";
  return report;
}

// The Hub, or offline (lock/cache_index.hpp) the Hugging Face cache; `where` names which.
struct RegistryIndex {
  HubAccess hub;
  std::unique_ptr<lock::KernelIndex> index;
  std::string where;
};

RegistryIndex open_registry(const InspectRequest& request, Services& services) {
  RegistryIndex out;
  if (request.offline || lock::offline_requested(services.env.all())) {
    auto cache = lock::resolve_hf_cache(services.env.all()).root;
    out.index = std::make_unique<lock::CacheKernelIndex>(services.fs, cache, std::set<std::string>{});
    out.where = cache.string() + " (offline)";
    return out;
  }
  out.hub = open_hub(services, request.endpoint);
  out.index = std::make_unique<lock::HubKernelIndex>(*out.hub.client);
  out.where = out.hub.client->endpoint();
  return out;
}

}  // namespace

Result<VersionsOutcome> versions(const InspectRequest& request, Services& services) {
  KB_TRY(check_repo_id(request.target));
  VersionsOutcome outcome;
  outcome.system = optional_system(services, request.python, outcome.system_note);
  RegistryIndex registry = open_registry(request, services);
  KB_TRY_ASSIGN(outcome.report, lock::list_versions(request.target, outcome.system, *registry.index));
  outcome.endpoint = registry.where;
  return outcome;
}

Result<InfoOutcome> info(const InspectRequest& request, Services& services) {
  if (request.version && request.revision)
    return fail("--version and --revision exclude each other", "pick one", ExitCode::usage);
  InfoOutcome outcome;
  outcome.system = optional_system(services, request.python, outcome.system_note);
  if (names_local_kernel(services.fs, request.target)) {
    KB_TRY_ASSIGN(outcome.report, describe_local(request, services, outcome.system));
    return outcome;
  }
  KB_TRY(check_repo_id(request.target));
  RegistryIndex registry = open_registry(request, services);
  KB_TRY_ASSIGN(outcome.report, lock::describe_revision(request.target, {request.version, request.revision},
                                                        outcome.system, *registry.index));
  return outcome;
}

Result<WhoamiOutcome> whoami(const WhoamiRequest& request, Services& services) {
  HubAccess hub = open_hub(services, request.endpoint);
  KB_TRY_ASSIGN(std::string name, hub.client->whoami());
  return WhoamiOutcome{name, hub.token->origin, hub.client->endpoint()};
}

}  // namespace kbuild::usecase
