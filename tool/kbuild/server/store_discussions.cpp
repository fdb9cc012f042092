// The Store's discussions and pull requests: numbering shared with refs/pr/N, timelines of events, and
// the merge transaction.

#include "kbuild/server/metadata_db.hpp"
#include "kbuild/server/store.hpp"

namespace kbuild::server {

using db::Statement;
using db::Transaction;

namespace {

constexpr const char* k_discussion_columns =
    "num, object_id, is_pr, title, author, status, created_ms, target, base, merge_commit";

Discussion discussion_from(const Statement& row) {
  return {row.integer(0), row.text(1), row.integer(2) != 0,
          row.text(3),    row.text(4), parse_status(row.text(5)).value_or(DiscussionStatus::open),
          row.integer(6), row.text(7), row.text(8),
          row.text(9)};
}

std::optional<EventKind> parse_event_kind(std::string_view name) {
  for (EventKind kind : {EventKind::comment, EventKind::commit, EventKind::status_change, EventKind::title_change})
    if (event_kind_name(kind) == name) return kind;
  return std::nullopt;
}

}  // namespace

std::string_view status_name(DiscussionStatus status) {
  switch (status) {
    case DiscussionStatus::draft:
      return "draft";
    case DiscussionStatus::open:
      return "open";
    case DiscussionStatus::closed:
      return "closed";
    case DiscussionStatus::merged:
      return "merged";
  }
  return "open";
}

std::optional<DiscussionStatus> parse_status(std::string_view name) {
  for (DiscussionStatus status :
       {DiscussionStatus::draft, DiscussionStatus::open, DiscussionStatus::closed, DiscussionStatus::merged})
    if (status_name(status) == name) return status;
  return std::nullopt;
}

std::string_view event_kind_name(EventKind kind) {
  switch (kind) {
    case EventKind::comment:
      return "comment";
    case EventKind::commit:
      return "commit";
    case EventKind::status_change:
      return "status-change";
    case EventKind::title_change:
      return "title-change";
  }
  return "comment";
}

// --- helpers: the caller holds m_mutex and an open transaction ---

Result<std::int64_t> Store::next_discussion_number(std::int64_t repo) {
  KB_TRY_ASSIGN(auto highest,
                Statement::prepare(m_db,
                                   "SELECT MAX(COALESCE((SELECT MAX(num) FROM discussions WHERE repo = ?1), 0), "
                                   "COALESCE((SELECT MAX(CAST(name AS INTEGER)) FROM refs WHERE repo = ?1 "
                                   "AND kind = 'pr'), 0))"));
  highest.bind(1, repo);
  KB_TRY_ASSIGN(bool row, highest.step());
  return (row ? highest.integer(0) : 0) + 1;
}

Result<void> Store::insert_discussion(std::int64_t repo, const Discussion& d) {
  KB_TRY_ASSIGN(auto insert,
                Statement::prepare(m_db, std::string("INSERT INTO discussions (repo, ") + k_discussion_columns +
                                             ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"));
  insert.bind(1, repo).bind(2, d.num).bind(3, d.object_id).bind(4, std::int64_t{d.is_pr}).bind(5, d.title);
  insert.bind(6, d.author).bind(7, status_name(d.status)).bind(8, d.created_ms).bind(9, d.target).bind(10, d.base);
  insert.bind(11, d.merge_commit);
  return insert.run();
}

Result<DiscussionEvent> Store::insert_event(std::int64_t repo, std::int64_t num, DiscussionEvent event) {
  event.id = random_hex(12);
  KB_TRY_ASSIGN(auto insert,
                Statement::prepare(m_db,
                                   "INSERT INTO discussion_events (repo, num, seq, id, kind, author, time_ms, text, "
                                   "detail) VALUES (?1, ?2, (SELECT COALESCE(MAX(seq), 0) + 1 FROM discussion_events "
                                   "WHERE repo = ?1 AND num = ?2), ?3, ?4, ?5, ?6, ?7, ?8)"));
  insert.bind(1, repo).bind(2, num).bind(3, event.id).bind(4, event_kind_name(event.kind)).bind(5, event.author);
  insert.bind(6, event.time_ms).bind(7, event.text).bind(8, event.detail);
  KB_TRY(insert.run());
  return event;
}

Result<void> Store::note_pull_request_commit(std::int64_t repo, std::string_view number, const Commit& commit) {
  if (number.empty() || number.size() > 18 || number.find_first_not_of("0123456789") != std::string_view::npos)
    return {};
  std::int64_t num = std::stoll(std::string(number));
  KB_TRY_ASSIGN(auto open, Statement::prepare(m_db,
                                              "UPDATE discussions SET status = 'open' WHERE repo = ?1 AND num = ?2 "
                                              "AND is_pr = 1 AND status = 'draft'"));
  open.bind(1, repo).bind(2, num);
  KB_TRY(open.run());
  KB_TRY_ASSIGN(auto exists, Statement::prepare(m_db, "SELECT 1 FROM discussions WHERE repo = ?1 AND num = ?2"));
  exists.bind(1, repo).bind(2, num);
  KB_TRY_ASSIGN(bool row, exists.step());
  if (row)
    KB_TRY(insert_event(repo, num, {"", EventKind::commit, commit.author, commit.time_ms, commit.title, commit.oid}));
  return {};
}

// --- public ---

Result<Discussion> Store::create_discussion(std::int64_t repo, const NewDiscussion& request) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto tx, Transaction::begin(m_db));
  KB_TRY_ASSIGN(std::int64_t number, next_discussion_number(repo));
  Discussion discussion{number,
                        random_hex(12),
                        request.is_pr,
                        request.title,
                        request.author,
                        request.is_pr ? DiscussionStatus::draft : DiscussionStatus::open,
                        request.time_ms,
                        request.is_pr ? request.target : "",
                        request.is_pr ? request.base : "",
                        ""};
  if (request.is_pr) {
    KB_TRY_ASSIGN(auto ref,
                  Statement::prepare(m_db, "INSERT INTO refs (repo, kind, name, target) VALUES (?1, 'pr', ?2, ?3)"));
    ref.bind(1, repo).bind(2, std::to_string(number)).bind(3, request.base);
    KB_TRY(ref.run());
  }
  KB_TRY(insert_discussion(repo, discussion));
  KB_TRY(
      insert_event(repo, number, {"", EventKind::comment, request.author, request.time_ms, request.description, ""}));
  KB_TRY(tx.commit());
  return discussion;
}

Result<std::vector<Discussion>> Store::list_discussions(std::int64_t repo) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto select, Statement::prepare(m_db, std::string("SELECT ") + k_discussion_columns +
                                                          " FROM discussions WHERE repo = ?1 ORDER BY num DESC"));
  select.bind(1, repo);
  std::vector<Discussion> out;
  while (true) {
    KB_TRY_ASSIGN(bool row, select.step());
    if (!row) break;
    out.push_back(discussion_from(select));
  }
  return out;
}

