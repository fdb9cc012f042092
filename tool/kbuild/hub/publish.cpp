#include "kbuild/hub/publish.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <regex>
#include <set>

#include "kbuild/layout/digest.hpp"
#include "kbuild/layout/metadata.hpp"
#include "kbuild/layout/templates.hpp"
#include "kbuild/net/names.hpp"
#include "kbuild/util/hash.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::hub {

const char* to_string(PublishStatus status) {
  switch (status) {
    case PublishStatus::uploaded:
      return "uploaded";
    case PublishStatus::dry_run:
      return "dry_run";
    case PublishStatus::pull_request_created:
      return "pull_request_created";
    case PublishStatus::no_changes:
      break;
  }
  return "no_changes";
}

namespace fs = std::filesystem;

namespace {

constexpr size_t k_max_operations = 1000;

Error usage(std::string message, std::string hint = {}) {
  return Error{ExitCode::usage, std::move(message), std::move(hint)};
}

std::string human(std::uint64_t bytes) {
  char text[32];
  if (bytes >= (1u << 20))
    std::snprintf(text, sizeof text, "%.1f MB", bytes / 1e6);
  else
    std::snprintf(text, sizeof text, "%.1f kB", bytes / 1e3);
  return text;
}

}  // namespace

Result<std::string> render_card(const util::FileSystem& fs, const config::KernelConfig& config,
                                const fs::path& kernel_dir, const std::string& repo_id,
                                const std::vector<std::string>& variants) {
  std::string functions;
  auto init = fs.read_file(kernel_dir / config.package_dir() / "__init__.py");
  if (init) {
    static const std::regex k_all(R"(__all__\s*=\s*\[([^\]]*)\])");
    static const std::regex k_name(R"(["']([A-Za-z_][A-Za-z0-9_]*)["'])");
    std::smatch match;
    if (std::regex_search(*init, match, k_all)) {
      std::string list = match[1];
      for (std::sregex_iterator it(list.begin(), list.end(), k_name), end; it != end; ++it)
        functions += "- `" + (*it)[1].str() + "`\n";
    }
  }
  if (functions.empty()) functions = "See the package's `__all__`.\n";
  std::string variant_list;
  for (const auto& v : variants) variant_list += "- `" + v + "`\n";
  std::string license = config.general.license;
  for (auto& c : license) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return layout::render_template("CARD.md.in", {{"NAME", config.general.name},
                                                {"PYTHON_NAME", config.general.python_name()},
                                                {"REPO_ID", repo_id},
                                                {"VERSION", std::to_string(config.general.version)},
                                                {"LICENSE", license},
                                                {"FUNCTIONS", functions},
                                                {"VARIANTS", variant_list}});
}

