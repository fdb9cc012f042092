#include "kbuild/server/wire.hpp"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>

#include "kbuild/hub/http.hpp"
#include "kbuild/server/object_ids.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::server {

using Json = nlohmann::ordered_json;

// ---------------------------------------------------------------------------------------------
// Text, forms and headers

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

namespace {
// One form-encoded component: '+' is a space.
std::string form_decode(std::string_view text) {
  std::string plus(text);
  std::replace(plus.begin(), plus.end(), '+', ' ');
  auto decoded = hub::url_decode(plus);
  return decoded ? *decoded : plus;
}
}  // namespace

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

// With a lookup table: commit lines can carry hundreds of megabytes.
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

std::string folder_path(std::string path) {
  if (path.ends_with("/")) path.pop_back();
  return path;
}

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

// ---------------------------------------------------------------------------------------------
// JSON bodies

namespace {

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

std::optional<bool> boolean_member(const Json& object, std::string_view key) {
  const Json* value = member(object, key);
  if (!value || !value->is_boolean()) return std::nullopt;
  return value->get<bool>();
}

Parsed<Json> parse_json(std::string_view text, bool allow_empty = false) {
  if (allow_empty && util::trim(text).empty()) return Json::object();
  Json value = Json::parse(text, nullptr, false);
  if (value.is_discarded()) return std::unexpected("the request body is not valid JSON");
  return value;
}

const char* const k_bad_type = "\"type\" must be model, dataset, space or kernel";

}  // namespace

Parsed<CreateRepoRequest> parse_create_repo(std::string_view body, const std::string& default_namespace) {
  KB_TRY_ASSIGN(Json request, parse_json(body));
  auto name = string_member(request, "name");
  if (!name) return std::unexpected("\"name\" (string) is required");
  CreateRepoRequest out;
  out.id.name = *name;
  out.id.ns = string_member(request, "organization").value_or(default_namespace);
  if (const Json* type = member(request, "type"); type && !type->is_null()) {
    auto parsed = type->is_string() ? parse_repo_type(type->get<std::string>()) : std::nullopt;
    if (!parsed) return std::unexpected(k_bad_type);
    out.id.type = *parsed;
  }
  if (!is_valid_namespace(out.id.ns)) return std::unexpected("invalid namespace \"" + out.id.ns + "\"");
  if (!is_valid_repo_name(out.id.name))
    return std::unexpected("invalid repo name \"" + out.id.name +
                           "\": use letters, digits, '-', '_' and '.', not at the start or end, at most 96 characters");
  out.is_private = boolean_member(request, "private").value_or(false);
  if (auto visibility = string_member(request, "visibility")) {
    if (*visibility != "public" && *visibility != "private" && *visibility != "protected")
      return std::unexpected("\"visibility\" must be public, private or protected");
    out.is_private = *visibility == "private";
  }
  return out;
}

Parsed<RepoId> parse_delete_repo(std::string_view body, const std::string& default_namespace) {
  KB_TRY_ASSIGN(Json request, parse_json(body));
  RepoId id;
  id.name = string_member(request, "name").value_or("");
  id.ns = string_member(request, "organization").value_or(default_namespace);
  if (auto type = string_member(request, "type")) {
    auto parsed = parse_repo_type(*type);
    if (!parsed) return std::unexpected(k_bad_type);
    id.type = *parsed;
  }
  return id;
}

Parsed<std::string> parse_branch_start(std::string_view body) {
  KB_TRY_ASSIGN(Json request, parse_json(body, true));
  return string_member(request, "startingPoint").value_or("main");
}

Parsed<std::string> parse_tag_name(std::string_view body) {
  KB_TRY_ASSIGN(Json request, parse_json(body));
  auto tag = string_member(request, "tag");
  if (!tag) return std::unexpected("\"tag\" (string) is required");
  if (!is_valid_ref_name(*tag)) return std::unexpected("invalid tag name \"" + *tag + "\"");
  return *tag;
}

Parsed<PathsInfoRequest> parse_paths_info(std::string_view body, std::string_view content_type) {
  PathsInfoRequest out;
  if (lowercase(content_type).starts_with("application/json")) {
    KB_TRY_ASSIGN(Json request, parse_json(body));
    if (const Json* list = member(request, "paths"); list && list->is_array())
      for (const auto& path : *list)
        if (path.is_string()) out.paths.push_back(path.get<std::string>());
    out.expand = boolean_member(request, "expand").value_or(false);
    return out;
  }
  for (const auto& [key, value] : parse_form(body)) {
    if (key == "paths" || key == "paths[]") out.paths.push_back(value);
    if (key == "expand") out.expand = truthy(value);
  }
  return out;
}

Parsed<PreuploadRequest> parse_preupload(std::string_view body) {
  KB_TRY_ASSIGN(Json request, parse_json(body));
  const Json* list = member(request, "files");
  if (!list || !list->is_array()) return std::unexpected("\"files\" (array) is required");
  PreuploadRequest out;
  out.git_ignore = string_member(request, "gitIgnore");
  for (const auto& file : *list) {
    auto path = string_member(file, "path");
    auto size = integer_member(file, "size");
    if (!path || !size || *size < 0) return std::unexpected("each file needs \"path\" (string) and \"size\" (integer)");
    if (!is_valid_repo_path(*path)) return std::unexpected("invalid path \"" + *path + "\"");
    PreuploadFile entry{*path, static_cast<std::uint64_t>(*size), {}};
    if (!decode_base64(string_member(file, "sample").value_or(""), entry.sample))
      return std::unexpected("\"sample\" of " + *path + " is not base64");
    out.files.push_back(std::move(entry));
  }
  return out;
}

