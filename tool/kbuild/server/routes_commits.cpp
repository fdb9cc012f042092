// Commits: the history listing, preupload (the LFS-or-regular decision) and the NDJSON commit.

#include "kbuild/server/file_io.hpp"
#include "kbuild/server/handlers.hpp"
#include "kbuild/server/path_rules.hpp"

namespace kbuild::server {

Outcome<Reply> Handlers::commits(const Match& m) {
  KB_TRY_ASSIGN(std::string oid, resolve_revision(m.repo, m.revision));
  Json body = Json::array();
  for (std::string next = oid; !next.empty() && body.size() < 10000;) {
    KB_TRY_ASSIGN(auto commit, lift(m_store.find_commit(m.repo.key, next)));
    if (!commit) break;
    body.push_back({{"id", commit->oid},
                    {"title", commit->title},
                    {"message", commit->message},
                    {"date", iso8601(commit->time_ms)},
                    {"authors", Json::array({{{"user", commit->author}}})}});
    next = commit->parent;
  }
  return json_reply(body, m_c.head);
}

Outcome<Reply> Handlers::preupload(const Match& m) {
  KB_TRY_ASSIGN(std::string oid, resolve_revision(m.repo, m.revision));
  KB_TRY_ASSIGN(std::string text, body(m_config.limits.max_json_body));
  KB_TRY_ASSIGN(PreuploadRequest request, parsed(parse_preupload(text)));
  KB_TRY_ASSIGN(FileMap files, files_at(m.repo, oid));
  GitAttributes attributes(small_text(files, ".gitattributes"));
  GitIgnore ignore(request.git_ignore ? *request.git_ignore : small_text(files, ".gitignore"));
  Json answers = Json::array();
  for (const auto& file : request.files) {
    bool lfs = use_lfs(attributes, file.path, file.size, file.sample);
    Json answer = {
        {"path", file.path}, {"uploadMode", lfs ? "lfs" : "regular"}, {"shouldIgnore", ignore.is_ignored(file.path)}};
    if (auto it = files.find(file.path); it != files.end() && it->second.lfs == lfs)
      answer["oid"] = lfs ? it->second.sha256 : it->second.blob_id;
    answers.push_back(std::move(answer));
  }
  return json_reply({{"files", answers}, {"commitOid", oid}}, m_c.head);
}

namespace {

enum class OpKind { inline_file, lfs_file, delete_file, delete_folder };

struct Op {
  OpKind kind;
  FileEntry entry;  // for additions; only the path for deletions
  bool binary_sample = false;
};

struct PlannedCommit {
  CommitHeader header;
  std::vector<Op> ops;
};

/// An lfsFile line's entry: the object must be one the repo may use (router.hpp, "Content access");
/// any other, stored or not, is refused alike. `sizes` remembers the objects checked already.
Outcome<Op> lfs_op(Store& store, const Repo& repo, const CommitLine& line,
                   std::map<std::string, std::uint64_t>& sizes) {
  auto known = sizes.find(line.oid);
  std::optional<std::uint64_t> stored;
  if (known != sizes.end()) {
    stored = known->second;
  } else {
    KB_TRY_ASSIGN(bool usable, lift(store.may_use_object(repo.key, line.oid)));
    stored = usable ? store.blob_size(line.oid) : std::nullopt;
    if (stored) sizes.emplace(line.oid, *stored);
  }
  if (!stored) return bad_request(line.where + ": LFS object " + line.oid + " of " + line.path + " was not uploaded");
  if (line.size && static_cast<std::uint64_t>(*line.size) != *stored)
    return bad_request(line.where + ": size of " + line.path + " does not match the uploaded LFS object");
  return Op{OpKind::lfs_file, lfs_entry(line.path, line.oid, *stored), false};
}

/// Reads every commit line, storing inline contents right away (blobs are content-addressed, so a
/// commit that fails later only leaves unreferenced blobs) and checking that LFS files were uploaded.
Outcome<PlannedCommit> read_commit(Store& store, const Repo& repo, LineReader& lines) {
  PlannedCommit out;
  bool has_header = false;
  CommitParser parser;
  std::map<std::string, std::uint64_t> lfs_sizes;
  std::string text;
  while (lines.next(text)) {
    KB_TRY_ASSIGN(auto line, parsed(parser.parse(std::move(text))));
    if (!line) continue;
    const std::string& path = line->path;
    switch (line->kind) {
      case CommitLineKind::header:
        out.header = std::move(line->header);
        has_header = true;
        break;
      case CommitLineKind::file: {
        KB_TRY(lift(store.put_blob(line->content)));
        bool binary = std::string_view(line->content).substr(0, 512).find('\0') != std::string_view::npos;
        out.ops.push_back({OpKind::inline_file, regular_entry(path, line->content), binary});
        break;
      }
      case CommitLineKind::lfs_file: {
        KB_TRY_ASSIGN(Op op, lfs_op(store, repo, *line, lfs_sizes));
        out.ops.push_back(std::move(op));
        break;
      }
      case CommitLineKind::deleted_file:
        out.ops.push_back({OpKind::delete_file, {path, 0, {}, {}, false}, false});
        break;
      case CommitLineKind::deleted_folder:
        out.ops.push_back({OpKind::delete_folder, {path, 0, {}, {}, false}, false});
        break;
    }
  }
  if (lines.failed()) return failure(500, "InternalError", "cannot read the request body");
  if (!has_header) return bad_request("the commit has no header line");
  // The Hub refuses empty commits too (huggingface_hub skips them before sending).
  if (out.ops.empty()) return bad_request("the commit has no operations: nothing to commit");
  return out;
}

/// Applies the operations to `files`; returns the inline files added (path -> NUL byte in its first
/// 512 bytes), which still need the LFS-or-regular decision.
Outcome<std::map<std::string, bool>> apply_ops(const std::vector<Op>& ops, FileMap& files) {
  std::map<std::string, bool> inline_added;
  for (const auto& op : ops) {
    const std::string& path = op.entry.path;
    switch (op.kind) {
      case OpKind::inline_file:
        files[path] = op.entry;
        inline_added[path] = op.binary_sample;
        break;
      case OpKind::lfs_file:
        files[path] = op.entry;
        inline_added.erase(path);
        break;
      case OpKind::delete_file:
        if (!files.erase(path)) return failure(404, "EntryNotFound", "A file with this name doesn't exist: " + path);
        inline_added.erase(path);
        break;
      case OpKind::delete_folder: {
        std::string prefix = path + "/";
        size_t removed = 0;
        for (auto it = files.lower_bound(prefix); it != files.end() && it->first.starts_with(prefix);) {
          inline_added.erase(it->first);
          it = files.erase(it);
          ++removed;
        }
        if (removed == 0) return failure(404, "EntryNotFound", "A folder with this name doesn't exist: " + path);
        break;
      }
    }
  }
  return inline_added;
}

/// Inline files get the same LFS-or-regular decision as preupload, under the resulting .gitattributes.
void decide_lfs(FileMap& files, const std::map<std::string, bool>& inline_added, const GitAttributes& attributes) {
  for (const auto& [path, binary] : inline_added) {
    FileEntry& entry = files[path];
    std::string sample = binary ? std::string(1, '\0') : std::string();
    if (use_lfs(attributes, path, entry.size, sample)) entry = lfs_entry(path, entry.sha256, entry.size);
  }
}

/// A path cannot be a file and a folder at once, and no two names of the tree may differ only in case
/// (one file on macOS and Windows: a clone there would lose one).
Outcome<void> check_file_folder_conflicts(const FileMap& files) {
  std::vector<std::string> paths;
  for (const auto& [path, entry] : files) {
    paths.push_back(path);
    for (size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1))
      if (files.contains(path.substr(0, slash)))
        return bad_request(path.substr(0, slash) + " is a file, so it cannot also be a folder (" + path + ")");
  }
  if (auto twins = case_collision(paths))
    return bad_request(twins->first + " and " + twins->second +
                       " differ only in case: they would be one file on macOS and Windows; rename one");
  return {};
}

/// Where a commit goes: a branch or refs/pr/N (the ref to move), or, with create_pr, a new pull request
/// on top of the revision, into branch `into`.
struct CommitTarget {
  RefKind kind = RefKind::branch;
  std::string name;
  std::string into;
};

Outcome<CommitTarget> commit_target(Handlers& handlers, Store& store, const Repo& repo, const std::string& revision,
                                    bool create_pr) {
  CommitTarget target;
  std::int64_t number = 0;
  KB_TRY(handlers.resolve_revision(repo, revision));  // 404 for an unknown revision, 400 for a bad one
  bool is_commit = false;
  if (std::string lower = lowercase(revision); is_commit_oid(lower)) {
    KB_TRY_ASSIGN(auto commit, lift(store.find_commit(repo.key, lower)));
    is_commit = commit.has_value();
  }
  if (create_pr) {
    // Pull requests merge into the branch they start from, main otherwise.
    std::string branch = revision.starts_with("refs/heads/") ? revision.substr(11) : revision;
    KB_TRY_ASSIGN(auto exists, lift(store.find_ref(repo.key, RefKind::branch, branch)));
    target.into = exists && !is_commit ? branch : "main";
    return target;
  }
  if (parse_pull_request_ref(revision, number)) {
    target.kind = RefKind::pr;
    target.name = std::to_string(number);
    return target;
  }
  target.name = revision.starts_with("refs/heads/") ? revision.substr(11) : revision;
  KB_TRY_ASSIGN(auto head, lift(store.find_ref(repo.key, RefKind::branch, target.name)));
  // A commit id resolves first (router.hpp, "Revisions"), even when a branch has its name.
  if (!head || is_commit) return bad_request("commits must target a branch; " + revision + " is a tag or a commit");
  return target;
}

std::unexpected<Failure> stale_parent(const std::string& parent, const std::string& head, const std::string& revision) {
  return failure(412, "PreconditionFailed",
                 "A commit has happened since. Please refresh and try again. (parentCommit " + parent +
                     " is not the head " + head + " of " + revision + ")");
}

/// The commit's operations applied to the files of `head`.
Outcome<FileMap> files_after(Handlers& handlers, const Repo& repo, const std::string& head,
                             const std::vector<Op>& ops) {
  KB_TRY_ASSIGN(FileMap files, handlers.files_at(repo, head));
  KB_TRY_ASSIGN(auto inline_added, apply_ops(ops, files));
  decide_lfs(files, inline_added, GitAttributes(handlers.small_text(files, ".gitattributes")));
  KB_TRY(check_file_folder_conflicts(files));
  return files;
}

}  // namespace

