// The NDJSON body of a commit (wire.hpp: CommitParser), one line at a time.

#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "kbuild/server/object_ids.hpp"
#include "kbuild/server/path_rules.hpp"
#include "kbuild/server/wire.hpp"
#include "kbuild/server/wire_json.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::server {

using namespace wire_json;

namespace {

/// Strings longer than this, without escapes or control characters, stay in the line (hoisted).
constexpr std::size_t k_hoist_length = 64 * 1024;

/// One line's JSON, with its long plain strings left in the line: in the tree each is a placeholder
/// ("\u0001" + a random marker + its index) standing for a span of the line.
class LineJson {
 public:
  /// Parses `line`, which must stay unchanged while strings are read through this object.
  static Parsed<LineJson> parse(const std::string& line) {
    LineJson out;
    out.m_line = &line;
    out.find_long_strings();
    if (out.m_spans.empty()) {
      out.m_root = Json::parse(line, nullptr, false);
    } else {
      // Random, so that a string of the request cannot pose as a placeholder.
      util::RealRandom random;
      out.m_marker = "\x01kbuild-" + random_hex(random, 8) + "-";
      out.m_root = Json::parse(out.reduced(), nullptr, false);
    }
    if (out.m_root.is_discarded()) return std::unexpected("not JSON");
    return out;
  }

  Json& root() { return m_root; }

  /// The span [begin, end) of the line that a string value stands for, if it was hoisted.
  std::optional<std::pair<std::size_t, std::size_t>> span_of(const Json& value) const {
    if (m_spans.empty() || !value.is_string()) return std::nullopt;
    const auto& text = value.get_ref<const std::string&>();
    if (!text.starts_with(m_marker)) return std::nullopt;
    std::size_t index = std::stoull(text.substr(m_marker.size()));
    return index < m_spans.size() ? std::optional(m_spans[index]) : std::nullopt;
  }

  /// A string member, hoisted or not.
  std::optional<std::string> string(const Json& object, std::string_view key) const {
    const Json* value = member(object, key);
    if (!value || !value->is_string()) return std::nullopt;
    if (auto span = span_of(*value)) return m_line->substr(span->first, span->second - span->first);
    return value->get<std::string>();
  }

 private:
  void find_long_strings() {
    const std::string& line = *m_line;
    bool in_string = false, plain = true;
    std::size_t start = 0;
    for (std::size_t i = 0; i < line.size(); ++i) {
      char c = line[i];
      if (!in_string) {
        if (c == '"') in_string = true, plain = true, start = i + 1;
      } else if (c == '\\') {
        plain = false;
        ++i;
      } else if (c == '"') {
        in_string = false;
        if (plain && i - start > k_hoist_length) m_spans.emplace_back(start, i);
      } else if (static_cast<unsigned char>(c) < 0x20) {
        plain = false;
      }
    }
    if (in_string) m_spans.clear();  // malformed: let the JSON parser say so
  }

  /// The line with each hoisted span replaced by its placeholder (escaped: "\\u0001...").
  std::string reduced() const {
    std::string out;
    std::size_t at = 0;
    for (std::size_t index = 0; index < m_spans.size(); ++index) {
      out.append(*m_line, at, m_spans[index].first - at);
      out += "\\u0001" + m_marker.substr(1) + std::to_string(index);
      at = m_spans[index].second;
    }
    out.append(*m_line, at, std::string::npos);
    return out;
  }

