#include "kbuild/hub/publish.hpp"

#include <regex>
#include <set>

#include "kbuild/layout/digest.hpp"
#include "kbuild/layout/metadata.hpp"
#include "kbuild/layout/templates.hpp"
#include "kbuild/util/hash.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::hub {

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

Result<BuildInventory> inventory_build(const util::FileSystem& fs, const fs::path& kernel_dir) {
  fs::path build = kernel_dir / "build";
  auto entries = fs.list_dir(build);
  if (!entries) return fail(usage("no build/ in " + kernel_dir.string(), "run kbuild build first"));
  BuildInventory inventory;
  std::set<std::int64_t> versions;
  for (const auto& entry : *entries) {
    if (!entry.is_dir || entry.name.starts_with(".")) continue;
    fs::path dir = build / entry.name;
    auto text = fs.read_file(dir / "metadata.json");
    if (!text) return fail(usage("build/" + entry.name + " has no metadata.json", "rebuild it with kbuild build"));
    KB_TRY_ASSIGN(auto metadata, layout::Metadata::parse(*text));
    if (!metadata.digest) return fail(usage("build/" + entry.name + "/metadata.json has no digest", "rebuild it"));
    KB_TRY_ASSIGN(auto actual, layout::hash_variant_dir(fs, dir));
    if (actual != *metadata.digest)
      return fail(
          usage("build/" + entry.name + " does not match the digest in its metadata.json (modified after the build?)",
                "rebuild it with kbuild build; kbuild check shows which files differ"));
    versions.insert(metadata.version);
    inventory.variants.push_back(entry.name);
    KB_TRY_ASSIGN(auto files, util::list_files_recursive(fs, dir));
    for (const auto& rel : files) {
      if (!layout::is_digested(rel) && rel != "metadata.json") continue;  // bytecode
      KB_TRY_ASSIGN(auto file, describe_file(dir / rel, "build/" + entry.name + "/" + rel));
      inventory.files.push_back(std::move(file));
    }
  }
  if (inventory.variants.empty()) return fail(usage("build/ holds no variants", "run kbuild build first"));
  if (versions.size() > 1) {
    std::vector<std::string> list;
    for (auto v : versions) list.push_back(std::to_string(v));
    return fail(usage("the variants in build/ have different kernel versions (" + util::join(list, ", ") + ")",
                      "remove stale variants (kbuild clean --all) and build again"));
  }
  inventory.version = *versions.begin();
  if (auto benchmarks = fs.list_dir(kernel_dir / "benchmarks")) {
    for (const auto& entry : *benchmarks) {
      if (!entry.is_file || !entry.name.starts_with("benchmark") || !entry.name.ends_with(".py")) continue;
      KB_TRY_ASSIGN(auto file, describe_file(kernel_dir / "benchmarks" / entry.name, "benchmarks/" + entry.name));
      inventory.files.push_back(std::move(file));
    }
  }
  return inventory;
}