namespace {

// Plans one branch against the tree of `head`, the commit the refs named: by its id, never by the
// branch's name, so that the plan, the commit's parentCommit and the tag all mean the same commit
// however the branch moves meanwhile (a concurrent publish).
Result<PlannedBranch> plan_branch(HubClient& client, const RepoRef& repo, const std::string& branch,
                                  const std::string& head, const std::vector<LocalFile>& files,
                                  const std::vector<std::string>& owned) {
  std::vector<RemoteFile> remote;
  if (!head.empty()) {
    KB_TRY_ASSIGN(remote, client.list_tree(repo, head));
  }
  return PlannedBranch{branch, !head.empty(), plan_commit(files, remote, owned)};
}

// Uploads and commits a plan in chunks; returns the last commit (or `head` when nothing changed).
Result<std::string> execute_plan(HubClient& client, const util::FileSystem& fs, const RepoRef& repo,
                                 const PlannedBranch& planned, const std::string& head, bool create_pr,
                                 const PublishHooks& hooks, const LfsResume* resume,
                                 std::optional<std::string>& pull_request_url) {
  const CommitPlan& plan = planned.plan;
  if (plan.empty()) return head;
  KB_TRY_ASSIGN(auto modes, client.preupload(repo, planned.branch, plan.adds));
  std::vector<LocalFile> lfs;
  for (const auto& file : plan.adds)
    if (modes.count(file.path) && modes[file.path] == UploadMode::lfs) lfs.push_back(file);
  if (!lfs.empty()) {
    std::uint64_t bytes = 0;
    for (const auto& f : lfs) bytes += f.size;
    if (hooks.info)
      hooks.info("uploading " + std::to_string(lfs.size()) + " file(s) through LFS (" + human(bytes) +
                 ", already stored objects are skipped)");
    KB_TRY(client.upload_lfs(repo, planned.branch, lfs, hooks.upload_progress, resume));
  }
  std::vector<CommitOp> ops;
  for (const auto& file : plan.adds) {
    CommitOp op;
    op.path = file.path;
    if (modes.count(file.path) && modes[file.path] == UploadMode::lfs) {
      op.kind = CommitOp::Kind::add_lfs;
      op.sha256 = file.sha256;
      op.size = file.size;
    } else {
      KB_TRY_ASSIGN(std::string content, file.content ? Result<std::string>(*file.content) : fs.read_file(file.source));
      if (util::git_blob_id(content) != file.git_oid)
        return fail(Error{ExitCode::failure, file.source.string() + " changed while it was being published",
                          "publish again once the build is finished"});
      op.kind = CommitOp::Kind::add_inline;
      op.content_base64 = util::base64_encode(content);
    }
    ops.push_back(std::move(op));
  }
  for (const auto& path : plan.deletes) ops.push_back({CommitOp::Kind::remove, path, "", "", 0});
  if (create_pr && ops.size() > k_max_operations)
    return fail(usage("a pull request can carry at most 1000 changes; this publish has " + std::to_string(ops.size()),
                      "publish without --create-pr"));
  std::string parent = head;
  size_t chunks = (ops.size() + k_max_operations - 1) / k_max_operations;
  for (size_t chunk = 0; chunk < chunks; ++chunk) {
    std::vector<CommitOp> part(
        ops.begin() + static_cast<std::ptrdiff_t>(chunk * k_max_operations),
        ops.begin() + static_cast<std::ptrdiff_t>(std::min(ops.size(), (chunk + 1) * k_max_operations)));
    std::string summary =
        "Uploaded using kbuild" +
        (chunks > 1 ? " (batch " + std::to_string(chunk + 1) + "/" + std::to_string(chunks) + ")" : std::string());
    std::string body = encode_commit(summary, "", parent.empty() ? std::nullopt : std::optional(parent), part);
    KB_TRY_ASSIGN(auto result, client.commit(repo, planned.branch, body, create_pr));
    parent = result.oid;
    if (result.pull_request_url) pull_request_url = result.pull_request_url;
  }
  return parent;
}

}  // namespace