Result<std::optional<Discussion>> Store::find_discussion(std::int64_t repo, std::int64_t num) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto select, Statement::prepare(m_db, std::string("SELECT ") + k_discussion_columns +
                                                          " FROM discussions WHERE repo = ?1 AND num = ?2"));
  select.bind(1, repo).bind(2, num);
  KB_TRY_ASSIGN(bool row, select.step());
  if (!row) return std::optional<Discussion>();
  return std::optional<Discussion>(discussion_from(select));
}

Result<std::vector<DiscussionEvent>> Store::discussion_events(std::int64_t repo, std::int64_t num) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto select, Statement::prepare(m_db,
                                                "SELECT id, kind, author, time_ms, text, detail FROM discussion_events "
                                                "WHERE repo = ?1 AND num = ?2 ORDER BY seq"));
  select.bind(1, repo).bind(2, num);
  std::vector<DiscussionEvent> out;
  while (true) {
    KB_TRY_ASSIGN(bool row, select.step());
    if (!row) break;
    auto kind = parse_event_kind(select.text(1));
    if (!kind) continue;
    out.push_back({select.text(0), *kind, select.text(2), select.integer(3), select.text(4), select.text(5)});
  }
  return out;
}

Result<DiscussionEvent> Store::add_discussion_event(std::int64_t repo, std::int64_t num, DiscussionEvent event,
                                                    std::optional<DiscussionStatus> status) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto tx, Transaction::begin(m_db));
  if (status) {
    KB_TRY_ASSIGN(auto update,
                  Statement::prepare(m_db, "UPDATE discussions SET status = ?1 WHERE repo = ?2 AND num = ?3"));
    update.bind(1, status_name(*status)).bind(2, repo).bind(3, num);
    KB_TRY(update.run());
  }
  KB_TRY_ASSIGN(DiscussionEvent added, insert_event(repo, num, std::move(event)));
  KB_TRY(tx.commit());
  return added;
}

Result<CommitOutcome> Store::merge_pull_request(std::int64_t repo, std::int64_t num, std::string_view target,
                                                std::string_view expected_head, const CommitRequest& request) {
  std::lock_guard lock(m_mutex);
  KB_TRY_ASSIGN(auto tx, Transaction::begin(m_db));
  KB_TRY_ASSIGN(Commit commit, insert_commit(repo, expected_head, request));
  KB_TRY_ASSIGN(CasStatus swapped, swap_ref(repo, RefKind::branch, target, expected_head, commit.oid));
  if (swapped != CasStatus::done) return CommitOutcome{swapped, {}};
  KB_TRY_ASSIGN(auto merged, Statement::prepare(m_db,
                                                "UPDATE discussions SET status = 'merged', merge_commit = ?1 "
                                                "WHERE repo = ?2 AND num = ?3"));
  merged.bind(1, commit.oid).bind(2, repo).bind(3, num);
  KB_TRY(merged.run());
  KB_TRY(insert_event(repo, num, {"", EventKind::status_change, request.author, request.time_ms, "merged", ""}));
  KB_TRY(tx.commit());
  return CommitOutcome{CasStatus::done, std::move(commit)};
}

}  // namespace kbuild::server
