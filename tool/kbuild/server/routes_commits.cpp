// Commits: the history listing, preupload (the LFS-or-regular decision) and the NDJSON commit.

#include "kbuild/server/handlers.hpp"

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
  KB_TRY_ASSIGN(std::string text, body(m_config.limits.max_commit_body));
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

/// Reads every commit line, storing inline contents right away (blobs are content-addressed, so a
/// commit that fails later only leaves unreferenced blobs) and checking that LFS files were uploaded.
Outcome<PlannedCommit> read_commit(Store& store, std::string_view text) {
  PlannedCommit out;
  bool has_header = false;
  CommitReader reader(text);
  while (true) {
    KB_TRY_ASSIGN(auto line, parsed(reader.next()));
    if (!line) break;
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
        auto stored = store.blob_size(line->oid);
        if (!stored)
          return bad_request(line->where + ": LFS object " + line->oid + " of " + path + " was not uploaded");
        if (line->size && static_cast<std::uint64_t>(*line->size) != *stored)
          return bad_request(line->where + ": size of " + path + " does not match the uploaded LFS object");
        out.ops.push_back({OpKind::lfs_file, lfs_entry(path, line->oid, *stored), false});
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
  if (!has_header) return bad_request("the commit has no header line");
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

/// A path cannot be a file and a folder at once.
Outcome<void> check_file_folder_conflicts(const FileMap& files) {
  for (const auto& [path, entry] : files)
    for (size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1))
      if (files.contains(path.substr(0, slash)))
        return bad_request(path.substr(0, slash) + " is a file, so it cannot also be a folder (" + path + ")");
  return {};
}

}  // namespace

Outcome<Reply> Handlers::commit(const Match& m) {
  const Repo& repo = m.repo;
  const std::string& revision = m.revision;
  bool create_pr = m_c.flag("create_pr");
  KB_TRY_ASSIGN(std::string text, body(m_config.limits.max_commit_body));
  // 1. Parse every line and store inline contents.
  KB_TRY_ASSIGN(PlannedCommit planned, read_commit(m_store, text));
  const std::string& parent_commit = planned.header.parent_commit;

  // 2. The target: a branch (or an existing pull request), or a new pull request on top of `revision`.
  RefKind kind = RefKind::branch;
  std::string ref_name = revision;
  if (!create_pr) {
    if (revision.starts_with("refs/heads/")) {
      ref_name = revision.substr(11);
    } else if (revision.starts_with("refs/pr/")) {
      kind = RefKind::pr;
      ref_name = revision.substr(8);
    }
    KB_TRY_ASSIGN(auto head, lift(m_store.find_ref(repo.key, kind, ref_name)));
    if (!head) {
      if (resolve_revision(repo, revision))
        return bad_request("commits must target a branch; " + revision + " is a tag or a commit");
      return revision_not_found(revision);
    }
  }

  // 3. Apply the operations to the current head and swap the ref; retry when another commit moved
  //    the branch in between, unless the client pinned parentCommit.
  for (int attempt = 0; attempt < 16; ++attempt) {
    std::string head;
    if (create_pr) {
      KB_TRY_ASSIGN(head, resolve_revision(repo, revision));
    } else {
      KB_TRY_ASSIGN(auto current, lift(m_store.find_ref(repo.key, kind, ref_name)));
      if (!current) return revision_not_found(revision);
      head = *current;
      if (!parent_commit.empty() && parent_commit != head)
        return failure(412, "PreconditionFailed",
                       "A commit has happened since. Please refresh and try again. (parentCommit " + parent_commit +
                           " is not the head " + head + " of " + revision + ")");
    }
    KB_TRY_ASSIGN(FileMap files, files_at(repo, head));
    KB_TRY_ASSIGN(auto inline_added, apply_ops(planned.ops, files));
    decide_lfs(files, inline_added, GitAttributes(small_text(files, ".gitattributes")));
    KB_TRY(check_file_folder_conflicts(files));

    CommitRequest request{planned.header.summary, planned.header.description, m_c.token->user, m_c.now,
                          std::move(files)};
    Json answer = {{"success", true}, {"commitOid", ""}, {"commitUrl", ""}, {"hookOutput", ""}};
    if (create_pr) {
      KB_TRY_ASSIGN(auto created, lift(m_store.commit_pull_request(repo.key, head, request)));
      answer["commitOid"] = created.second.oid;
      answer["commitUrl"] = repo_url(m.id) + "/commit/" + created.second.oid;
      answer["pullRequestUrl"] = repo_url(m.id) + "/discussions/" + std::to_string(created.first);
      return json_reply(answer, m_c.head);
    }
    KB_TRY_ASSIGN(CommitOutcome outcome, lift(m_store.commit(repo.key, kind, ref_name, head, request)));
    if (outcome.status == CasStatus::missing) return revision_not_found(revision);
    if (outcome.status == CasStatus::stale) {
      if (!parent_commit.empty())
        return failure(412, "PreconditionFailed", "A commit has happened since. Please refresh and try again.");
      continue;
    }
    answer["commitOid"] = outcome.commit.oid;
    answer["commitUrl"] = repo_url(m.id) + "/commit/" + outcome.commit.oid;
    return json_reply(answer, m_c.head);
  }
  return failure(409, "Conflict", "the branch kept moving during the commit; try again");
}

}  // namespace kbuild::server