namespace {

// What publish validated before any request.
struct PublishTarget {
  BuildInventory inventory;
  RepoRef repo;
  std::string branch;
  std::vector<std::string> missing;
};

Result<PublishTarget> validate(const util::FileSystem& fs, const config::KernelConfig& config,
                               const PublishOptions& options) {
  // Without a tag, the variants go to branch vN only (kernel-builder's upload does the same).
  auto major = options.tag.empty() ? std::optional<std::int64_t>() : tag_major(options.tag);
  if (!options.tag.empty() && !major)
    return fail(usage("--tag " + options.tag + " is not a release tag", "write it as vMAJOR.MINOR.PATCH, e.g. v1.0.0"));
  PublishTarget target;
  KB_TRY_ASSIGN(target.inventory, inventory_build(fs, options.kernel_dir, options.sources));
  const auto version = target.inventory.version;
  target.missing = missing_variants(options.expected_variants, target.inventory.variants);
  if (options.require_all && !target.missing.empty())
    return fail(usage(util::count_of(target.missing.size(), "variant") + " of the matrix " +
                          (target.missing.size() == 1 ? "is" : "are") + " missing: " + util::join(target.missing, ", "),
                      "build them (kbuild build --variant NAME) or gather their artifacts with --from; without "
                      "--require-all a partial release is published"));
  if (major && *major != version)
    return fail(usage("--tag " + options.tag + " does not match the kernel's version " + std::to_string(version) +
                          " (general.version in build.toml; variants go to branch v" + std::to_string(version) + ")",
                      "tag it v" + std::to_string(version) + ".x.y, or bump general.version and rebuild"));
  std::string repo_id = options.repo_id.value_or(config.general.hub_repo_id.value_or(""));
  if (repo_id.empty())
    return fail(
        usage("no repository to publish to", "pass --repo-id org/name or set [general.hub] repo-id in build.toml"));
  if (!net::is_valid_repo_id(repo_id)) return fail(usage("\"" + repo_id + "\" is not a repository id", "use org/name"));
  if (!options.repo_id && repo_id.starts_with("your-org/"))  // what `kbuild init` writes without an owner
    return fail(usage("[general.hub] repo-id is still init's placeholder \"" + repo_id + "\"",
                      "set it to OWNER/" + repo_id.substr(9) +
                          " in build.toml (`kbuild whoami` names your account; the repository is no build "
                          "input, so nothing is rebuilt), or pass --repo-id OWNER/NAME"));
  if (!options.has_token && !options.dry_run)
    return fail(usage("no Hub token found", "set HF_TOKEN or log in with huggingface-cli login"));
  target.repo = {options.repo_type, repo_id};
  target.branch = "v" + std::to_string(version);
  return target;
}

// Multipart LFS parts remembered under <kernel>/.kbuild/publish/lfs/<oid>.json, so that a publish
// interrupted during a large upload continues where it stopped: {"session": URL, "parts": {"1": etag}}.
LfsResume resume_store(util::FileSystem& fs, const std::filesystem::path& kernel_dir) {
  auto file = [kernel_dir](const std::string& oid) {
    return kernel_dir / ".kbuild" / "publish" / "lfs" / (oid + ".json");
  };
  LfsResume resume;
  resume.load = [&fs, file](const std::string& oid, const std::string& session) {
    std::map<std::uint64_t, std::string> parts;
    auto text = fs.read_file(file(oid));
    if (!text) return parts;
    auto j = nlohmann::json::parse(*text, nullptr, false);
    if (!j.is_object() || j.value("session", "") != session || !j.contains("parts") || !j["parts"].is_object())
      return parts;
    for (const auto& [part, etag] : j["parts"].items())
      if (etag.is_string() && !part.empty() && part.size() < 10 && std::all_of(part.begin(), part.end(), ::isdigit))
        parts[std::stoull(part)] = etag.get<std::string>();
    return parts;
  };
  resume.save = [&fs, file](const std::string& oid, const std::string& session, std::uint64_t part,
                            const std::string& etag) {
    nlohmann::json j = {{"session", session}, {"parts", nlohmann::json::object()}};
    if (auto text = fs.read_file(file(oid))) {
      auto old = nlohmann::json::parse(*text, nullptr, false);
      if (old.is_object() && old.value("session", "") == session && old.contains("parts")) j = old;
    }
    j["parts"][std::to_string(part)] = etag;
    (void)fs.write_file_atomic(file(oid), j.dump());  // best effort: without it, a rerun sends the parts again
  };
  resume.forget = [&fs, file](const std::string& oid) { (void)fs.remove_all(file(oid)); };
  return resume;
}

// Points the tag at `commit` (moving it with --force; an existing tag was refused otherwise).
Result<void> tag_release(HubClient& client, const RepoRef& repo, const std::string& tag, const std::string& commit,
                         const Refs& refs) {
  if (auto it = refs.tags.find(tag); it != refs.tags.end()) {
    if (it->second == commit) return {};
    KB_TRY(client.delete_tag(repo, tag));
  }
  return client.create_tag(repo, commit, tag);
}

struct RepositoryState {
  Refs refs;
  bool branch_existed = false;  ///< before this publish
};

// The repository and branch exist afterwards (made now, by an earlier attempt, or by a concurrent
// publish: all fine); returns the refs as they are then.
Result<RepositoryState> prepare_repository(HubClient& client, const PublishTarget& target,
                                           const PublishOptions& options) {
  RepositoryState state;
  if (options.dry_run) {
    // Only "no such repository" makes the plan one for a new repository; a Hub that cannot be
    // reached (or refuses the token) is an error, not a guessed plan.
    auto existing = client.list_refs(target.repo);
    if (existing) {
      state.refs = *existing;
    } else if (existing.error().kind != ErrorKind::http || existing.error().http_status != 404) {
      return fail(existing.error());
    }
    state.branch_existed = state.refs.branches.count(target.branch) > 0;
    return state;
  }
  KB_TRY(client.create_repo(target.repo, options.private_repo, true));
  KB_TRY_ASSIGN(state.refs, client.list_refs(target.repo));
  state.branch_existed = state.refs.branches.count(target.branch) > 0;
  if (!state.branch_existed) {
    KB_TRY_ASSIGN(bool created, client.create_branch(target.repo, target.branch, std::nullopt));
    if (created) {
      state.refs.branches[target.branch] = state.refs.branches["main"];  // a new branch starts at main's head
    } else {
      KB_TRY_ASSIGN(state.refs, client.list_refs(target.repo));  // made concurrently: plan against its head
    }
  }
  return state;
}

// Whether the tree at `tag_commit` holds exactly this build's files (nothing to add or delete).
Result<bool> tag_holds_build(HubClient& client, const RepoRef& repo, const std::string& branch,
                             const std::string& tag_commit, const PublishTarget& target,
                             const std::vector<std::string>& owned) {
  KB_TRY_ASSIGN(auto at_tag, plan_branch(client, repo, branch, tag_commit, target.inventory.files, owned));
  return at_tag.plan.empty();
}

// Publishing the same build again under an existing tag whose tree holds it is done already (a rerun
// after the tag's answer was lost, or another job of the same release that won the race, even when the
// branch moved on since); anything else would move a release: an error.
Result<void> released_already(HubClient& client, const PublishTarget& target, const PublishOptions& options,
                              const std::string& tag_commit, const std::vector<std::string>& owned) {
  KB_TRY_ASSIGN(bool released, tag_holds_build(client, target.repo, target.branch, tag_commit, target, owned));
  if (released) return {};
  return fail(usage("tag " + options.tag + " already exists in " + target.repo.id + " (at " + tag_commit.substr(0, 12) +
                        ") with another build",
                    "publish a new version tag, or pass --force to move it"));
}

// What the release lacks of the matrix. Variants of a local build (the Torch of --python) are often
// outside the matrix: say so, rather than only that the matrix's are missing.
std::string missing_note(const PublishTarget& target, const PublishOptions& options) {
  std::vector<std::string> outside;
  for (const auto& variant : target.inventory.variants)
    if (std::find(options.expected_variants.begin(), options.expected_variants.end(), variant) ==
        options.expected_variants.end())
      outside.push_back(variant);
  return std::to_string(target.missing.size()) + " of the matrix's " +
         std::to_string(options.expected_variants.size()) +
         " variants are not in this release: " + util::join(target.missing, ", ") +
         " (--require-all refuses a partial release)" +
         (outside.empty() ? std::string()
                          : "; it holds " + util::join(outside, ", ") +
                                ", which the matrix (kbuild.toml, kbuild variants) does not list: a local build's "
                                "variants; kbuild build --matrix builds the matrix's");
}

// The files each branch owns: stale files are deleted inside the published variants only; a new
// branch also drops every build/ file it inherited from main.
std::vector<std::string> owned_paths(const PublishTarget& target, bool branch_existed) {
  std::vector<std::string> owned;
  if (!branch_existed) owned.push_back("build/");
  for (const auto& v : target.inventory.variants) owned.push_back("build/" + v + "/");
  return owned;
}

}  // namespace

