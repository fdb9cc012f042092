// Account, organisation and repository endpoints: whoami, validate-yaml, agent-harnesses, repos
// create/delete, organisation overview, repo info, and the Xet token refusals.

#include "kbuild/server/handlers.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::server {

Outcome<Reply> Handlers::whoami(const Match&) {
  Json orgs = Json::array();
  for (const auto& name : m_config.organizations_of(*m_c.token)) orgs.push_back({{"name", name}});
  // Only "name" among name/user/login/username: the Rust client rejects duplicates (§2.3).
  Json body = {
      {"type", "user"},
      {"name", m_c.token->user},
      {"fullname", m_c.token->user},
      {"orgs", orgs},
      {"auth", {{"type", "access_token"}, {"accessToken", {{"displayName", "kbuild hub token"}, {"role", "write"}}}}}};
  return json_reply(body, m_c.head);
}

Outcome<Reply> Handlers::validate_yaml(const Match&) { return json_reply(Json::object(), m_c.head); }

Outcome<Reply> Handlers::agent_harnesses(const Match&) {
  // huggingface_hub >= 2.x fetches this registry once a day to tag its user agent; none known here.
  return json_reply({{"standardEnvVars", Json::array()}, {"harnesses", Json::object()}}, m_c.head);
}

Outcome<Reply> Handlers::organization(const Match& m) {
  auto organization = m_config.find_organization(m.name);
  if (!organization) return not_found("Organization " + m.name + " not found");
  const std::string& name = organization->name;
  // Private repos count only for those who may see them (find_visible's rule): an anonymous count
  // that grows would tell that a private repo was created.
  KB_TRY_ASSIGN(auto counts, lift(m_store.count_repos(name, m_c.token && m_c.token->may_write(name))));
  std::int64_t members = 0;
  for (const auto& token : m_config.tokens)
    if (util::ascii_lowercase(token.user) != util::ascii_lowercase(name) && token.may_write(name)) ++members;
  Json body = {{"name", name},
               {"fullname", name},
               {"avatarUrl", ""},
               {"type", "org"},
               {"isVerified", false},
               {"isFollowing", false},
               {"numUsers", members},
               {"numModels", counts[RepoType::model]},
               {"numDatasets", counts[RepoType::dataset]},
               {"numSpaces", counts[RepoType::space]},
               {"numKernels", counts[RepoType::kernel]},
               {"numFollowers", 0},
               {"numPapers", 0},
               {"trustedKernelPublisher", organization->trusted_kernel_publisher}};
  return json_reply(body, m_c.head);
}

// The route checked for a token; the namespace comes from the body and is checked here.
Outcome<Reply> Handlers::create_repo(const Match&) {
  KB_TRY_ASSIGN(std::string text, body(m_config.limits.max_json_body));
  KB_TRY_ASSIGN(CreateRepoRequest request, parsed(parse_create_repo(text, m_c.token->user)));
  const RepoId& id = request.id;
  KB_TRY(require_write(id.ns));

  CommitRequest initial;
  initial.title = "initial commit";
  initial.author = "system";
  initial.time_ms = m_c.now;
  std::string attributes(default_gitattributes());
  KB_TRY(lift(m_store.put_blob(attributes)));
  initial.files.emplace(".gitattributes", regular_entry(".gitattributes", attributes));
  KB_TRY_ASSIGN(auto repo, lift(m_store.create_repo(id, request.is_private, initial)));
  std::string url = repo_url(id);
  if (!repo) {
    // It exists, perhaps spelled in another case (ids are case-insensitive): the URL is the existing one's.
    KB_TRY_ASSIGN(auto existing, lift(m_store.find_repo(id)));
    if (existing) url = repo_url(existing->id);
    Failure conflict{409, "Conflict", "You already created this " + std::string(repo_type_name(id.type)) + " repo", {}};
    Reply reply = error_reply(conflict, m_c.head);
    // Python's create_repo(exist_ok=True) still reads "url" from the 409 body (§3.1).
    Json body = {{"error", conflict.message}, {"url", url}};
    reply.response.body = dump(body);
    reply.response.headers.set("Content-Length", std::to_string(reply.response.body.size()));
    if (m_c.head) reply.response.body.clear();
    return reply;
  }
  return json_reply({{"url", url}, {"name", id.full_name()}, {"id", repo->object_id}}, m_c.head);
}

// The route checked for a token; the repo comes from the body and is checked here.
Outcome<Reply> Handlers::delete_repo(const Match&) {
  KB_TRY_ASSIGN(std::string text, body(m_config.limits.max_json_body));
  KB_TRY_ASSIGN(RepoId id, parsed(parse_delete_repo(text, m_c.token->user)));
  KB_TRY_ASSIGN(Repo repo, write_repo(id));
  KB_TRY(lift(m_store.delete_repo(repo.key)));
  return text_reply("OK", m_c.head);
}

namespace {

Json siblings_json(const FileMap& files, bool blobs, std::uint64_t& used) {
  Json siblings = Json::array();
  for (const auto& [path, file] : files) {
    Json sibling = {{"rfilename", path}};
    if (blobs) {
      sibling["size"] = file.size;
      sibling["blobId"] = file.blob_id;
      if (file.lfs) sibling["lfs"] = lfs_json(file, "sha256");
    }
    siblings.push_back(std::move(sibling));
    used += file.size;
  }
  return siblings;
}

}  // namespace

// GET /api/{T}/{id} (revision main) and /api/{T}/{id}/revision/{rev}.
Outcome<Reply> Handlers::repo_info(const Match& m) {
  const Repo& repo = m.repo;
  const RepoId& id = m.id;
  KB_TRY_ASSIGN(std::string oid, resolve_revision(repo, m.revision.empty() ? "main" : m.revision));
  KB_TRY_ASSIGN(auto commit, lift(m_store.find_commit(repo.key, oid)));
  KB_TRY_ASSIGN(FileMap files, files_at(repo, oid));
  std::uint64_t used = 0;
  Json siblings = siblings_json(files, m_c.flag("blobs"), used);
  std::string modified = iso8601(commit ? commit->time_ms : repo.created_ms);
  Json all = {{"_id", repo.object_id},
              {"id", id.full_name()},
              {"author", id.ns},
              {"sha", oid},
              {"lastModified", modified},
              {"createdAt", iso8601(repo.created_ms)},
              {"private", repo.is_private},
              {"gated", false},
              {"disabled", false},
              {"downloads", 0},
              {"likes", 0},
              {"tags", Json::array()},
              {"repoType", repo_type_name(id.type)},
              {"siblings", siblings},
              {"usedStorage", used},
              {"xetEnabled", false}};
  std::vector<std::string> expand;
  for (const auto& [key, value] : m_c.query)
    if (key == "expand" || key == "expand[]") expand.push_back(value);
  if (expand.empty()) {
    all.erase("usedStorage");
    all.erase("xetEnabled");
    return json_reply(all, m_c.head);
  }
  // expand=...: only the requested properties (plus the ids).
  Json some = {{"_id", repo.object_id}, {"id", id.full_name()}};
  for (const auto& property : expand)
    if (all.contains(property)) some[property] = all[property];
  return json_reply(some, m_c.head);
}

Outcome<Reply> Handlers::xet_token(const Match&) {
  return bad_request(
      "this server stores files with Git LFS only and has no Xet storage: set HF_HUB_DISABLE_XET=1 "
      "(or uninstall hf_xet) so that huggingface_hub uploads with LFS");
}

}  // namespace kbuild::server