Parsed<std::vector<LfsObjectRequest>> parse_lfs_batch(std::string_view body) {
  KB_TRY_ASSIGN(Json request, parse_json(body));
  if (string_member(request, "operation").value_or("") != "upload")
    return std::unexpected("this server only answers LFS \"upload\" batches; download files through /resolve/");
  if (auto algo = string_member(request, "hash_algo"); algo && *algo != "sha256")
    return std::unexpected("only hash_algo \"sha256\" is supported");
  const Json* objects = member(request, "objects");
  if (!objects || !objects->is_array()) return std::unexpected("\"objects\" (array) is required");
  std::vector<LfsObjectRequest> out;
  for (const auto& object : *objects) out.push_back({string_member(object, "oid"), integer_member(object, "size")});
  return out;
}

Parsed<LfsVerifyRequest> parse_lfs_verify(std::string_view body) {
  KB_TRY_ASSIGN(Json request, parse_json(body));
  auto oid = string_member(request, "oid");
  auto size = integer_member(request, "size");
  if (!oid || !size) return std::unexpected("\"oid\" and \"size\" are required");
  return LfsVerifyRequest{*oid, *size};
}

Parsed<MultipartCompletion> parse_multipart_completion(std::string_view body) {
  KB_TRY_ASSIGN(Json request, parse_json(body));
  MultipartCompletion out;
  out.oid = string_member(request, "oid").value_or("");
  if (const Json* list = member(request, "parts"); list && list->is_array()) {
    out.parts.emplace();
    for (const auto& entry : *list)
      out.parts->push_back(
          {integer_member(entry, "partNumber").value_or(0), string_member(entry, "etag").value_or("")});
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The NDJSON commit body

namespace {

Parsed<CommitHeader> parse_header(const Json& value) {
  CommitHeader header;
  auto summary = string_member(value, "summary");
  if (!summary) return std::unexpected("the commit header needs a \"summary\" string");
  header.summary = *summary;
  header.description = string_member(value, "description").value_or("");
  header.parent_commit = string_member(value, "parentCommit").value_or("");
  if (!header.parent_commit.empty() && !is_commit_oid(header.parent_commit))
    return std::unexpected("parentCommit must be a 40-character lowercase hex commit id");
  return header;
}

// "file": {"path", "content", "encoding"?}; fills line.content.
Parsed<void> parse_file(const Json& value, CommitLine& line) {
  auto content = string_member(value, "content");
  if (!content) return std::unexpected(line.where + ": \"content\" (string) is required");
  std::string encoding = string_member(value, "encoding").value_or("utf-8");
  if (encoding == "base64") {
    if (!decode_base64(*content, line.content)) return std::unexpected(line.where + ": content is not valid base64");
  } else if (encoding == "utf-8" || encoding == "utf8") {
    line.content = std::move(*content);
  } else {
    return std::unexpected(line.where + ": unknown encoding \"" + encoding + "\"");
  }
  return {};
}

// "lfsFile": {"path", "oid", "size"?, "algo"?}; fills line.oid and line.size.
Parsed<void> parse_lfs_file(const Json& value, CommitLine& line) {
  auto oid = string_member(value, "oid");
  if (auto algo = string_member(value, "algo"); algo && *algo != "sha256")
    return std::unexpected(line.where + ": only algo \"sha256\" is supported");
  if (!oid || !is_sha256_hex(*oid))
    return std::unexpected(line.where + ": \"oid\" must be a sha256 (64 lowercase hex)");
  line.oid = *oid;
  line.size = integer_member(value, "size");
  return {};
}

// The kind and fields of a line after the header, checked in this order: path, then the kind's fields.
Parsed<void> parse_operation(const std::string& key, const Json& value, CommitLine& line) {
  auto path = string_member(value, "path");
  if (!path) return std::unexpected(line.where + ": \"path\" (string) is required");
  line.path = key == "deletedFolder" ? folder_path(*path) : *path;
  if (!is_valid_repo_path(line.path)) return std::unexpected(line.where + ": invalid path \"" + *path + "\"");
  if (key == "file") {
    line.kind = CommitLineKind::file;
    return parse_file(value, line);
  }
  if (key == "lfsFile") {
    line.kind = CommitLineKind::lfs_file;
    return parse_lfs_file(value, line);
  }
  if (key == "deletedFile") {
    line.kind = CommitLineKind::deleted_file;
    return {};
  }
  if (key == "deletedFolder") {
    line.kind = CommitLineKind::deleted_folder;
    return {};
  }
  return std::unexpected(line.where + ": unknown key \"" + key + "\"");
}

}  // namespace

Parsed<std::optional<CommitLine>> CommitReader::next() {
  std::string_view text;
  while (text.empty()) {
    if (m_start >= m_body.size()) return std::optional<CommitLine>();
    size_t end = m_body.find('\n', m_start);
    if (end == std::string_view::npos) end = m_body.size();
    text = util::trim(m_body.substr(m_start, end - m_start));
    m_start = end + 1;
  }
  ++m_line;
  CommitLine line;
  line.where = "commit line " + std::to_string(m_line);
  Json item = Json::parse(text, nullptr, false);
  auto key = string_member(item, "key");
  const Json* value = member(item, "value");
  if (item.is_discarded() || !key || !value || !value->is_object())
    return std::unexpected(line.where + ": expected {\"key\": ..., \"value\": {...}}");
  if (*key == "header") {
    if (m_line != 1) return std::unexpected(line.where + ": the header must come first");
    KB_TRY_ASSIGN(line.header, parse_header(*value));
    return line;
  }
  if (m_line == 1) return std::unexpected("the first commit line must be the header");
  KB_TRY(parse_operation(*key, *value, line));
  return line;
}

}  // namespace kbuild::server
