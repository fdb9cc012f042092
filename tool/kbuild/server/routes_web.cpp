// The read-only web pages a browser gets for the URLs kbuild prints (publish prints
// <endpoint>/kernels/ORG/NAME/tree/vN), so that a link from a terminal or a CI log opens on a
// registry as it does on the Hub:
//
//   GET /{T}/{id}                      the repository: its branches and tags, each linked to its tree
//   GET /{P}{id}/tree/{rev}/{path*}    a directory at a revision: subdirectories, then files with sizes
//   GET /{P}{id}/blob/{rev}/{path+}    a file: size, LFS sha256, a download link (resolve/), and the
//                                      text of a small UTF-8 file
//
// Plain HTML without scripts; every name is escaped. Visibility is the API's: a browser sends no
// token, so a private repository is a 404 there.

#include <fmt/core.h>

#include <set>

#include "kbuild/server/handlers.hpp"
#include "kbuild/server/wire.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::server {

namespace {

constexpr std::uint64_t k_shown_text_bytes = 64 * 1024;

std::string escape_html(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Percent-encodes a path for an href (segments kept, '/' between them).
std::string escape_url_path(std::string_view path) {
  static const char* k_hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : path) {
    bool plain = std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/';
    if (plain)
      out += static_cast<char>(c);
    else
      out += {'%', k_hex[c >> 4], k_hex[c & 15]};
  }
  return out;
}

Reply html_reply(const std::string& title, const std::string& body, bool head) {
  std::string page = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + escape_html(title) +
                     "</title><style>body{font-family:sans-serif;margin:2em}td{padding:0 1em 0 0}"
                     "pre{background:#f6f6f6;padding:1em;overflow:auto}</style></head><body>\n" +
                     body + "\n</body></html>\n";
  Reply reply;
  reply.response.status = 200;
  reply.response.headers.set("Content-Type", "text/html; charset=utf-8");
  reply.response.headers.set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'");
  reply.response.headers.set("X-Content-Type-Options", "nosniff");
  reply.response.headers.set("Content-Length", std::to_string(page.size()));
  if (!head) reply.response.body = std::move(page);
  return reply;
}

// "org/name @ rev / dir / file" with each level linked.
std::string breadcrumbs(const std::string& base, const RepoId& id, const std::string& rev, const std::string& path) {
  std::string out = "<h1><a href=\"" + escape_html(base) + "\">" + escape_html(id.full_name()) + "</a> @ <a href=\"" +
                    escape_html(base + "/tree/" + escape_url_path(rev)) + "\">" + escape_html(rev) + "</a>";
  std::string so_far;
  for (const auto& part : util::split(path, '/')) {
    if (part.empty()) continue;
    so_far += (so_far.empty() ? "" : "/") + part;
    out += " / <a href=\"" + escape_html(base + "/tree/" + escape_url_path(rev) + "/" + escape_url_path(so_far)) +
           "\">" + escape_html(part) + "</a>";
  }
  return out + "</h1>\n";
}

}  // namespace

Outcome<Reply> Handlers::web_repo(const Match& m) {
  KB_TRY_ASSIGN(auto refs, lift(m_store.list_refs(m.repo.key)));
  const std::string base = repo_url(m.id);
  std::string body = "<h1>" + escape_html(m.id.full_name()) + "</h1>\n<p>" +
                     escape_html(std::string(repo_type_plural(m.id.type))) + " repository</p>\n";
  for (RefKind kind : {RefKind::branch, RefKind::tag}) {
    body += kind == RefKind::branch ? "<h2>Branches</h2>\n<ul>\n" : "<h2>Tags</h2>\n<ul>\n";
    for (const auto& ref : refs)
      if (ref.kind == kind)
        body += "<li><a href=\"" + escape_html(base + "/tree/" + escape_url_path(ref.name)) + "\">" +
                escape_html(ref.name) + "</a> <code>" + escape_html(ref.target.substr(0, 12)) + "</code></li>\n";
    body += "</ul>\n";
  }
  return html_reply(m.id.full_name(), body, m_c.head);
}

Outcome<Reply> Handlers::web_tree(const Match& m) {
  KB_TRY_ASSIGN(std::string oid, resolve_revision(m.repo, m.revision));
  std::string dir = m.path;
  while (!dir.empty() && dir.back() == '/') dir.pop_back();
  if (!dir.empty() && !is_safe_repo_path(dir)) return bad_request("invalid path \"" + dir + "\"");
  KB_TRY_ASSIGN(FileMap files, files_at(m.repo, oid));
  const std::string prefix = dir.empty() ? "" : dir + "/";
  std::set<std::string> subdirs;
  std::vector<const FileEntry*> here;
  for (auto it = files.lower_bound(prefix); it != files.end() && it->first.starts_with(prefix); ++it) {
    std::string rest = it->first.substr(prefix.size());
    if (size_t slash = rest.find('/'); slash != std::string::npos)
      subdirs.insert(rest.substr(0, slash));
    else
      here.push_back(&it->second);
  }
  if (!dir.empty() && subdirs.empty() && here.empty())
    return std::unexpected(Failure{404, "EntryNotFound", "no directory " + dir + " at revision " + m.revision, {}});
  const std::string base = repo_url(m.id);
  const std::string rev = escape_url_path(m.revision);
  std::string body =
      breadcrumbs(base, m.id, m.revision, dir) + "<p>commit <code>" + escape_html(oid) + "</code></p>\n<table>\n";
  for (const auto& name : subdirs)
    body += "<tr><td><a href=\"" + escape_html(base + "/tree/" + rev + "/" + escape_url_path(prefix + name)) + "\">" +
            escape_html(name) + "/</a></td><td></td></tr>\n";
  for (const FileEntry* file : here)
    body += "<tr><td><a href=\"" + escape_html(base + "/blob/" + rev + "/" + escape_url_path(file->path)) + "\">" +
            escape_html(file->path.substr(prefix.size())) + "</a></td><td>" + util::human_size(file->size) +
            (file->lfs ? " (LFS)" : "") + "</td></tr>\n";
  body += "</table>\n";
  return html_reply(m.id.full_name() + " @ " + m.revision + (dir.empty() ? "" : " / " + dir), body, m_c.head);
}

Outcome<Reply> Handlers::web_blob(const Match& m) {
  KB_TRY_ASSIGN(std::string oid, resolve_revision(m.repo, m.revision));
  if (!is_safe_repo_path(m.path)) return bad_request("invalid path \"" + m.path + "\"");
  KB_TRY_ASSIGN(FileMap files, files_at(m.repo, oid));
  auto it = files.find(m.path);
  if (it == files.end())
    return std::unexpected(
        Failure{404, "EntryNotFound", "Entry not found: " + m.path + " at revision " + m.revision, {}});
  const FileEntry& file = it->second;
  const std::string base = repo_url(m.id);
  std::string body = breadcrumbs(base, m.id, m.revision, m.path) + "<p>" + util::human_size(file.size) +
                     (file.lfs ? ", stored with LFS, sha256 <code>" + escape_html(file.sha256) + "</code>" : "") +
                     " &middot; <a href=\"" +
                     escape_html(base + "/resolve/" + escape_url_path(oid) + "/" + escape_url_path(file.path)) +
                     "\">download</a></p>\n";
  if (file.size <= k_shown_text_bytes) {
    std::string text = small_text(files, file.path);
    if (util::is_valid_utf8(text) && text.find('\0') == std::string::npos)
      body += "<pre>" + escape_html(text) + "</pre>\n";
  }
  return html_reply(m.id.full_name() + " / " + m.path, body, m_c.head);
}

}  // namespace kbuild::server
