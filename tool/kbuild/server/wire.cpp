#include "kbuild/server/wire.hpp"

#include "kbuild/server/path_rules.hpp"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>

#include "kbuild/net/http.hpp"
#include "kbuild/server/object_ids.hpp"
#include "kbuild/server/wire_json.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::server {

using namespace wire_json;

// ---------------------------------------------------------------------------------------------
// Text, forms and headers

std::string lowercase(std::string_view text) { return util::ascii_lowercase(text); }

namespace {
// One form-encoded component: '+' is a space.
std::string form_decode(std::string_view text) {
  std::string plus(text);
  std::replace(plus.begin(), plus.end(), '+', ' ');
  auto decoded = net::url_decode(plus);
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

bool is_safe_repo_path(std::string_view path) {
  if (!is_valid_repo_path(path) || path.find('\\') != std::string_view::npos) return false;
  for (const auto& part : util::split(path, '/'))
    if (part == "~") return false;
  std::string lower = lowercase(path);
  for (const char* escape : {"%2e", "%2f", "%5c"})
    if (lower.find(escape) != std::string::npos) return false;
  return true;
}

bool is_unambiguous_ref_name(std::string_view name) {
  if (!is_valid_ref_name(name) || name.starts_with("refs/")) return false;
  std::string lower = lowercase(name);
  for (const char* escape : {"%2e", "%2f", "%5c"})  // decoded once more somewhere, they would be ".." or "/"
    if (lower.find(escape) != std::string::npos) return false;
  if ((name.size() == 40 || name.size() == 64) &&
      std::all_of(name.begin(), name.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); }))
    return false;
  std::string upper = util::ascii_uppercase(name);
  for (const char* special : {"HEAD", "FETCH_HEAD", "ORIG_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD",
                              "BISECT_HEAD", "AUTO_MERGE"})
    if (upper == special) return false;
  return true;
}

bool parse_pull_request_ref(std::string_view revision, std::int64_t& number) {
  if (!revision.starts_with("refs/pr/")) return false;
  std::string_view digits = revision.substr(8);
  if (digits.empty() || digits.size() > 9 || digits.front() == '0' ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  number = std::stoll(std::string(digits));
  return true;
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
    if (!is_safe_repo_path(*path)) return std::unexpected("invalid path \"" + *path + "\"");
    if (auto problem = path_problem(*path))
      return std::unexpected("path \"" + *path + "\" cannot be stored: " + *problem);
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
// Discussions

Parsed<NewDiscussionRequest> parse_new_discussion(std::string_view body) {
  KB_TRY_ASSIGN(Json request, parse_json(body));
  auto title = string_member(request, "title");
  if (!title) return std::unexpected("\"title\" (string) is required");
  NewDiscussionRequest out;
  out.title = std::string(util::trim(*title));
  if (out.title.size() < 3 || out.title.size() > 200) return std::unexpected("the title must have 3 to 200 characters");
  out.description = string_member(request, "description").value_or("");
  out.pull_request = boolean_member(request, "pullRequest").value_or(false);
  return out;
}

Parsed<StatusChangeRequest> parse_status_change(std::string_view body) {
  KB_TRY_ASSIGN(Json request, parse_json(body));
  StatusChangeRequest out;
  out.status = string_member(request, "status").value_or("");
  if (out.status != "open" && out.status != "closed") return std::unexpected("\"status\" must be open or closed");
  out.comment = string_member(request, "comment").value_or("");
  return out;
}

Parsed<std::string> parse_comment(std::string_view body, bool required) {
  KB_TRY_ASSIGN(Json request, parse_json(body, !required));
  if (request.is_null()) request = Json::object();  // "null": huggingface_hub's merge without a comment
  std::string comment = string_member(request, "comment").value_or("");
  if (required && util::trim(comment).empty()) return std::unexpected("\"comment\" (string) is required");
  return comment;
}

}  // namespace kbuild::server