  const std::string* m_line = nullptr;
  std::vector<std::pair<std::size_t, std::size_t>> m_spans;
  std::string m_marker;
  Json m_root;
};

Parsed<CommitHeader> parse_header(const LineJson& line, const Json& value) {
  CommitHeader header;
  auto summary = line.string(value, "summary");
  if (!summary) return std::unexpected("the commit header needs a \"summary\" string");
  header.summary = *summary;
  header.description = line.string(value, "description").value_or("");
  header.parent_commit = line.string(value, "parentCommit").value_or("");
  if (!header.parent_commit.empty() && !is_commit_oid(header.parent_commit))
    return std::unexpected("parentCommit must be a 40-character lowercase hex commit id");
  return header;
}

// "file": {"path", "content", "encoding"?}; fills out.content, freeing `text` (the line) as soon as
// the content no longer needs it.
Parsed<void> parse_file(LineJson& line, Json& value, std::string& text, CommitLine& out) {
  Json* content = value.contains("content") ? &value["content"] : nullptr;
  if (!content || !content->is_string()) return std::unexpected(out.where + ": \"content\" (string) is required");
  std::string encoding = line.string(value, "encoding").value_or("utf-8");
  if (encoding != "base64" && encoding != "utf-8" && encoding != "utf8")
    return std::unexpected(out.where + ": unknown encoding \"" + encoding + "\"");
  std::string plain;
  if (auto span = line.span_of(*content)) {  // still in the line: cut it out in place
    text.erase(span->second);
    text.erase(0, span->first);
    plain = std::move(text);
  } else {
    plain = std::move(content->get_ref<std::string&>());
  }
  std::string().swap(text);
  if (encoding != "base64") {
    out.content = std::move(plain);
    return {};
  }
  if (!decode_base64(plain, out.content)) return std::unexpected(out.where + ": content is not valid base64");
  return {};
}

// "lfsFile": {"path", "oid", "size"?, "algo"?}; fills out.oid and out.size.
Parsed<void> parse_lfs_file(const LineJson& line, const Json& value, CommitLine& out) {
  auto oid = line.string(value, "oid");
  if (auto algo = line.string(value, "algo"); algo && *algo != "sha256")
    return std::unexpected(out.where + ": only algo \"sha256\" is supported");
  if (!oid || !is_sha256_hex(*oid)) return std::unexpected(out.where + ": \"oid\" must be a sha256 (64 lowercase hex)");
  out.oid = *oid;
  out.size = integer_member(value, "size");
  return {};
}

// The kind and fields of a line after the header, checked in this order: path, then the kind's fields.
Parsed<void> parse_operation(const std::string& key, LineJson& line, Json& value, std::string& text, CommitLine& out) {
  auto path = line.string(value, "path");
  if (!path) return std::unexpected(out.where + ": \"path\" (string) is required");
  out.path = key == "deletedFolder" ? folder_path(*path) : *path;
  if (!is_safe_repo_path(out.path)) return std::unexpected(out.where + ": invalid path \"" + *path + "\"");
  // New names only: a file stored before these rules can still be deleted.
  if (auto problem = key == "file" || key == "lfsFile" ? path_problem(out.path) : std::nullopt)
    return std::unexpected(out.where + ": path \"" + *path + "\" cannot be stored: " + *problem);
  if (key == "file") {
    out.kind = CommitLineKind::file;
    return parse_file(line, value, text, out);
  }
  if (key == "lfsFile") {
    out.kind = CommitLineKind::lfs_file;
    return parse_lfs_file(line, value, out);
  }
  if (key == "deletedFile" || key == "deletedFolder") {
    out.kind = key == "deletedFile" ? CommitLineKind::deleted_file : CommitLineKind::deleted_folder;
    return {};
  }
  return std::unexpected(out.where + ": unknown key \"" + key + "\"");
}

}  // namespace

Parsed<std::optional<CommitLine>> CommitParser::parse(std::string&& text) {
  if (text.find_first_not_of(" \t\r") == std::string::npos) return std::optional<CommitLine>();
  ++m_line;
  CommitLine out;
  out.where = "commit line " + std::to_string(m_line);
  if (auto problem = json_shape_problem(text)) return std::unexpected(out.where + ": " + *problem);
  auto parsed_line = LineJson::parse(text);
  Json* value = parsed_line ? &parsed_line->root() : nullptr;
  auto key = parsed_line ? parsed_line->string(*value, "key") : std::nullopt;
  if (value) value = value->contains("value") ? &(*value)["value"] : nullptr;
  if (!key || !value || !value->is_object())
    return std::unexpected(out.where + ": expected {\"key\": ..., \"value\": {...}}");
  if (*key == "header") {
    if (m_line != 1) return std::unexpected(out.where + ": the header must come first");
    KB_TRY_ASSIGN(out.header, parse_header(*parsed_line, *value));
    return out;
  }
  if (m_line == 1) return std::unexpected("the first commit line must be the header");
  KB_TRY(parse_operation(*key, *parsed_line, *value, text, out));
  return out;
}

}  // namespace kbuild::server
