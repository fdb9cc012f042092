// Discussions and pull requests: listing, details, opening, comments, status changes and merges.
// Pull request N is the ref refs/pr/N (commits to it add commit events); merging it commits the
// three-way merge of its files (base: the commit it started from) onto its target branch.

#include <set>

#include "kbuild/server/handlers.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::server {

namespace {

constexpr std::size_t k_discussions_per_page = 50;

Json author_json(const std::string& name) { return {{"name", name}, {"type", "user"}, {"isOwner", false}}; }

Json event_json(const DiscussionEvent& event) {
  Json data;
  switch (event.kind) {
    case EventKind::comment:
      data = {{"edited", false},
              {"hidden", false},
              {"latest",
               {{"raw", event.text}, {"updatedAt", iso8601(event.time_ms)}, {"author", author_json(event.author)}}},
              {"numEdits", 0},
              {"editors", Json::array({event.author})},
              {"reactions", Json::array()}};
      break;
    case EventKind::commit:
      data = {{"subject", event.text}, {"oid", event.detail}};
      break;
    case EventKind::status_change:
      data = {{"status", event.text}};
      break;
    case EventKind::title_change:
      data = {{"from", event.text}, {"to", event.detail}};
      break;
  }
  return {{"id", event.id},
          {"type", event_kind_name(event.kind)},
          {"createdAt", iso8601(event.time_ms)},
          {"author", author_json(event.author)},
          {"data", data}};
}

Json discussion_json(const Discussion& d, const RepoId& id) {
  return {{"num", d.num},
          {"title", d.title},
          {"status", status_name(d.status)},
          {"isPullRequest", d.is_pr},
          {"createdAt", iso8601(d.created_ms)},
          {"author", author_json(d.author)},
          {"repo", {{"name", id.full_name()}, {"type", repo_type_name(id.type)}}},
          {"pinned", false},
          {"topReactions", Json::array()}};
}

bool same_file(const FileEntry* a, const FileEntry* b) {
  if (!a || !b) return a == b;
  return a->sha256 == b->sha256 && a->blob_id == b->blob_id && a->lfs == b->lfs;
}

const FileEntry* find_file(const FileMap& files, const std::string& path) {
  auto it = files.find(path);
  return it == files.end() ? nullptr : &it->second;
}

/// Three-way merge of file lists: a path changed on one side only takes that side's version; changed
/// on both sides differently, it is a conflict.
struct MergedFiles {
  FileMap files;
  std::vector<std::string> conflicts;
};

MergedFiles merge_files(const FileMap& base, const FileMap& ours, const FileMap& theirs) {
  std::set<std::string> paths;
  for (const FileMap* files : {&base, &ours, &theirs})
    for (const auto& [path, entry] : *files) paths.insert(path);
  MergedFiles out;
  for (const auto& path : paths) {
    const FileEntry *b = find_file(base, path), *o = find_file(ours, path), *t = find_file(theirs, path);
    const FileEntry* pick = nullptr;  // nullptr: the path is deleted
    if (same_file(o, t) || same_file(b, t)) {
      pick = o;
    } else if (same_file(b, o)) {
      pick = t;
    } else {
      out.conflicts.push_back(path);
      continue;
    }
    if (pick) out.files.emplace(path, *pick);
  }
  return out;
}

/// Lines "diff --git a/P b/P" (with "new file" / "deleted file") for each path that differs.
std::string diff_summary(const FileMap& from, const FileMap& to) {
  std::set<std::string> paths;
  for (const FileMap* files : {&from, &to})
    for (const auto& [path, entry] : *files) paths.insert(path);
  std::string out;
  for (const auto& path : paths) {
    const FileEntry *a = find_file(from, path), *b = find_file(to, path);
    if (same_file(a, b)) continue;
    out += "diff --git a/" + path + " b/" + path + "\n";
    if (!a) out += "new file mode 100644\n";
    if (!b) out += "deleted file mode 100644\n";
  }
  return out;
}

bool status_filter(const std::string& filter, DiscussionStatus status) {
  bool open = status == DiscussionStatus::open || status == DiscussionStatus::draft;
  return filter.empty() || filter == "all" || (filter == "open") == open;
}

bool type_filter(const std::string& filter, bool is_pr) {
  return filter.empty() || filter == "all" || (filter == "pull_request") == is_pr;
}

}  // namespace

