#include "kbuild/server/router.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "kbuild/util/hash.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::server {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

// ---------------------------------------------------------------------------------------------
// Failures and replies

/// An HTTP error answer; handlers return it as the error of an Outcome.
struct Failure {
  int status = 400;
  std::string code;
  std::string message;
  std::vector<std::pair<std::string, std::string>> headers;  ///< extra headers (X-Repo-Commit)
};

template <class T>
using Outcome = std::expected<T, Failure>;

std::unexpected<Failure> failure(int status, std::string code, std::string message) {
  return std::unexpected(Failure{status, std::move(code), std::move(message), {}});
}
std::unexpected<Failure> bad_request(std::string message) { return failure(400, "BadRequest", std::move(message)); }
std::unexpected<Failure> not_found(std::string message) { return failure(404, "NotFound", std::move(message)); }
std::unexpected<Failure> revision_not_found(std::string_view revision) {
  return failure(404, "RevisionNotFound", "Invalid rev id: " + std::string(revision));
}
std::unexpected<Failure> too_large(std::uint64_t limit) {
  return failure(413, "PayloadTooLarge",
                 "request body larger than the server's limit of " + std::to_string(limit) + " bytes");
}

/// Turns a storage error into a 500.
template <class T>
Outcome<T> lift(Result<T> result) {
  if (!result) return failure(500, "InternalError", result.error().message);
  if constexpr (std::is_void_v<T>)
    return {};
  else
    return std::move(*result);
}

// Header values cannot hold line breaks.
std::string header_safe(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c == '\r' || c == '\n') c = ' ';
  return out;
}

std::string dump(const Json& value) { return value.dump(-1, ' ', false, Json::error_handler_t::replace); }

Reply json_reply(const Json& body, bool head, int status = 200, std::string_view content_type = "application/json") {
  Reply reply;
  reply.response.status = status;
  std::string text = dump(body);
  reply.response.headers.set("Content-Type", std::string(content_type));
  reply.response.headers.set("Content-Length", std::to_string(text.size()));
  if (!head) reply.response.body = std::move(text);
  return reply;
}

Reply text_reply(std::string text, bool head) {
  Reply reply;
  reply.response.status = 200;
  reply.response.headers.set("Content-Type", "text/plain; charset=utf-8");
  reply.response.headers.set("Content-Length", std::to_string(text.size()));
  if (!head) reply.response.body = std::move(text);
  return reply;
}

Reply error_reply(const Failure& error, bool head) {
  Json body = {{"error", error.message}};
  Reply reply = json_reply(body, head, error.status);
  reply.response.headers.set("X-Error-Code", error.code);
  reply.response.headers.set("X-Error-Message", header_safe(error.message));
  for (const auto& [name, value] : error.headers) reply.response.headers.set(name, value);
  return reply;
}

// ---------------------------------------------------------------------------------------------
// Small parsers

const Json* member(const Json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(std::string(key));
  return it == object.end() ? nullptr : &*it;
}

std::optional<std::string> string_member(const Json& object, std::string_view key) {
  const Json* value = member(object, key);
  if (!value || !value->is_string()) return std::nullopt;
  return value->get<std::string>();
}

std::optional<std::int64_t> integer_member(const Json& object, std::string_view key) {
  const Json* value = member(object, key);
  if (!value || !value->is_number_integer()) return std::nullopt;
  return value->get<std::int64_t>();
}

Outcome<Json> parse_json(std::string_view text, bool allow_empty = false) {
  if (allow_empty && util::trim(text).empty()) return Json::object();
  Json value = Json::parse(text, nullptr, false);
  if (value.is_discarded()) return bad_request("the request body is not valid JSON");
  return value;
}

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// application/x-www-form-urlencoded (also used for query strings): '+' is a space.
std::string form_decode(std::string_view text) {
  std::string plus(text);
  std::replace(plus.begin(), plus.end(), '+', ' ');
  auto decoded = hub::url_decode(plus);
  return decoded ? *decoded : plus;
}

std::multimap<std::string, std::string> parse_form(std::string_view text) {
  std::multimap<std::string, std::string> out;
  for (const auto& pair : util::split(text, '&')) {
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    out.emplace(form_decode(pair.substr(0, eq)), eq == std::string::npos ? "" : form_decode(pair.substr(eq + 1)));
  }
  return out;
}

bool truthy(std::string_view value) {
  std::string lower = lowercase(value);
  return lower == "1" || lower == "true" || lower == "yes";
}

/// Base64 decoding with a lookup table (commit lines can carry hundreds of megabytes).
bool decode_base64(std::string_view text, std::string& out) {
  static const auto k_table = [] {
    std::array<std::int8_t, 256> table{};
    table.fill(-1);
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 64; ++i) table[static_cast<unsigned char>(alphabet[i])] = static_cast<std::int8_t>(i);
    return table;
  }();
  out.clear();
  out.reserve(text.size() / 4 * 3);
  unsigned buffer = 0;
  int bits = 0;
  size_t padding = 0, symbols = 0;
  for (char c : text) {
    if (c == '=') {
      ++padding;
      continue;
    }
    if (c == '\n' || c == '\r') continue;
    std::int8_t value = k_table[static_cast<unsigned char>(c)];
    if (value < 0 || padding > 0) return false;
    ++symbols;
    buffer = (buffer << 6) | static_cast<unsigned>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xff));
    }
  }
  return padding <= 2 && symbols % 4 != 1;
}

std::string random_token() {
  thread_local std::random_device device;
  std::string raw;
  while (raw.size() < 16) {
    auto value = device();
    for (int i = 0; i < 4; ++i) raw.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  }
  return util::to_hex(raw.substr(0, 16));
}

std::string join_from(const std::vector<std::string>& parts, size_t first) {
  std::vector<std::string> tail(parts.begin() + static_cast<std::ptrdiff_t>(std::min(first, parts.size())),
                                parts.end());
  return util::join(tail, "/");
}

/// Strips one trailing '/' (folder paths may carry one).
std::string folder_path(std::string path) {
  if (path.ends_with("/")) path.pop_back();
  return path;
}

// ---------------------------------------------------------------------------------------------
// Tree helpers

struct TreeItem {
  std::string path;
  const FileEntry* file = nullptr;  ///< nullptr for a directory
  std::string oid;                  ///< blob id or tree id
};

Json lfs_json(const FileEntry& file, const char* hash_key) {
  return {{hash_key, file.sha256}, {"size", file.size}, {"pointerSize", lfs_pointer(file.sha256, file.size).size()}};
}

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

struct ByteRange {
  std::uint64_t first = 0, last = 0;  // inclusive
};