Result<PublishOutcome> publish(HubClient& client, util::FileSystem& fs, const config::KernelConfig& config,
                               const PublishOptions& options, const PublishHooks& hooks) {
  KB_TRY_ASSIGN(PublishTarget target, validate(fs, config, options));
  const RepoRef& repo = target.repo;
  const std::string& branch = target.branch;
  PublishOutcome outcome;
  outcome.kernel = config.general.name;
  outcome.repo_id = repo.id;
  outcome.branch = branch;
  outcome.tag = options.tag;
  outcome.variants = target.inventory.variants;
  outcome.missing = target.missing;
  outcome.signed_variants = target.inventory.signed_variants;
  if (!target.missing.empty() && hooks.info) hooks.info(missing_note(target, options));
  outcome.url = client.repo_url(repo) + "/tree/" + branch;

  KB_TRY_ASSIGN(std::string card, render_card(fs, config, options.kernel_dir, repo.id, target.inventory.variants));
  LocalFile card_local = describe_bytes(std::move(card), "README.md");
  KB_TRY_ASSIGN(RepositoryState state, prepare_repository(client, target, options));
  Refs& refs = state.refs;
  const std::vector<std::string> owned = owned_paths(target, state.branch_existed);
  LfsResume resume = resume_store(fs, options.kernel_dir);

  // Up to ten attempts (each lost race means another publisher's commit went in): a 412 means the
  // branch moved (a concurrent publish, or a retried commit whose first attempt was applied); plan
  // again against its new head.
  for (int attempt = 0;; ++attempt) {
    const std::string main_head = refs.branches.count("main") ? refs.branches["main"] : "";
    const std::string version_head = refs.branches.count(branch) ? refs.branches[branch] : "";
    KB_TRY_ASSIGN(auto main_plan, plan_branch(client, repo, "main", main_head, {card_local}, {}));
    KB_TRY_ASSIGN(auto version_plan, plan_branch(client, repo, branch, version_head, target.inventory.files, owned));
    outcome.plans = {main_plan, version_plan};
    outcome.commit = version_head;
    bool changed = !main_plan.plan.empty() || !version_plan.plan.empty();
    if (auto tag = refs.tags.find(options.tag);
        !options.tag.empty() && tag != refs.tags.end() && !options.force && !options.dry_run) {
      KB_TRY(released_already(client, target, options, tag->second, owned));
      outcome.status = PublishStatus::no_changes;
      outcome.commit = tag->second;
      outcome.traffic = client.stats();
      return outcome;
    }
    if (options.dry_run) {
      outcome.status = PublishStatus::dry_run;
      return outcome;
    }
    std::optional<std::string> pr;
    auto main_done = execute_plan(client, fs, repo, main_plan, main_head, false, hooks, &resume, pr);
    Result<std::string> version_done =
        main_done ? execute_plan(client, fs, repo, version_plan, version_head, options.create_pr, hooks, &resume, pr)
                  : Result<std::string>(fail(main_done.error()));
    if (!version_done) {
      bool moved = version_done.error().kind == ErrorKind::http && version_done.error().http_status == 412;
      if (!moved || attempt >= 9) return fail(version_done.error());
      if (hooks.info) hooks.info("the branch moved on the Hub meanwhile; planning again against its new head");
      KB_TRY_ASSIGN(refs, client.list_refs(repo));
      continue;
    }
    outcome.pull_request_url = pr;
    outcome.commit = *version_done;
    if (options.create_pr) {
      outcome.status = pr ? PublishStatus::pull_request_created : PublishStatus::no_changes;
      outcome.traffic = client.stats();
      return outcome;  // a release tag on an unmerged pull request would mislead
    }
    outcome.status = changed ? PublishStatus::uploaded : PublishStatus::no_changes;
    break;
  }
  if (!options.tag.empty()) KB_TRY(tag_release(client, repo, options.tag, outcome.commit, refs));
  outcome.traffic = client.stats();
  return outcome;
}

}  // namespace kbuild::hub