Outcome<Discussion> Handlers::find_discussion(const Repo& repo, const std::string& number) {
  auto missing = failure(404, "NotFound", "Discussion " + number + " not found");
  if (number.empty() || number.size() > 9 || number.find_first_not_of("0123456789") != std::string::npos)
    return missing;
  KB_TRY_ASSIGN(auto found, lift(m_store.find_discussion(repo.key, std::stoll(number))));
  if (!found) return missing;
  return std::move(*found);
}

// GET .../discussions?p=&type=&status=&author=: pages of 50, newest first.
Outcome<Reply> Handlers::discussions(const Match& m) {
  KB_TRY_ASSIGN(auto all, lift(m_store.list_discussions(m.repo.key)));
  std::string type = m_c.param("type").value_or(""), status = m_c.param("status").value_or("");
  std::string author = m_c.param("author").value_or(""), page = m_c.param("p").value_or("0");
  if (page.empty() || page.size() > 6 || page.find_first_not_of("0123456789") != std::string::npos)
    return bad_request("invalid page \"" + page + "\"");
  std::vector<const Discussion*> selected;
  std::int64_t closed = 0;
  for (const auto& d : all) {
    if (!type_filter(type, d.is_pr) || !status_filter(status, d.status) || (!author.empty() && d.author != author))
      continue;
    selected.push_back(&d);
    if (d.status == DiscussionStatus::closed || d.status == DiscussionStatus::merged) ++closed;
  }
  std::size_t start = std::stoull(page) * k_discussions_per_page;
  Json list = Json::array();
  for (std::size_t i = start; i < selected.size() && i < start + k_discussions_per_page; ++i)
    list.push_back(discussion_json(*selected[i], m.id));
  Json body = {{"discussions", list}, {"count", selected.size()}, {"start", start}, {"numClosedDiscussions", closed}};
  return json_reply(body, m_c.head);
}

// GET .../discussions/{num}: the discussion with its events; for pull requests also the target
// ("changes.base"), the merge commit, the files in conflict with the target and a summary diff.
Outcome<Reply> Handlers::discussion(const Match& m) {
  KB_TRY_ASSIGN(Discussion d, find_discussion(m.repo, m.name));
  KB_TRY_ASSIGN(auto events, lift(m_store.discussion_events(m.repo.key, d.num)));
  Json body = discussion_json(d, m.id);
  body["events"] = Json::array();
  for (const auto& event : events) body["events"].push_back(event_json(event));
  if (d.is_pr) {
    Json changes = {{"base", "refs/heads/" + d.target}};
    if (!d.merge_commit.empty()) changes["mergeCommitId"] = d.merge_commit;
    body["changes"] = changes;
    body["filesWithConflicts"] = Json::array();
    KB_TRY_ASSIGN(auto head, lift(m_store.find_ref(m.repo.key, RefKind::pr, std::to_string(d.num))));
    KB_TRY_ASSIGN(auto target, lift(m_store.find_ref(m.repo.key, RefKind::branch, d.target)));
    if (head) {
      KB_TRY_ASSIGN(FileMap base, files_at(m.repo, d.base));
      KB_TRY_ASSIGN(FileMap theirs, files_at(m.repo, *head));
      if (target && d.status != DiscussionStatus::merged) {
        KB_TRY_ASSIGN(FileMap ours, files_at(m.repo, *target));
        for (const auto& path : merge_files(base, ours, theirs).conflicts) body["filesWithConflicts"].push_back(path);
      }
      if (m_c.flag("diff")) body["diff"] = diff_summary(base, theirs);
    }
  }
  return json_reply(body, m_c.head);
}

// POST .../discussions {"title", "description"?, "pullRequest"?}: a pull request starts as a draft on
// the head of main (refs/pr/N); commit to refs/pr/N to fill it.
Outcome<Reply> Handlers::create_discussion(const Match& m) {
  KB_TRY_ASSIGN(std::string text, body(m_config.limits.max_json_body));
  KB_TRY_ASSIGN(NewDiscussionRequest request, parsed(parse_new_discussion(text)));
  NewDiscussion create{request.pull_request, request.title, request.description, m_c.token->user, m_c.now, "", ""};
  if (request.pull_request) {
    create.target = "main";
    KB_TRY_ASSIGN(create.base, resolve_revision(m.repo, "main"));
  }
  KB_TRY_ASSIGN(Discussion created, lift(m_store.create_discussion(m.repo.key, create)));
  Json body = discussion_json(created, m.id);
  body["url"] = repo_url(m.id) + "/discussions/" + std::to_string(created.num);
  return json_reply(body, m_c.head);
}