/// Parses a single "bytes=" range. nullopt: serve everything (no header, multiple or malformed
/// ranges); `unsatisfiable` is set when the range starts beyond the end.
std::optional<ByteRange> parse_range(const std::optional<std::string>& header, std::uint64_t size,
                                     bool& unsatisfiable) {
  unsatisfiable = false;
  if (!header || size == 0) return std::nullopt;
  std::string_view text = util::trim(*header);
  if (!text.starts_with("bytes=")) return std::nullopt;
  text.remove_prefix(6);
  if (text.find(',') != std::string_view::npos) return std::nullopt;
  size_t dash = text.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  auto number = [](std::string_view digits, std::uint64_t& value) {
    if (digits.empty() || digits.size() > 19 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return false;
    value = std::stoull(std::string(digits));
    return true;
  };
  std::string_view from = util::trim(text.substr(0, dash)), to = util::trim(text.substr(dash + 1));
  std::uint64_t a = 0, b = 0;
  if (from.empty()) {  // suffix: the last b bytes
    if (!number(to, b)) return std::nullopt;
    if (b == 0) {
      unsatisfiable = true;
      return std::nullopt;
    }
    return ByteRange{size - std::min(b, size), size - 1};
  }
  if (!number(from, a)) return std::nullopt;
  if (to.empty())
    b = size - 1;
  else if (!number(to, b) || b < a)
    return std::nullopt;
  if (a >= size) {
    unsatisfiable = true;
    return std::nullopt;
  }
  return ByteRange{a, std::min(b, size - 1)};
}

// Copies `length` bytes of `source` from `offset` into a new file `destination`.
Result<void> copy_slice(const fs::path& source, std::uint64_t offset, std::uint64_t length,
                        const fs::path& destination) {
  std::ifstream in(source, std::ios::binary);
  if (!in) return fail("cannot read " + source.string());
  in.seekg(static_cast<std::streamoff>(offset));
  std::ofstream out(destination, std::ios::binary | std::ios::trunc);
  if (!out) return fail("cannot write " + destination.string());
  std::vector<char> buffer(1 << 20);
  while (length > 0) {
    auto chunk = static_cast<std::streamsize>(std::min<std::uint64_t>(length, buffer.size()));
    in.read(buffer.data(), chunk);
    if (in.gcount() != chunk) return fail("short read from " + source.string());
    out.write(buffer.data(), chunk);
    length -= static_cast<std::uint64_t>(chunk);
  }
  out.close();
  if (!out) return fail("cannot write " + destination.string());
  return {};
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Request context

struct Router::Context {
  Context(const hub::HttpRequest& r, bool spool) : request(r), body_is_spool(spool) {}

  const hub::HttpRequest& request;
  bool body_is_spool = false;
  std::string method;
  bool head = false;
  std::vector<std::string> segments;  ///< decoded path segments
  std::multimap<std::string, std::string> query;
  std::shared_ptr<const Config> config;  ///< in force for this request; `token` points into it
  const TokenEntry* token = nullptr;
  bool bad_token = false;  ///< an Authorization header naming no configured token
  std::int64_t now = 0;

  std::optional<std::string> param(std::string_view key) const {
    auto it = query.find(std::string(key));
    if (it == query.end()) return std::nullopt;
    return it->second;
  }
  bool flag(std::string_view key) const { return truthy(param(key).value_or("")); }

  /// Size of the body without reading it.
  std::uint64_t body_size() const {
    if (!request.body_file) return request.body.size();
    if (request.body_length) return *request.body_length;
    std::error_code ec;
    auto size = fs::file_size(*request.body_file, ec);
    return ec || size < request.body_offset ? 0 : size - request.body_offset;
  }
};

namespace {

using Context = Router::Context;

Outcome<std::string> read_body(const Context& context, std::uint64_t limit) {
  std::uint64_t size = context.body_size();
  if (size > limit) return too_large(limit);
  if (!context.request.body_file) return context.request.body;
  std::ifstream in(*context.request.body_file, std::ios::binary);
  if (!in) return failure(500, "InternalError", "cannot read the request body");
  in.seekg(static_cast<std::streamoff>(context.request.body_offset));
  std::string body(size, '\0');
  in.read(body.data(), static_cast<std::streamsize>(size));
  if (static_cast<std::uint64_t>(in.gcount()) != size) return failure(500, "InternalError", "short request body");
  return body;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The handlers. They live in one class with access to the router's parts, so that the dispatch
// table below stays a flat list.

namespace {

class Handlers {
 public:
  Handlers(Store& store, const Config& config, const RouterOptions& options, Context& context)
      : m_store(store), m_config(config), m_options(options), m_c(context) {}

  Outcome<Reply> whoami();
  Outcome<Reply> validate_yaml();
  Outcome<Reply> agent_harnesses();
  Outcome<Reply> create_repo();
  Outcome<Reply> delete_repo();
  Outcome<Reply> organization(const std::string& name);
  Outcome<Reply> repo_info(const RepoId& id, const std::string& revision);
  Outcome<Reply> refs(const RepoId& id);
  Outcome<Reply> branch(const RepoId& id, const std::string& name);
  Outcome<Reply> tag(const RepoId& id, const std::string& name);
  Outcome<Reply> tree(const RepoId& id, const std::string& revision, const std::string& path);
  Outcome<Reply> paths_info(const RepoId& id, const std::string& revision);
  Outcome<Reply> commits(const RepoId& id, const std::string& revision);
  Outcome<Reply> preupload(const RepoId& id, const std::string& revision);
  Outcome<Reply> commit(const RepoId& id, const std::string& revision);
  Outcome<Reply> lfs_batch(const RepoId& id);
  Outcome<Reply> lfs_verify(const RepoId& id);
  Outcome<Reply> lfs_upload(const std::string& oid, const std::optional<std::string>& part);
  Outcome<Reply> resolve(const RepoId& id, const std::string& revision, const std::string& path);

 private:
  std::string repo_url(const RepoId& id) const {
    return m_options.base_url + "/" + std::string(repo_type_url_prefix(id.type)) + id.full_name();
  }
  std::string api_url(const RepoId& id) const {
    return m_options.base_url + "/api/" + std::string(repo_type_plural(id.type)) + "/" + id.full_name();
  }

  Outcome<void> require_method(std::initializer_list<std::string_view> methods) const {
    for (auto method : methods)
      if (m_c.method == method || (method == "GET" && m_c.head)) return {};
    return failure(405, "MethodNotAllowed", "method " + m_c.method + " is not allowed here");
  }
  Outcome<void> require_token() const {
    if (m_c.token) return {};
    return failure(401, "Unauthorized",
                   "Authorization header with a Bearer token is required (create one with kbuild hub token)");
  }
  Outcome<void> require_read() const {
    if (m_config.read == ReadAccess::token) return require_token();
    return {};
  }
  Outcome<void> require_write(std::string_view ns) const {
    KB_TRY(require_token());
    if (!m_c.token->may_write(ns))
      return failure(403, "Forbidden",
                     "the token of " + m_c.token->user + " may not write to namespace " + std::string(ns));
    return {};
  }
  Outcome<Repo> find_visible(const RepoId& id) {
    auto missing = failure(404, "RepoNotFound",
                           "Repository Not Found: " + std::string(repo_type_name(id.type)) + " " + id.full_name());
    if (!is_valid_namespace(id.ns) || !is_valid_repo_name(id.name)) return missing;
    KB_TRY_ASSIGN(auto repo, lift(m_store.find_repo(id)));
    if (!repo) return missing;
    if (repo->is_private && !(m_c.token && m_c.token->may_write(id.ns))) return missing;
    return std::move(*repo);
  }
  Outcome<Repo> read_repo(const RepoId& id) {
    KB_TRY(require_read());
    return find_visible(id);
  }
  Outcome<Repo> write_repo(const RepoId& id) {
    KB_TRY(require_write(id.ns));
    return find_visible(id);
  }

  Outcome<std::string> resolve_revision(const Repo& repo, const std::string& revision);
  Outcome<FileMap> files_at(const Repo& repo, const std::string& commit) {
    return lift(m_store.files(repo.key, commit));
  }
  /// Content of a small text file of a commit ("" when absent or large).
  std::string small_text(const FileMap& files, const std::string& path) {
    auto it = files.find(path);
    if (it == files.end() || it->second.size > (1 << 20)) return {};
    auto content = m_store.read_blob(it->second.sha256);
    return content ? *content : std::string();
  }
  /// The newest commit that gave each item its current content (expand=true).
  Outcome<std::map<std::string, Commit>> last_commits(const Repo& repo, const std::string& head,
                                                      const std::vector<TreeItem>& items);
  Outcome<std::string> body(std::uint64_t limit) { return read_body(m_c, limit); }
  /// The request body as a file inside the store's temp dir, for adopt_blob() or a part rename.
  Outcome<fs::path> body_as_temp_file(std::uint64_t limit);

  Store& m_store;
  const Config& m_config;
  const RouterOptions& m_options;
  Context& m_c;
};

Outcome<std::string> Handlers::resolve_revision(const Repo& repo, const std::string& revision) {
  auto ref = [&](RefKind kind, std::string_view name) { return lift(m_store.find_ref(repo.key, kind, name)); };
  std::optional<std::string> target;
  if (revision.starts_with("refs/heads/")) {
    KB_TRY_ASSIGN(target, ref(RefKind::branch, revision.substr(11)));
  } else if (revision.starts_with("refs/tags/")) {
    KB_TRY_ASSIGN(target, ref(RefKind::tag, revision.substr(10)));
  } else if (revision.starts_with("refs/pr/")) {
    KB_TRY_ASSIGN(target, ref(RefKind::pr, revision.substr(8)));
  } else {
    KB_TRY_ASSIGN(target, ref(RefKind::branch, revision));
    if (!target) {
      KB_TRY_ASSIGN(target, ref(RefKind::tag, revision));
    }
    if (!target && is_commit_oid(revision)) {
      KB_TRY_ASSIGN(auto commit, lift(m_store.find_commit(repo.key, revision)));
      if (commit) target = revision;
    }
  }
  if (!target) return revision_not_found(revision);
  return *target;
}

Outcome<fs::path> Handlers::body_as_temp_file(std::uint64_t limit) {
  const auto& request = m_c.request;
  std::uint64_t size = m_c.body_size();
  if (size > limit) return too_large(limit);
  if (request.body_file && m_c.body_is_spool && request.body_offset == 0) {
    std::error_code ec;
    if (fs::file_size(*request.body_file, ec) == size && !ec) return *request.body_file;
  }
  fs::path temp = m_store.temp_path();
  if (request.body_file) {
    auto copied = copy_slice(*request.body_file, request.body_offset, size, temp);
    if (!copied) {
      std::error_code ec;
      fs::remove(temp, ec);
      return failure(500, "InternalError", copied.error().message);
    }
    return temp;
  }
  std::ofstream out(temp, std::ios::binary);
  out.write(request.body.data(), static_cast<std::streamsize>(request.body.size()));
  out.close();
  if (!out) return failure(500, "InternalError", "cannot write " + temp.string());
  return temp;
}

Outcome<std::map<std::string, Commit>> Handlers::last_commits(const Repo& repo, const std::string& head,
                                                              const std::vector<TreeItem>& items) {
  constexpr int k_max_depth = 200;  // bounds the work on long histories; older entries get the oldest seen
  std::map<std::string, Commit> found;
  KB_TRY_ASSIGN(auto head_commit, lift(m_store.find_commit(repo.key, head)));
  if (!head_commit) return found;
  std::set<std::string> open;
  for (const auto& item : items) {
    found[item.path] = *head_commit;
    open.insert(item.path);
  }
  Commit current = *head_commit;
  for (int depth = 0; depth < k_max_depth && !open.empty() && !current.parent.empty(); ++depth) {
    KB_TRY_ASSIGN(auto parent, lift(m_store.find_commit(repo.key, current.parent)));
    if (!parent) break;
    KB_TRY_ASSIGN(FileMap parent_files, files_at(repo, parent->oid));
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

// --- account and organisation ---

Outcome<Reply> Handlers::whoami() {
  KB_TRY(require_method({"GET"}));
  KB_TRY(require_token());
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

Outcome<Reply> Handlers::validate_yaml() {
  KB_TRY(require_method({"POST"}));
  return json_reply(Json::object(), m_c.head);
}

Outcome<Reply> Handlers::agent_harnesses() {
  KB_TRY(require_method({"GET"}));
  // huggingface_hub >= 2.x fetches this registry once a day to tag its user agent; none known here.
  return json_reply({{"standardEnvVars", Json::array()}, {"harnesses", Json::object()}}, m_c.head);
}

Outcome<Reply> Handlers::organization(const std::string& name) {
  KB_TRY(require_method({"GET"}));
  KB_TRY(require_read());
  auto organization = m_config.find_organization(name);
  if (!organization) return not_found("Organization " + name + " not found");
  KB_TRY_ASSIGN(auto counts, lift(m_store.count_repos(name)));
  std::int64_t members = 0;
  for (const auto& token : m_config.tokens)
    if (token.user != name && token.may_write(name)) ++members;
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

// --- repositories ---

Outcome<Reply> Handlers::create_repo() {
  KB_TRY(require_method({"POST"}));
  KB_TRY(require_token());
  KB_TRY_ASSIGN(std::string text, body(m_config.limits.max_commit_body));
  KB_TRY_ASSIGN(Json request, parse_json(text));
  auto name = string_member(request, "name");
  if (!name) return bad_request("\"name\" (string) is required");
  RepoId id;
  id.name = *name;
  id.ns = string_member(request, "organization").value_or(m_c.token->user);
  if (const Json* type = member(request, "type"); type && !type->is_null()) {
    auto parsed = type->is_string() ? parse_repo_type(type->get<std::string>()) : std::nullopt;
    if (!parsed) return bad_request("\"type\" must be model, dataset, space or kernel");
    id.type = *parsed;
  }
  if (!is_valid_namespace(id.ns)) return bad_request("invalid namespace \"" + id.ns + "\"");
  if (!is_valid_repo_name(id.name))
    return bad_request("invalid repo name \"" + id.name +
                       "\": use letters, digits, '-', '_' and '.', not at the start or end, at most 96 characters");
  bool is_private = false;
  if (const Json* flag = member(request, "private"); flag && flag->is_boolean()) is_private = flag->get<bool>();
  if (auto visibility = string_member(request, "visibility")) {
    if (*visibility != "public" && *visibility != "private" && *visibility != "protected")
      return bad_request("\"visibility\" must be public, private or protected");
    is_private = *visibility == "private";
  }
  KB_TRY(require_write(id.ns));

  CommitRequest initial;
  initial.title = "initial commit";
  initial.author = "system";
  initial.time_ms = m_c.now;
  std::string attributes(default_gitattributes());
  KB_TRY(lift(m_store.put_blob(attributes)));
  initial.files.emplace(".gitattributes", regular_entry(".gitattributes", attributes));
  KB_TRY_ASSIGN(auto repo, lift(m_store.create_repo(id, is_private, initial)));
  std::string url = repo_url(id);
  if (!repo) {
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

Outcome<Reply> Handlers::delete_repo() {
  KB_TRY(require_method({"DELETE"}));
  KB_TRY(require_token());
  KB_TRY_ASSIGN(std::string text, body(m_config.limits.max_commit_body));
  KB_TRY_ASSIGN(Json request, parse_json(text));
  RepoId id;
  id.name = string_member(request, "name").value_or("");
  id.ns = string_member(request, "organization").value_or(m_c.token->user);
  if (auto type = string_member(request, "type")) {
    auto parsed = parse_repo_type(*type);
    if (!parsed) return bad_request("\"type\" must be model, dataset, space or kernel");
    id.type = *parsed;
  }
  KB_TRY(write_repo(id));
  KB_TRY(lift(m_store.delete_repo(id)));
  return text_reply("OK", m_c.head);
}

Outcome<Reply> Handlers::repo_info(const RepoId& id, const std::string& revision) {
  KB_TRY(require_method({"GET"}));
  KB_TRY_ASSIGN(Repo repo, read_repo(id));
  KB_TRY_ASSIGN(std::string oid, resolve_revision(repo, revision));
  KB_TRY_ASSIGN(auto commit, lift(m_store.find_commit(repo.key, oid)));
  KB_TRY_ASSIGN(FileMap files, files_at(repo, oid));
  bool blobs = m_c.flag("blobs");
  Json siblings = Json::array();
  std::uint64_t used = 0;
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

Outcome<Reply> Handlers::refs(const RepoId& id) {
  KB_TRY(require_method({"GET"}));
  KB_TRY_ASSIGN(Repo repo, read_repo(id));
  KB_TRY_ASSIGN(auto refs, lift(m_store.list_refs(repo.key)));
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

Outcome<Reply> Handlers::branch(const RepoId& id, const std::string& name) {
  KB_TRY(require_method({"POST", "DELETE"}));
  KB_TRY_ASSIGN(Repo repo, write_repo(id));
  if (!is_valid_ref_name(name)) return bad_request("invalid branch name \"" + name + "\"");
  if (m_c.method == "DELETE") {
    if (name == "main") return bad_request("Cannot delete the default branch main");
    KB_TRY_ASSIGN(bool deleted, lift(m_store.delete_ref(repo.key, RefKind::branch, name)));
    if (!deleted) return revision_not_found(name);
    return json_reply(Json::object(), m_c.head);
  }
  KB_TRY_ASSIGN(std::string text, body(m_config.limits.max_commit_body));
  KB_TRY_ASSIGN(Json request, parse_json(text, true));
  std::string start = string_member(request, "startingPoint").value_or("main");
  KB_TRY_ASSIGN(std::string target, resolve_revision(repo, start));
  KB_TRY_ASSIGN(bool created, lift(m_store.create_ref(repo.key, RefKind::branch, name, target)));
  if (!created) return failure(409, "Conflict", "Reference refs/heads/" + name + " already exists");
  return json_reply(Json::object(), m_c.head);
}

Outcome<Reply> Handlers::tag(const RepoId& id, const std::string& name) {
  KB_TRY(require_method({"POST", "DELETE"}));
  KB_TRY_ASSIGN(Repo repo, write_repo(id));
  if (m_c.method == "DELETE") {
    KB_TRY_ASSIGN(bool deleted, lift(m_store.delete_ref(repo.key, RefKind::tag, name)));
    if (!deleted) return revision_not_found(name);
    return json_reply(Json::object(), m_c.head);
  }
  // POST /tag/{revision} with {"tag": name}.
  KB_TRY_ASSIGN(std::string text, body(m_config.limits.max_commit_body));
  KB_TRY_ASSIGN(Json request, parse_json(text));
  auto tag = string_member(request, "tag");
  if (!tag) return bad_request("\"tag\" (string) is required");
  if (!is_valid_ref_name(*tag)) return bad_request("invalid tag name \"" + *tag + "\"");
  KB_TRY_ASSIGN(std::string target, resolve_revision(repo, name.empty() ? "main" : name));
  KB_TRY_ASSIGN(bool created, lift(m_store.create_ref(repo.key, RefKind::tag, *tag, target)));
  if (!created) return failure(409, "Conflict", "Tag " + *tag + " already exists (refs/tags/" + *tag + ")");
  return json_reply(Json::object(), m_c.head);
}

// --- listings ---

Outcome<Reply> Handlers::tree(const RepoId& id, const std::string& revision, const std::string& raw_path) {
  KB_TRY(require_method({"GET"}));
  KB_TRY_ASSIGN(Repo repo, read_repo(id));
  KB_TRY_ASSIGN(std::string oid, resolve_revision(repo, revision));
  std::string path = folder_path(raw_path);
  if (!path.empty() && !is_valid_repo_path(path)) return bad_request("invalid path \"" + raw_path + "\"");
  KB_TRY_ASSIGN(FileMap files, files_at(repo, oid));
  auto trees = tree_ids(files);
  bool recursive = m_c.flag("recursive"), expand = m_c.flag("expand");
  auto items = list_folder(files, trees, path, recursive);
  if (!items) return failure(404, "EntryNotFound", "Folder " + path + " not found at revision " + revision);

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
  std::map<std::string, Commit> last;
  if (expand) {
    KB_TRY_ASSIGN(last, last_commits(repo, oid, slice));
  }
  Json body = Json::array();
  for (const auto& item : slice) {
    auto it = last.find(item.path);
    body.push_back(tree_item_json(item, it == last.end() ? nullptr : &it->second));
  }
  Reply reply = json_reply(body, m_c.head);
  if (end < items->size()) {
    // Later pages list the resolved commit, so a concurrent commit cannot shift them.
    std::string next = api_url(id) + "/tree/" + oid + (path.empty() ? "" : "/" + hub::url_encode(path, true)) +
                       "?recursive=" + (recursive ? "true" : "false") + "&expand=" + (expand ? "true" : "false") +
                       "&cursor=" + std::to_string(end);
    reply.response.headers.set("Link", "<" + next + ">; rel=\"next\"");
  }
  return reply;
}

Outcome<Reply> Handlers::paths_info(const RepoId& id, const std::string& revision) {
  KB_TRY(require_method({"POST"}));
  KB_TRY_ASSIGN(Repo repo, read_repo(id));
  KB_TRY_ASSIGN(std::string oid, resolve_revision(repo, revision));
  KB_TRY_ASSIGN(std::string text, body(m_config.limits.max_commit_body));
  std::vector<std::string> paths;
  bool expand = false;
  std::string type = lowercase(m_c.request.headers.get("content-type").value_or(""));
  if (type.starts_with("application/json")) {
    KB_TRY_ASSIGN(Json request, parse_json(text));
    if (const Json* list = member(request, "paths"); list && list->is_array())
      for (const auto& path : *list)
        if (path.is_string()) paths.push_back(path.get<std::string>());
    if (const Json* flag = member(request, "expand"); flag && flag->is_boolean()) expand = flag->get<bool>();
  } else {
    for (const auto& [key, value] : parse_form(text)) {
      if (key == "paths" || key == "paths[]") paths.push_back(value);
      if (key == "expand") expand = truthy(value);
    }
  }
  KB_TRY_ASSIGN(FileMap files, files_at(repo, oid));
  auto trees = tree_ids(files);
  std::vector<TreeItem> items;
  for (const auto& raw : paths) {
    std::string path = folder_path(raw);
    if (auto it = files.find(path); it != files.end())
      items.push_back({path, &it->second, it->second.blob_id});
    else if (auto dir = trees.find(path); dir != trees.end() && !path.empty())
      items.push_back({path, nullptr, dir->second});
  }
  std::map<std::string, Commit> last;
  if (expand) {
    KB_TRY_ASSIGN(last, last_commits(repo, oid, items));
  }
  Json body = Json::array();
  for (const auto& item : items) {
    auto it = last.find(item.path);
    body.push_back(tree_item_json(item, it == last.end() ? nullptr : &it->second));
  }
  return json_reply(body, m_c.head);
}

Outcome<Reply> Handlers::commits(const RepoId& id, const std::string& revision) {
  KB_TRY(require_method({"GET"}));
  KB_TRY_ASSIGN(Repo repo, read_repo(id));
  KB_TRY_ASSIGN(std::string oid, resolve_revision(repo, revision));
  Json body = Json::array();
  for (std::string next = oid; !next.empty() && body.size() < 10000;) {
    KB_TRY_ASSIGN(auto commit, lift(m_store.find_commit(repo.key, next)));
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

// --- uploads ---

Outcome<Reply> Handlers::preupload(const RepoId& id, const std::string& revision) {
  KB_TRY(require_method({"POST"}));
  KB_TRY_ASSIGN(Repo repo, write_repo(id));
  KB_TRY_ASSIGN(std::string oid, resolve_revision(repo, revision));
  KB_TRY_ASSIGN(std::string text, body(m_config.limits.max_commit_body));
  KB_TRY_ASSIGN(Json request, parse_json(text));
  const Json* list = member(request, "files");
  if (!list || !list->is_array()) return bad_request("\"files\" (array) is required");
  KB_TRY_ASSIGN(FileMap files, files_at(repo, oid));
  GitAttributes attributes(small_text(files, ".gitattributes"));
  GitIgnore ignore(string_member(request, "gitIgnore").value_or(small_text(files, ".gitignore")));
  Json answers = Json::array();
  for (const auto& file : *list) {
    auto path = string_member(file, "path");
    auto size = integer_member(file, "size");
    if (!path || !size || *size < 0) return bad_request("each file needs \"path\" (string) and \"size\" (integer)");
    if (!is_valid_repo_path(*path)) return bad_request("invalid path \"" + *path + "\"");
    std::string sample;
    if (!decode_base64(string_member(file, "sample").value_or(""), sample))
      return bad_request("\"sample\" of " + *path + " is not base64");
    bool lfs = use_lfs(attributes, *path, static_cast<std::uint64_t>(*size), sample);
    Json answer = {
        {"path", *path}, {"uploadMode", lfs ? "lfs" : "regular"}, {"shouldIgnore", ignore.is_ignored(*path)}};
    if (auto it = files.find(*path); it != files.end() && it->second.lfs == lfs)
      answer["oid"] = lfs ? it->second.sha256 : it->second.blob_id;
    answers.push_back(std::move(answer));
  }
  return json_reply({{"files", answers}, {"commitOid", oid}}, m_c.head);
}

Outcome<Reply> Handlers::commit(const RepoId& id, const std::string& revision) {
  KB_TRY(require_method({"POST"}));
  KB_TRY_ASSIGN(Repo repo, write_repo(id));
  bool create_pr = m_c.flag("create_pr");
  KB_TRY_ASSIGN(std::string text, body(m_config.limits.max_commit_body));

  // 1. Parse every line; store inline contents right away (blobs are content-addressed, so a commit
  //    that fails later only leaves unreferenced blobs).
  enum class OpKind { inline_file, lfs_file, delete_file, delete_folder };
  struct Op {
    OpKind kind;
    FileEntry entry;  // for additions
    bool binary_sample = false;
  };
  std::vector<Op> ops;
  std::optional<std::string> summary;
  std::string description, parent_commit;
  size_t line_number = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line = util::trim(std::string_view(text).substr(start, end - start));
    start = end + 1;
    if (line.empty()) continue;
    ++line_number;
    std::string where = "commit line " + std::to_string(line_number);
    Json item = Json::parse(line, nullptr, false);
    auto key = string_member(item, "key");
    const Json* value = member(item, "value");
    if (item.is_discarded() || !key || !value || !value->is_object())
      return bad_request(where + ": expected {\"key\": ..., \"value\": {...}}");
    if (*key == "header") {
      if (line_number != 1) return bad_request(where + ": the header must come first");
      summary = string_member(*value, "summary");
      if (!summary) return bad_request("the commit header needs a \"summary\" string");
      description = string_member(*value, "description").value_or("");
      parent_commit = string_member(*value, "parentCommit").value_or("");
      if (!parent_commit.empty() && !is_commit_oid(parent_commit))
        return bad_request("parentCommit must be a 40-character lowercase hex commit id");
      continue;
    }
    if (line_number == 1) return bad_request("the first commit line must be the header");
    auto path = string_member(*value, "path");
    if (!path) return bad_request(where + ": \"path\" (string) is required");
    std::string clean = *key == "deletedFolder" ? folder_path(*path) : *path;
    if (!is_valid_repo_path(clean)) return bad_request(where + ": invalid path \"" + *path + "\"");
    if (*key == "file") {
      auto content = string_member(*value, "content");
      if (!content) return bad_request(where + ": \"content\" (string) is required");
      std::string encoding = string_member(*value, "encoding").value_or("utf-8");
      std::string bytes;
      if (encoding == "base64") {
        if (!decode_base64(*content, bytes)) return bad_request(where + ": content is not valid base64");
      } else if (encoding == "utf-8" || encoding == "utf8") {
        bytes = std::move(*content);
      } else {
        return bad_request(where + ": unknown encoding \"" + encoding + "\"");
      }
      KB_TRY(lift(m_store.put_blob(bytes)));
      bool binary = std::string_view(bytes).substr(0, 512).find('\0') != std::string_view::npos;
      ops.push_back({OpKind::inline_file, regular_entry(clean, bytes), binary});
    } else if (*key == "lfsFile") {
      auto oid = string_member(*value, "oid");
      if (auto algo = string_member(*value, "algo"); algo && *algo != "sha256")
        return bad_request(where + ": only algo \"sha256\" is supported");
      if (!oid || !is_sha256_hex(*oid)) return bad_request(where + ": \"oid\" must be a sha256 (64 lowercase hex)");
      auto stored = m_store.blob_size(*oid);
      if (!stored) return bad_request(where + ": LFS object " + *oid + " of " + clean + " was not uploaded");
      if (auto size = integer_member(*value, "size"); size && static_cast<std::uint64_t>(*size) != *stored)
        return bad_request(where + ": size of " + clean + " does not match the uploaded LFS object");
      ops.push_back({OpKind::lfs_file, lfs_entry(clean, *oid, *stored), false});
    } else if (*key == "deletedFile") {
      ops.push_back({OpKind::delete_file, {clean, 0, {}, {}, false}, false});
    } else if (*key == "deletedFolder") {
      ops.push_back({OpKind::delete_folder, {clean, 0, {}, {}, false}, false});
    } else {
      return bad_request(where + ": unknown key \"" + *key + "\"");
    }
  }
  if (!summary) return bad_request("the commit has no header line");

  // 2. The target: a branch (or an existing pull request), or a new pull request on top of `revision`.
  RefKind kind = RefKind::branch;
  std::string ref_name = revision;
  if (!create_pr) {
    if (revision.starts_with("refs/heads/"))
      ref_name = revision.substr(11);
    else if (revision.starts_with("refs/pr/")) {
      kind = RefKind::pr;
      ref_name = revision.substr(8);
    }
    KB_TRY_ASSIGN(auto head, lift(m_store.find_ref(repo.key, kind, ref_name)));
    if (!head) {
      auto other = resolve_revision(repo, revision);
      if (other) return bad_request("commits must target a branch; " + revision + " is a tag or a commit");
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
    std::map<std::string, bool> inline_added;  // path -> NUL byte in its first 512 bytes
    for (const auto& op : ops) {
      const std::string& path = op.entry.path;
      switch (op.kind) {
        case OpKind::inline_file:
        case OpKind::lfs_file:
          files[path] = op.entry;
          if (op.kind == OpKind::inline_file)
            inline_added[path] = op.binary_sample;
          else
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
    // Inline files get the same LFS-or-regular decision as preupload, under the resulting .gitattributes.
    GitAttributes attributes(small_text(files, ".gitattributes"));
    for (const auto& [path, binary] : inline_added) {
      FileEntry& entry = files[path];
      std::string sample = binary ? std::string(1, '\0') : std::string();
      if (use_lfs(attributes, path, entry.size, sample)) entry = lfs_entry(path, entry.sha256, entry.size);
    }
    for (const auto& [path, entry] : files)
      for (size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1))
        if (files.contains(path.substr(0, slash)))
          return bad_request(path.substr(0, slash) + " is a file, so it cannot also be a folder (" + path + ")");

    CommitRequest request{*summary, description, m_c.token->user, m_c.now, std::move(files)};
    Json answer = {{"success", true}, {"commitOid", ""}, {"commitUrl", ""}, {"hookOutput", ""}};
    if (create_pr) {
      KB_TRY_ASSIGN(auto created, lift(m_store.commit_pull_request(repo.key, head, request)));
      answer["commitOid"] = created.second.oid;
      answer["commitUrl"] = repo_url(id) + "/commit/" + created.second.oid;
      answer["pullRequestUrl"] = repo_url(id) + "/discussions/" + std::to_string(created.first);
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
    answer["commitUrl"] = repo_url(id) + "/commit/" + outcome.commit.oid;
    return json_reply(answer, m_c.head);
  }
  return failure(409, "Conflict", "the branch kept moving during the commit; try again");
}

Outcome<Reply> Handlers::lfs_batch(const RepoId& id) {
  KB_TRY(require_method({"POST"}));
  KB_TRY(write_repo(id));
  KB_TRY_ASSIGN(std::string text, body(m_config.limits.max_commit_body));
  KB_TRY_ASSIGN(Json request, parse_json(text));
  if (string_member(request, "operation").value_or("") != "upload")
    return bad_request("this server only answers LFS \"upload\" batches; download files through /resolve/");
  if (auto algo = string_member(request, "hash_algo"); algo && *algo != "sha256")
    return bad_request("only hash_algo \"sha256\" is supported");
  const Json* objects = member(request, "objects");
  if (!objects || !objects->is_array()) return bad_request("\"objects\" (array) is required");
  KB_TRY(lift(m_store.expire_uploads(m_c.now)));

  const auto& limits = m_config.limits;
  std::string verify = repo_url(id) + ".git/info/lfs/objects/verify";
  Json answers = Json::array();
  for (const auto& object : *objects) {
    auto oid = string_member(object, "oid");
    auto size = integer_member(object, "size");
    Json answer = {{"oid", oid.value_or("")}, {"size", size.value_or(0)}};
    auto reject = [&](std::string message) {
      answer["error"] = {{"code", 422}, {"message", std::move(message)}};
      answers.push_back(answer);
    };
    if (!oid || !is_sha256_hex(*oid)) {
      reject("oid must be a sha256 (64 lowercase hex)");
      continue;
    }
    if (!size || *size < 0) {
      reject("size must be a non-negative integer");
      continue;
    }
    auto bytes = static_cast<std::uint64_t>(*size);
    if (bytes > limits.max_lfs_object) {
      reject("object is larger than the server's limit of " + std::to_string(limits.max_lfs_object) + " bytes");
      continue;
    }
    if (auto stored = m_store.blob_size(*oid)) {
      if (*stored != bytes)
        reject("an object with this oid is stored with another size");
      else
        answers.push_back(answer);  // already stored: no actions, the client skips it
      continue;
    }
    PendingUpload upload{random_token(), *oid, bytes, bytes >= limits.multipart_chunk ? limits.multipart_chunk : 0,
                         m_c.now + m_options.upload_ttl_ms};
    KB_TRY(lift(m_store.add_upload(upload)));
    std::string href = m_options.base_url + "/lfs/upload/" + *oid + "?token=" + upload.token;
    Json action = {{"href", href}, {"expires_in", m_options.upload_ttl_ms / 1000}};
    if (upload.chunk_size > 0) {
      Json header = {{"chunk_size", std::to_string(upload.chunk_size)}};
      std::uint64_t parts = (bytes + upload.chunk_size - 1) / upload.chunk_size;
      for (std::uint64_t part = 1; part <= parts; ++part)
        header[std::to_string(part)] =
            m_options.base_url + "/lfs/upload/" + *oid + "/" + std::to_string(part) + "?token=" + upload.token;
      action["header"] = header;
    }
    answer["authenticated"] = true;
    answer["actions"] = {{"upload", action}, {"verify", {{"href", verify}}}};
    answers.push_back(answer);
  }
  Json body = {{"transfer", "basic"}, {"objects", answers}, {"hash_algo", "sha256"}};
  return json_reply(body, m_c.head, 200, "application/vnd.git-lfs+json");
}

Outcome<Reply> Handlers::lfs_verify(const RepoId& id) {
  KB_TRY(require_method({"POST"}));
  KB_TRY(write_repo(id));
  KB_TRY_ASSIGN(std::string text, body(m_config.limits.max_commit_body));
  KB_TRY_ASSIGN(Json request, parse_json(text));
  auto oid = string_member(request, "oid");
  auto size = integer_member(request, "size");
  if (!oid || !size) return bad_request("\"oid\" and \"size\" are required");
  auto stored = m_store.blob_size(*oid);
  if (!stored || static_cast<std::int64_t>(*stored) != *size) return not_found("LFS object " + *oid + " is not stored");
  return json_reply({{"message", "ok"}}, m_c.head, 200, "application/vnd.git-lfs+json");
}

Outcome<Reply> Handlers::lfs_upload(const std::string& oid, const std::optional<std::string>& part) {
  KB_TRY(require_method({"PUT", "POST"}));
  if (part && m_c.method != "PUT") return failure(405, "MethodNotAllowed", "parts are uploaded with PUT");
  KB_TRY_ASSIGN(auto upload, lift(m_store.find_upload(m_c.param("token").value_or(""), m_c.now)));
  if (!upload || upload->oid != oid) {
    // A retried request after a success whose answer got lost: the object is there, nothing to do.
    if (!part && m_store.blob_size(oid)) return json_reply(Json::object(), m_c.head);
    return not_found("unknown or expired upload URL; ask the LFS batch endpoint again");
  }
  const auto& limits = m_config.limits;
  if (!part && m_c.method == "PUT") {
    if (upload->chunk_size != 0) return bad_request("this upload is multipart: PUT the parts, then POST to complete");
    KB_TRY_ASSIGN(fs::path file, body_as_temp_file(limits.max_lfs_object));
    KB_TRY_ASSIGN(BlobCheck check, lift(m_store.adopt_blob(file, oid, upload->size)));
    if (check == BlobCheck::wrong_size)
      return bad_request("expected " + std::to_string(upload->size) + " bytes for " + oid);
    if (check == BlobCheck::wrong_hash) return bad_request("the uploaded content does not have sha256 " + oid);
    KB_TRY(lift(m_store.remove_upload(upload->token)));
    return json_reply(Json::object(), m_c.head);
  }
  if (upload->chunk_size == 0) return bad_request("this upload is a single PUT to its href");
  std::uint64_t parts = (upload->size + upload->chunk_size - 1) / upload->chunk_size;
  fs::path dir = m_store.upload_dir(upload->token);
  if (part) {
    std::uint64_t number = 0;
    if (part->empty() || part->size() > 9 || !std::all_of(part->begin(), part->end(), ::isdigit) ||
        (number = std::stoull(*part)) < 1 || number > parts)
      return bad_request("part number must be 1 to " + std::to_string(parts));
    std::uint64_t expected = std::min(upload->chunk_size, upload->size - (number - 1) * upload->chunk_size);
    if (m_c.body_size() != expected)
      return bad_request("part " + *part + " must have " + std::to_string(expected) + " bytes");
    KB_TRY_ASSIGN(fs::path file, body_as_temp_file(limits.max_lfs_object));
    auto etag = util::sha256_file_hex(file);
    std::error_code ec;
    fs::create_directories(dir, ec);
    fs::rename(file, dir / std::to_string(number), ec);
    if (!etag || ec) return failure(500, "InternalError", "cannot store part " + *part);
    std::ofstream(dir / (std::to_string(number) + ".etag")) << *etag;
    Reply reply = json_reply(Json::object(), m_c.head);
    reply.response.headers.set("ETag", "\"" + *etag + "\"");
    return reply;
  }
  // Completion: {"oid", "parts": [{"partNumber", "etag"}]}.
  KB_TRY_ASSIGN(std::string text, body(limits.max_commit_body));
  KB_TRY_ASSIGN(Json request, parse_json(text));
  const Json* list = member(request, "parts");
  if (string_member(request, "oid").value_or("") != oid || !list || !list->is_array() || list->size() != parts)
    return bad_request("completion needs \"oid\" " + oid + " and " + std::to_string(parts) + " parts");
  for (std::uint64_t number = 1; number <= parts; ++number) {
    const Json& entry = (*list)[number - 1];
    std::string etag = string_member(entry, "etag").value_or("");
    std::erase(etag, '"');
    std::ifstream stored(dir / (std::to_string(number) + ".etag"));
    std::string expected;
    stored >> expected;
    if (integer_member(entry, "partNumber").value_or(0) != static_cast<std::int64_t>(number) || expected.empty() ||
        etag != expected)
      return bad_request("part " + std::to_string(number) + " is missing or its etag does not match");
  }
  fs::path whole = m_store.temp_path();
  {
    std::ofstream out(whole, std::ios::binary);
    for (std::uint64_t number = 1; number <= parts && out; ++number) {
      std::ifstream in(dir / std::to_string(number), std::ios::binary);
      out << in.rdbuf();
    }
    if (!out) return failure(500, "InternalError", "cannot assemble the uploaded parts");
  }
  KB_TRY_ASSIGN(BlobCheck check, lift(m_store.adopt_blob(whole, oid, upload->size)));
  if (check != BlobCheck::ok)
    return bad_request("the assembled parts do not have sha256 " + oid + " and the announced size");
  KB_TRY(lift(m_store.remove_upload(upload->token)));
  return json_reply(Json::object(), m_c.head);
}

// --- downloads ---

Outcome<Reply> Handlers::resolve(const RepoId& id, const std::string& revision, const std::string& path) {
  KB_TRY(require_method({"GET"}));
  KB_TRY_ASSIGN(Repo repo, read_repo(id));
  KB_TRY_ASSIGN(std::string oid, resolve_revision(repo, revision));
  if (!is_valid_repo_path(path)) return bad_request("invalid path \"" + path + "\"");
  KB_TRY_ASSIGN(FileMap files, files_at(repo, oid));
  auto it = files.find(path);
  if (it == files.end()) {
    Failure missing{
        404, "EntryNotFound", "Entry not found: " + path + " at revision " + revision, {{"X-Repo-Commit", oid}}};
    return std::unexpected(std::move(missing));
  }
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
  if (unsatisfiable) {
    Failure error{416,
                  "RangeNotSatisfiable",
                  "range not satisfiable for " + path,
                  {{"Content-Range", "bytes */" + std::to_string(file.size)}}};
    return std::unexpected(std::move(error));
  }
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

// ---------------------------------------------------------------------------------------------
// Authorization header

/// The token carried by "Bearer <token>" or "Basic base64(user:token)"; nullopt for anything else.
std::optional<std::string> bearer_token(const std::string& header) {
  std::string_view text = util::trim(header);
  size_t space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  std::string scheme = lowercase(text.substr(0, space));
  std::string_view credentials = util::trim(text.substr(space + 1));
  if (scheme == "bearer" && !credentials.empty()) return std::string(credentials);
  if (scheme == "basic") {
    std::string decoded;
    if (!decode_base64(credentials, decoded)) return std::nullopt;
    size_t colon = decoded.find(':');
    if (colon == std::string::npos || colon + 1 == decoded.size()) return std::nullopt;
    return decoded.substr(colon + 1);
  }
  return std::nullopt;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Router

Router::Router(Store& store, Config config, RouterOptions options)
    : m_store(store), m_options(std::move(options)), m_config(std::make_shared<const Config>(std::move(config))) {
  if (!m_options.config_file.empty()) {
    struct ::stat st;
    if (::stat(m_options.config_file.c_str(), &st) == 0)
      m_config_stamp = {static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
                        static_cast<std::uint64_t>(st.st_size), static_cast<std::uint64_t>(st.st_ino)};
  }
  while (m_options.base_url.ends_with("/")) m_options.base_url.pop_back();
  if (!m_options.now_ms)
    m_options.now_ms = [] {
      return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
    };
}

std::shared_ptr<const Config> Router::config() const {
  std::lock_guard lock(m_config_mutex);
  if (m_options.config_file.empty()) return m_config;
  struct ::stat st;
  std::tuple<std::int64_t, std::uint64_t, std::uint64_t> stamp{};
  if (::stat(m_options.config_file.c_str(), &st) == 0)
    stamp = {static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
             static_cast<std::uint64_t>(st.st_size), static_cast<std::uint64_t>(st.st_ino)};
  if (stamp == m_config_stamp) return m_config;
  m_config_stamp = stamp;
  auto reloaded = load_config(m_options.config_file.parent_path());
  if (!reloaded) {
    if (m_options.on_config_error)
      m_options.on_config_error("config.toml changed but is invalid; keeping the previous configuration: " +
                                reloaded.error().message);
    return m_config;
  }
  reloaded->limits = m_config->limits;  // fixed at start
  m_config = std::make_shared<const Config>(std::move(*reloaded));
  return m_config;
}

hub::HttpResponse Router::handle(const hub::HttpRequest& request) {
  Reply reply = route(request);
  if (reply.file) {
    std::ifstream in(reply.file->path, std::ios::binary);
    std::string body(reply.file->length, '\0');
    in.seekg(static_cast<std::streamoff>(reply.file->offset));
    in.read(body.data(), static_cast<std::streamsize>(body.size()));
    if (static_cast<std::uint64_t>(in.gcount()) != reply.file->length) {
      Failure broken{500, "InternalError", "cannot read " + reply.file->path.string(), {}};
      return error_reply(broken, false).response;
    }
    reply.response.body = std::move(body);
  }
  return std::move(reply.response);
}

Reply Router::route(const hub::HttpRequest& request, bool body_is_spool) {
  Context context(request, body_is_spool);
  context.method = request.method;
  for (char& c : context.method) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  context.head = context.method == "HEAD";
  try {
    return dispatch(context);
  } catch (const std::exception& e) {
    // Library exceptions (JSON, filesystem, allocation) end here, never in the listener.
    return error_reply({500, "InternalError", std::string("internal error: ") + e.what(), {}}, context.head);
  }
}

Reply Router::dispatch(Context& c) {
  // Target: strip scheme and host of an absolute URL, then split off the query.
  std::string_view target = c.request.url;
  if (size_t scheme = target.find("://"); scheme != std::string_view::npos && scheme < target.find('/')) {
    size_t path_start = target.find('/', scheme + 3);
    target = path_start == std::string_view::npos ? std::string_view("/") : target.substr(path_start);
  }
  std::string_view raw_path = target.substr(0, target.find('?'));
  if (size_t question = target.find('?'); question != std::string_view::npos)
    c.query = parse_form(target.substr(question + 1));
  auto fail_with = [&](const Failure& f) { return error_reply(f, c.head); };
  if (!raw_path.starts_with("/")) return fail_with({400, "BadRequest", "the request target must start with '/'", {}});
  std::vector<std::string> raw = util::split(raw_path.substr(1), '/');
  if (raw.size() > 1 && raw.back().empty()) raw.pop_back();  // a trailing '/'
  for (const auto& segment : raw) {
    auto decoded = hub::url_decode(segment);
    if (!decoded) return fail_with({400, "BadRequest", decoded.error().message, {}});
    c.segments.push_back(std::move(*decoded));
  }
  c.now = m_options.now_ms();

  c.config = config();
  const Config& current_config = *c.config;
  const auto& s = c.segments;
  bool is_upload = s.size() >= 3 && s[0] == "lfs" && s[1] == "upload";
  if (auto header = c.request.headers.get("authorization"); header && !is_upload) {
    auto token = bearer_token(*header);
    c.token = token ? current_config.find_token(*token) : nullptr;
    if (!c.token) return fail_with({401, "Unauthorized", "Invalid credentials in Authorization header", {}});
  }

  Handlers handlers(m_store, current_config, m_options, c);
  auto finish = [&](Outcome<Reply> outcome) { return outcome ? std::move(*outcome) : fail_with(outcome.error()); };
  auto no_route = [&] {
    return fail_with({404, "NotFound", "no such endpoint: " + c.method + " " + std::string(raw_path), {}});
  };

  if (is_upload) {
    if (s.size() == 3) return finish(handlers.lfs_upload(s[2], std::nullopt));
    if (s.size() == 4) return finish(handlers.lfs_upload(s[2], s[3]));
    return no_route();
  }

  if (!s.empty() && s[0] == "api") {
    if (s.size() == 2 && s[1] == "whoami-v2") return finish(handlers.whoami());
    if (s.size() == 2 && s[1] == "validate-yaml") return finish(handlers.validate_yaml());
    if (s.size() == 2 && s[1] == "agent-harnesses") return finish(handlers.agent_harnesses());
    if (s.size() == 3 && s[1] == "repos" && s[2] == "create") return finish(handlers.create_repo());
    if (s.size() == 3 && s[1] == "repos" && s[2] == "delete") return finish(handlers.delete_repo());
    if (s.size() == 4 && s[1] == "organizations" && s[3] == "overview") return finish(handlers.organization(s[2]));
    auto type = s.size() >= 4 ? parse_repo_type_plural(s[1]) : std::nullopt;
    if (!type) return no_route();
    RepoId id{*type, s[2], s[3]};
    if (s.size() == 4) return finish(handlers.repo_info(id, "main"));
    const std::string& action = s[4];
    std::string rest = join_from(s, 5);
    std::string first = s.size() > 5 ? s[5] : "";
    if (action == "revision" && !rest.empty()) return finish(handlers.repo_info(id, rest));
    if (action == "refs" && s.size() == 5) return finish(handlers.refs(id));
    if (action == "branch" && !rest.empty()) return finish(handlers.branch(id, rest));
    if (action == "tag") return finish(handlers.tag(id, rest));
    if (action == "tree" && !first.empty()) return finish(handlers.tree(id, first, join_from(s, 6)));
    if (action == "paths-info" && !rest.empty()) return finish(handlers.paths_info(id, rest));
    if (action == "commits" && !rest.empty()) return finish(handlers.commits(id, rest));
    if (action == "preupload" && !rest.empty()) return finish(handlers.preupload(id, rest));
    if (action == "commit" && !rest.empty()) return finish(handlers.commit(id, rest));
    if (action == "xet-write-token" || action == "xet-read-token")
      return fail_with({400,
                        "BadRequest",
                        "this server stores files with Git LFS only and has no Xet storage: set HF_HUB_DISABLE_XET=1 "
                        "(or uninstall hf_xet) so that huggingface_hub uploads with LFS",
                        {}});
    return no_route();
  }

  // /{P}{ns}/{name}/resolve/... and /{P}{ns}/{name}.git/info/lfs/objects/{batch,verify}
  size_t at = 0;
  RepoType type = RepoType::model;
  if (s.size() >= 4 && s[0] != "api") {
    if (auto prefixed = parse_repo_type_plural(s[0]); prefixed && *prefixed != RepoType::model) {
      type = *prefixed;
      at = 1;
    }
  }
  if (s.size() >= at + 3) {
    RepoId id{type, s[at], s[at + 1]};
    if (s.size() == at + 6 && id.name.ends_with(".git") && s[at + 2] == "info" && s[at + 3] == "lfs" &&
        s[at + 4] == "objects") {
      id.name.resize(id.name.size() - 4);
      if (s[at + 5] == "batch") return finish(handlers.lfs_batch(id));
      if (s[at + 5] == "verify") return finish(handlers.lfs_verify(id));
    }
    if (s[at + 2] == "resolve" && s.size() >= at + 5)
      return finish(handlers.resolve(id, s[at + 3], join_from(s, at + 4)));
  }
  return no_route();
}

}  // namespace kbuild::server
