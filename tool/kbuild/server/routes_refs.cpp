// Refs: the listing, branches and tags.

#include "kbuild/server/handlers.hpp"

namespace kbuild::server {

Outcome<Reply> Handlers::refs(const Match& m) {
  KB_TRY_ASSIGN(auto refs, lift(m_store.list_refs(m.repo.key)));
  Json branches = Json::array(), tags = Json::array(), prs = Json::array();
  for (const auto& ref : refs) {
    Json item = {{"name", ref.kind == RefKind::pr ? ref.full_name() : ref.name},
                 {"ref", ref.full_name()},
                 {"targetCommit", ref.target}};
    (ref.kind == RefKind::branch ? branches : ref.kind == RefKind::tag ? tags : prs).push_back(std::move(item));
  }
  Json body = {{"branches", branches}, {"tags", tags}, {"converts", Json::array()}};
  if (m_c.flag("include_prs")) body["pullRequests"] = prs;
  return json_reply(body, m_c.head);
}

namespace {

/// Refuses a new branch or tag called `name` when git or the Hub would read the name as something else
/// (wire.hpp: is_unambiguous_ref_name: 400), or when a ref of the other kind has it or git could not
/// keep it next to an existing ref of its kind (409).
Outcome<void> check_new_ref(Store& store, const Repo& repo, RefKind kind, const std::string& name) {
  const char* what = kind == RefKind::branch ? "branch" : "tag";
  if (!is_valid_ref_name(name)) return bad_request(std::string("invalid ") + what + " name \"" + name + "\"");
  if (!is_unambiguous_ref_name(name))
    return bad_request(std::string("ambiguous ") + what + " name \"" + name +
                       "\": names like a commit id (40 or 64 hex), HEAD, starting with refs/, or holding a "
                       "percent-escape of '.', '/' or '\\' are refused");
  RefKind other = kind == RefKind::branch ? RefKind::tag : RefKind::branch;
  KB_TRY_ASSIGN(auto refs, lift(store.list_refs(repo.key)));
  // git keeps refs as files: refs/heads/main and refs/heads/main/sub cannot both exist.
  for (const auto& ref : refs)
    if (ref.kind == kind && (ref.name.starts_with(name + "/") || name.starts_with(ref.name + "/")))
      return failure(409, "Conflict",
                     std::string("a ") + what + " named " + ref.name + " exists, and git cannot keep " + name +
                         " next to it (one would be a folder of the other); choose another name");
  bool existing =
      std::any_of(refs.begin(), refs.end(), [&](const auto& ref) { return ref.kind == other && ref.name == name; });
  if (existing)
    return failure(409, "Conflict",
                   std::string("a ") + (other == RefKind::branch ? "branch" : "tag") + " named " + name +
                       " exists; a " + what + " of the same name would be ambiguous");
  return {};
}

}  // namespace

Outcome<Reply> Handlers::create_branch(const Match& m) {
  KB_TRY(check_new_ref(m_store, m.repo, RefKind::branch, m.name));
  KB_TRY_ASSIGN(std::string text, body(m_config.limits.max_json_body));
  KB_TRY_ASSIGN(std::string start, parsed(parse_branch_start(text)));
  KB_TRY_ASSIGN(std::string target, resolve_revision(m.repo, start));
  KB_TRY_ASSIGN(bool created, lift(m_store.create_ref(m.repo.key, RefKind::branch, m.name, target)));
  if (!created) return failure(409, "Conflict", "Reference refs/heads/" + m.name + " already exists");
  return json_reply(Json::object(), m_c.head);
}

Outcome<Reply> Handlers::delete_branch(const Match& m) {
  if (!is_valid_ref_name(m.name)) return bad_request("invalid branch name \"" + m.name + "\"");
  if (m.name == "main") return bad_request("Cannot delete the default branch main");
  KB_TRY_ASSIGN(bool deleted, lift(m_store.delete_ref(m.repo.key, RefKind::branch, m.name)));
  if (!deleted) return revision_not_found(m.name);
  return json_reply(Json::object(), m_c.head);
}

// POST .../tag/{rev} with {"tag": name}: tags the revision ("main" when the path has none).
Outcome<Reply> Handlers::create_tag(const Match& m) {
  KB_TRY_ASSIGN(std::string text, body(m_config.limits.max_json_body));
  KB_TRY_ASSIGN(std::string tag, parsed(parse_tag_name(text)));
  KB_TRY(check_new_ref(m_store, m.repo, RefKind::tag, tag));
  KB_TRY_ASSIGN(std::string target, resolve_revision(m.repo, m.revision.empty() ? "main" : m.revision));
  KB_TRY_ASSIGN(bool created, lift(m_store.create_ref(m.repo.key, RefKind::tag, tag, target)));
  if (!created) return failure(409, "Conflict", "Tag " + tag + " already exists (refs/tags/" + tag + ")");
  return json_reply(Json::object(), m_c.head);
}

Outcome<Reply> Handlers::delete_tag(const Match& m) {
  KB_TRY_ASSIGN(bool deleted, lift(m_store.delete_ref(m.repo.key, RefKind::tag, m.name)));
  if (!deleted) return revision_not_found(m.name);
  return json_reply(Json::object(), m_c.head);
}

}  // namespace kbuild::server