Result<std::string> render_card(const util::FileSystem& fs, const config::KernelConfig& config,
                                const fs::path& kernel_dir, const std::string& repo_id,
                                const std::vector<std::string>& variants) {
  std::string functions;
  auto init = fs.read_file(kernel_dir / "torch-ext" / config.general.python_name() / "__init__.py");
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

// Plans one branch against its current remote tree.
Result<PlannedBranch> plan_branch(HubClient& client, const RepoRef& repo, const std::string& branch, bool exists,
                                  const std::vector<LocalFile>& files, const std::vector<std::string>& owned) {
  std::vector<RemoteFile> remote;
  if (exists) {
    KB_TRY_ASSIGN(remote, client.list_tree(repo, branch));
  }
  return PlannedBranch{branch, exists, plan_commit(files, remote, owned)};
}

// Uploads and commits a plan in chunks; returns the last commit (or `head` when nothing changed).
Result<std::string> execute_plan(HubClient& client, const RepoRef& repo, const PlannedBranch& planned,
                                 const std::string& head, bool create_pr, const PublishHooks& hooks,
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
    KB_TRY(client.upload_lfs(repo, planned.branch, lfs, hooks.upload_progress));
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
      std::FILE* f = std::fopen(file.source.c_str(), "rb");
      if (!f) return fail(Error{ExitCode::failure, "cannot read " + file.source.string(), ""});
      std::string content(file.size, '\0');
      content.resize(std::fread(content.data(), 1, content.size(), f));
      std::fclose(f);
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

Result<PublishOutcome> publish(HubClient& client, util::FileSystem& fs, const config::KernelConfig& config,
                               const PublishOptions& options, const PublishHooks& hooks) {
  auto major = tag_major(options.tag);
  if (!major)
    return fail(usage("--tag " + options.tag + " is not a release tag", "write it as vMAJOR.MINOR.PATCH, e.g. v1.0.0"));
  KB_TRY_ASSIGN(BuildInventory inventory, inventory_build(fs, options.kernel_dir));
  if (*major != inventory.version)
    return fail(
        usage("--tag " + options.tag + " does not match the kernel's version " + std::to_string(inventory.version) +
                  " (general.version in build.toml; variants go to branch v" + std::to_string(inventory.version) + ")",
              "tag it v" + std::to_string(inventory.version) + ".x.y, or bump general.version and rebuild"));
  std::string repo_id = options.repo_id.value_or(config.general.hub_repo_id.value_or(""));
  static const std::regex k_repo(R"(^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$)");
  if (repo_id.empty())
    return fail(
        usage("no repository to publish to", "pass --repo-id org/name or set [general.hub] repo-id in build.toml"));
  if (!std::regex_match(repo_id, k_repo) || repo_id.find("..") != std::string::npos)
    return fail(usage("\"" + repo_id + "\" is not a repository id", "use org/name"));
  if (!options.has_token && !options.dry_run)
    return fail(usage("no Hub token found", "set HF_TOKEN or log in with huggingface-cli login"));
  RepoRef repo{options.repo_type, repo_id};
  std::string branch = "v" + std::to_string(inventory.version);

  PublishOutcome outcome;
  outcome.repo_id = repo_id;
  outcome.branch = branch;
  outcome.tag = options.tag;
  outcome.variants = inventory.variants;
  outcome.url = client.repo_url(repo) + "/tree/" + branch;

  KB_TRY_ASSIGN(std::string card, render_card(fs, config, options.kernel_dir, repo_id, inventory.variants));
  fs::path card_file = options.kernel_dir / ".kbuild" / "publish" / "README.md";
  KB_TRY(fs.write_file_atomic(card_file, card));
  KB_TRY_ASSIGN(LocalFile card_local, describe_file(card_file, "README.md"));

  // State of the repository (created unless dry-running).
  Refs refs;
  if (!options.dry_run) {
    KB_TRY(client.create_repo(repo, options.private_repo, true));
    KB_TRY_ASSIGN(refs, client.list_refs(repo));
  } else if (auto existing = client.list_refs(repo)) {
    refs = *existing;
  }
  if (refs.tags.count(options.tag) && !options.force && !options.dry_run)
    return fail(usage(
        "tag " + options.tag + " already exists in " + repo_id + " (at " + refs.tags[options.tag].substr(0, 12) + ")",
        "publish a new version tag, or pass --force to move it"));
  const bool branch_existed = refs.branches.count(branch) > 0;
  if (!branch_existed && !options.dry_run) {
    KB_TRY(client.create_branch(repo, branch, std::nullopt));
    refs.branches[branch] = refs.branches["main"];  // a new branch starts at main's head
  }
  // Stale files are deleted inside the published variants only; a new branch also drops every
  // build/ file it inherited from main.
  std::vector<std::string> owned;
  if (!branch_existed) owned.push_back("build/");
  for (const auto& v : inventory.variants) owned.push_back("build/" + v + "/");

  // Up to three attempts: a 412 means the branch moved; plan again against its new head.
  for (int attempt = 0;; ++attempt) {
    outcome.plans.clear();
    KB_TRY_ASSIGN(auto main_plan, plan_branch(client, repo, "main", refs.branches.count("main") > 0, {card_local}, {}));
    KB_TRY_ASSIGN(auto version_plan,
                  plan_branch(client, repo, branch, refs.branches.count(branch) > 0, inventory.files, owned));
    outcome.plans = {main_plan, version_plan};
    if (options.dry_run) {
      outcome.status = "dry_run";
      outcome.commit = refs.branches.count(branch) ? refs.branches[branch] : "";
      return outcome;
    }
    std::optional<std::string> pr;
    auto main_head = execute_plan(client, repo, main_plan, refs.branches["main"], false, hooks, pr);
    Result<std::string> version_head =
        main_head ? execute_plan(client, repo, version_plan, refs.branches[branch], options.create_pr, hooks, pr)
                  : Result<std::string>(fail(main_head.error()));
    if (!version_head) {
      bool moved = version_head.error().kind == ErrorKind::http && version_head.error().http_status == 412;
      if (!moved || attempt >= 2) return fail(version_head.error());
      if (hooks.info) hooks.info("the branch moved on the Hub meanwhile; planning again against its new head");
      KB_TRY_ASSIGN(refs, client.list_refs(repo));
      continue;
    }
    outcome.pull_request_url = pr;
    bool changed = !main_plan.plan.empty() || !version_plan.plan.empty();
    outcome.commit = *version_head;
    if (options.create_pr) {
      outcome.status = pr ? "pull_request_created" : "no_changes";
      outcome.traffic = client.stats();
      return outcome;  // a release tag on an unmerged pull request would mislead
    }
    outcome.status = changed ? "uploaded" : "no_changes";
    break;
  }
  // Tag the version branch's commit (the tag listing from the start is current: an existing tag
  // was refused unless --force).
  if (auto it = refs.tags.find(options.tag); it != refs.tags.end()) {
    if (it->second != outcome.commit) {
      KB_TRY(client.delete_tag(repo, options.tag));
      KB_TRY(client.create_tag(repo, outcome.commit, options.tag));
    }
  } else {
    KB_TRY(client.create_tag(repo, outcome.commit, options.tag));
  }
  outcome.traffic = client.stats();
  return outcome;
}

}  // namespace kbuild::hub
