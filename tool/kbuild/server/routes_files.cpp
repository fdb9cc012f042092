// Files of a revision: tree listings, paths-info and downloads (resolve).

#include <algorithm>
#include <set>

#include "kbuild/server/handlers.hpp"

namespace kbuild::server {

namespace {

struct TreeItem {
  std::string path;
  const FileEntry* file = nullptr;  ///< nullptr for a directory
  std::string oid;                  ///< blob id or tree id
};

Json tree_item_json(const TreeItem& item, const Commit* last_commit) {
  Json out;
  if (item.file) {
    out = {{"type", "file"}, {"oid", item.oid}, {"size", item.file->size}, {"path", item.path}};
    if (item.file->lfs) out["lfs"] = lfs_json(*item.file, "oid");
  } else {
    out = {{"type", "directory"}, {"oid", item.oid}, {"path", item.path}};
  }
  if (last_commit)
    out["lastCommit"] = {
        {"id", last_commit->oid}, {"title", last_commit->title}, {"date", iso8601(last_commit->time_ms)}};
  return out;
}

/// path -> id of every file and directory (except the root) of a file list.
std::map<std::string, std::string> entry_ids(const FileMap& files) {
  std::map<std::string, std::string> ids = tree_ids(files);
  ids.erase("");
  for (const auto& [path, entry] : files) ids[path] = entry.blob_id;
  return ids;
}

/// Entries below `folder` ("" = root): direct children, or all descendants when recursive. nullopt
/// when the folder does not exist.
std::optional<std::vector<TreeItem>> list_folder(const FileMap& files, const std::map<std::string, std::string>& trees,
                                                 const std::string& folder, bool recursive) {
  if (!folder.empty() && !trees.contains(folder)) return std::nullopt;
  std::string prefix = folder.empty() ? "" : folder + "/";
  std::vector<TreeItem> items;
  auto wanted = [&](const std::string& path) {
    if (!path.starts_with(prefix) || path.size() == prefix.size()) return false;
    return recursive || path.find('/', prefix.size()) == std::string::npos;
  };
  for (const auto& [path, id] : trees)
    if (!path.empty() && wanted(path)) items.push_back({path, nullptr, id});
  for (const auto& [path, entry] : files)
    if (wanted(path)) items.push_back({path, &entry, entry.blob_id});
  std::sort(items.begin(), items.end(), [](const TreeItem& a, const TreeItem& b) { return a.path < b.path; });
  return items;
}

/// The newest commit that gave each item its current content (expand=true).
Outcome<std::map<std::string, Commit>> last_commits(Store& store, const Repo& repo, const std::string& head,
                                                    const std::vector<TreeItem>& items) {
  constexpr int k_max_depth = 200;  // bounds the work on long histories; older entries get the oldest seen
  std::map<std::string, Commit> found;
  KB_TRY_ASSIGN(auto head_commit, lift(store.find_commit(repo.key, head)));
  if (!head_commit) return found;
  std::set<std::string> open;
  for (const auto& item : items) {
    found[item.path] = *head_commit;
    open.insert(item.path);
  }
  Commit current = *head_commit;
  for (int depth = 0; depth < k_max_depth && !open.empty() && !current.parent.empty(); ++depth) {
    KB_TRY_ASSIGN(auto parent, lift(store.find_commit(repo.key, current.parent)));
    if (!parent) break;
    KB_TRY_ASSIGN(FileMap parent_files, lift(store.files(repo.key, parent->oid)));
    auto parent_ids = entry_ids(parent_files);
    for (const auto& item : items) {
      if (!open.contains(item.path)) continue;
      auto it = parent_ids.find(item.path);
      if (it != parent_ids.end() && it->second == item.oid)
        found[item.path] = *parent;
      else
        open.erase(item.path);
    }
    current = *parent;
  }
  return found;
}

/// The JSON array of `items`, with their last commits when `expand`.
Outcome<Json> items_json(Store& store, const Repo& repo, const std::string& head, const std::vector<TreeItem>& items,
                         bool expand) {
  std::map<std::string, Commit> last;
  if (expand) {
    KB_TRY_ASSIGN(last, last_commits(store, repo, head, items));
  }
  Json body = Json::array();
  for (const auto& item : items) {
    auto it = last.find(item.path);
    body.push_back(tree_item_json(item, it == last.end() ? nullptr : &it->second));
  }
  return body;
}

}  // namespace

Outcome<Reply> Handlers::tree(const Match& m) {
  KB_TRY_ASSIGN(std::string oid, resolve_revision(m.repo, m.revision));
  std::string path = folder_path(m.path);
  if (!path.empty() && !is_safe_repo_path(path)) return bad_request("invalid path \"" + m.path + "\"");
  KB_TRY_ASSIGN(FileMap files, files_at(m.repo, oid));
  auto trees = tree_ids(files);
  bool recursive = m_c.flag("recursive"), expand = m_c.flag("expand");
  auto items = list_folder(files, trees, path, recursive);
  if (!items) return failure(404, "EntryNotFound", "Folder " + path + " not found at revision " + m.revision);

  std::size_t page = expand ? m_options.tree_page_size_expanded : m_options.tree_page_size;
  std::size_t cursor = 0;
  if (auto text = m_c.param("cursor")) {
    if (text->empty() || !std::all_of(text->begin(), text->end(), ::isdigit) || text->size() > 12)
      return bad_request("invalid cursor");
    cursor = std::stoull(*text);
  }
  std::size_t end = std::min(items->size(), cursor + page);
  std::vector<TreeItem> slice(items->begin() + static_cast<std::ptrdiff_t>(std::min(cursor, items->size())),
                              items->begin() + static_cast<std::ptrdiff_t>(end));
  KB_TRY_ASSIGN(Json body, items_json(m_store, m.repo, oid, slice, expand));
  Reply reply = json_reply(body, m_c.head);
  if (end < items->size()) {
    // Later pages list the resolved commit, so a concurrent commit cannot shift them.
    std::string next = api_url(m.id) + "/tree/" + oid + (path.empty() ? "" : "/" + net::url_encode(path, true)) +
                       "?recursive=" + (recursive ? "true" : "false") + "&expand=" + (expand ? "true" : "false") +
                       "&cursor=" + std::to_string(end);
    reply.response.headers.set("Link", "<" + next + ">; rel=\"next\"");
  }
  return reply;
}

Outcome<Reply> Handlers::paths_info(const Match& m) {
  KB_TRY_ASSIGN(std::string oid, resolve_revision(m.repo, m.revision));
  KB_TRY_ASSIGN(std::string text, body(m_config.limits.max_json_body));
  KB_TRY_ASSIGN(PathsInfoRequest request,
                parsed(parse_paths_info(text, m_c.request.headers.get("content-type").value_or(""))));
  KB_TRY_ASSIGN(FileMap files, files_at(m.repo, oid));
  auto trees = tree_ids(files);
  std::vector<TreeItem> items;
  for (const auto& raw : request.paths) {
    std::string path = folder_path(raw);
    if (path.empty()) continue;
    if (!is_safe_repo_path(path)) return bad_request("invalid path \"" + raw + "\"");
    if (auto it = files.find(path); it != files.end())
      items.push_back({path, &it->second, it->second.blob_id});
    else if (auto dir = trees.find(path); dir != trees.end() && !path.empty())
      items.push_back({path, nullptr, dir->second});
  }
  KB_TRY_ASSIGN(Json body, items_json(m_store, m.repo, oid, items, request.expand));
  return json_reply(body, m_c.head);
}

Outcome<Reply> Handlers::resolve(const Match& m) {
  KB_TRY_ASSIGN(std::string oid, resolve_revision(m.repo, m.revision));
  const std::string& path = m.path;
  if (!is_safe_repo_path(path)) return bad_request("invalid path \"" + path + "\"");
  KB_TRY_ASSIGN(FileMap files, files_at(m.repo, oid));
  auto it = files.find(path);
  if (it == files.end())
    return std::unexpected(Failure{
        404, "EntryNotFound", "Entry not found: " + path + " at revision " + m.revision, {{"X-Repo-Commit", oid}}});
  const FileEntry& file = it->second;
  Reply reply;
  auto& headers = reply.response.headers;
  headers.set("Content-Type", "application/octet-stream");
  headers.set("ETag", "\"" + (file.lfs ? file.sha256 : file.blob_id) + "\"");
  headers.set("X-Repo-Commit", oid);
  headers.set("Accept-Ranges", "bytes");
  bool unsatisfiable = false;
  std::optional<ByteRange> range;
  if (!m_c.head) range = parse_range(m_c.request.headers.get("range"), file.size, unsatisfiable);
  if (unsatisfiable)
    return std::unexpected(Failure{416,
                                   "RangeNotSatisfiable",
                                   "range not satisfiable for " + path,
                                   {{"Content-Range", "bytes */" + std::to_string(file.size)}}});
  std::uint64_t first = range ? range->first : 0;
  std::uint64_t length = range ? range->last - range->first + 1 : file.size;
  reply.response.status = range ? 206 : 200;
  if (range)
    headers.set("Content-Range", "bytes " + std::to_string(range->first) + "-" + std::to_string(range->last) + "/" +
                                     std::to_string(file.size));
  headers.set("Content-Length", std::to_string(length));
  if (!m_c.head && length > 0) reply.file = FileBody{m_store.blob_path(file.sha256), first, length};
  return reply;
}

}  // namespace kbuild::server