Outcome<Reply> Handlers::commit(const Match& m) {
  const Repo& repo = m.repo;
  const std::string& revision = m.revision;
  bool create_pr = m_c.flag("create_pr");
  // 1. The target, then every line parsed (inline contents stored).
  KB_TRY_ASSIGN(CommitTarget target, commit_target(*this, m_store, repo, revision, create_pr));
  KB_TRY_ASSIGN(auto lines, body_lines(m_config.limits.max_commit_body));
  KB_TRY_ASSIGN(PlannedCommit planned, read_commit(m_store, repo, *lines));
  const std::string& parent_commit = planned.header.parent_commit;

  // 2. Apply the operations to the current head and swap the ref; retry when another commit moved
  //    the branch in between, unless the client pinned parentCommit.
  Json answer = {{"success", true}, {"commitOid", ""}, {"commitUrl", ""}, {"hookOutput", ""}};
  for (int attempt = 0; attempt < 16; ++attempt) {
    std::string head;
    if (create_pr) {
      KB_TRY_ASSIGN(head, resolve_revision(repo, revision));
    } else {
      KB_TRY_ASSIGN(auto current, lift(m_store.find_ref(repo.key, target.kind, target.name)));
      if (!current) return revision_not_found(revision);
      head = *current;
    }
    if (!parent_commit.empty() && parent_commit != head) return stale_parent(parent_commit, head, revision);
    KB_TRY_ASSIGN(FileMap files, files_after(*this, repo, head, planned.ops));
    CommitRequest request{planned.header.summary, planned.header.description, m_c.token->user, m_c.now,
                          std::move(files)};
    if (create_pr) {
      KB_TRY_ASSIGN(auto created, lift(m_store.commit_pull_request(repo.key, head, request, target.into)));
      answer["commitOid"] = created.second.oid;
      answer["commitUrl"] = repo_url(m.id) + "/commit/" + created.second.oid;
      answer["pullRequestUrl"] = repo_url(m.id) + "/discussions/" + std::to_string(created.first);
      return json_reply(answer, m_c.head);
    }
    KB_TRY_ASSIGN(CommitOutcome outcome, lift(m_store.commit(repo.key, target.kind, target.name, head, request)));
    if (outcome.status == CasStatus::missing) return revision_not_found(revision);
    if (outcome.status == CasStatus::stale) continue;  // parentCommit, if any, is checked again above
    answer["commitOid"] = outcome.commit.oid;
    answer["commitUrl"] = repo_url(m.id) + "/commit/" + outcome.commit.oid;
    return json_reply(answer, m_c.head);
  }
  return failure(409, "Conflict", "the branch kept moving during the commit; try again");
}

}  // namespace kbuild::server