Outcome<Reply> Handlers::comment_discussion(const Match& m) {
  KB_TRY_ASSIGN(Discussion d, find_discussion(m.repo, m.name));
  KB_TRY_ASSIGN(std::string text, body(m_config.limits.max_json_body));
  KB_TRY_ASSIGN(std::string comment, parsed(parse_comment(text, true)));
  DiscussionEvent event{"", EventKind::comment, m_c.token->user, m_c.now, comment, ""};
  KB_TRY_ASSIGN(DiscussionEvent added, lift(m_store.add_discussion_event(m.repo.key, d.num, event)));
  return json_reply({{"newMessage", event_json(added)}}, m_c.head);
}

// POST .../discussions/{num}/status {"status": "open"|"closed", "comment"?}; merged ones stay merged.
Outcome<Reply> Handlers::discussion_status(const Match& m) {
  KB_TRY_ASSIGN(Discussion d, find_discussion(m.repo, m.name));
  KB_TRY_ASSIGN(std::string text, body(m_config.limits.max_json_body));
  KB_TRY_ASSIGN(StatusChangeRequest request, parsed(parse_status_change(text)));
  if (d.status == DiscussionStatus::merged) return bad_request("pull request " + m.name + " is merged");
  if (!request.comment.empty()) {
    DiscussionEvent comment{"", EventKind::comment, m_c.token->user, m_c.now, request.comment, ""};
    KB_TRY(lift(m_store.add_discussion_event(m.repo.key, d.num, comment)));
  }
  auto status = *parse_status(request.status);
  DiscussionEvent change{"", EventKind::status_change, m_c.token->user, m_c.now, request.status, ""};
  KB_TRY_ASSIGN(DiscussionEvent added, lift(m_store.add_discussion_event(m.repo.key, d.num, change, status)));
  return json_reply({{"newStatus", event_json(added)}}, m_c.head);
}

// POST .../discussions/{num}/merge {"comment"?}: commits the merge onto the target branch and marks
// the pull request merged, in one transaction; 409 when files conflict.
Outcome<Reply> Handlers::merge_discussion(const Match& m) {
  KB_TRY_ASSIGN(Discussion d, find_discussion(m.repo, m.name));
  KB_TRY_ASSIGN(std::string text, body(m_config.limits.max_json_body));
  KB_TRY_ASSIGN(std::string comment, parsed(parse_comment(text, false)));
  if (!d.is_pr) return bad_request("discussion " + m.name + " is not a pull request");
  if (d.status != DiscussionStatus::open && d.status != DiscussionStatus::draft)
    return bad_request("pull request " + m.name + " is " + std::string(status_name(d.status)));
  KB_TRY_ASSIGN(std::string head, resolve_revision(m.repo, "refs/pr/" + m.name));
  KB_TRY_ASSIGN(FileMap base, files_at(m.repo, d.base));
  KB_TRY_ASSIGN(FileMap theirs, files_at(m.repo, head));
  if (!comment.empty()) {
    DiscussionEvent event{"", EventKind::comment, m_c.token->user, m_c.now, comment, ""};
    KB_TRY(lift(m_store.add_discussion_event(m.repo.key, d.num, event)));
  }
  for (int attempt = 0; attempt < 16; ++attempt) {
    KB_TRY_ASSIGN(auto target, lift(m_store.find_ref(m.repo.key, RefKind::branch, d.target)));
    if (!target) return revision_not_found(d.target);
    KB_TRY_ASSIGN(FileMap ours, files_at(m.repo, *target));
    MergedFiles merged = merge_files(base, ours, theirs);
    if (!merged.conflicts.empty())
      return failure(
          409, "Conflict",
          "pull request " + m.name + " conflicts with " + d.target + " in " + util::join(merged.conflicts, ", "));
    CommitRequest request{d.title, "Merge pull request #" + m.name, m_c.token->user, m_c.now, std::move(merged.files)};
    KB_TRY_ASSIGN(CommitOutcome outcome,
                  lift(m_store.merge_pull_request(m.repo.key, d.num, d.target, *target, request)));
    if (outcome.status == CasStatus::stale) continue;
    if (outcome.status == CasStatus::missing) return revision_not_found(d.target);
    return json_reply({{"status", "merged"}, {"mergeCommitId", outcome.commit.oid}}, m_c.head);
  }
  return failure(409, "Conflict", "the branch kept moving during the merge; try again");
}

}  // namespace kbuild::server
