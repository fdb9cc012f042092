#include "kbuild/hub/commit_plan.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <map>
#include <regex>
#include <set>

#include "kbuild/util/hash.hpp"

namespace kbuild::hub {

// An LFS file is compared by its content's sha256: its tree `oid` is the git blob id of the pointer, never
// of the content. Deletions stay inside `owned_prefixes`, so the variants another publish put on the
// branch survive this one (kernel-builder's upload leaves variants it does not upload untouched too).
CommitPlan plan_commit(const std::vector<LocalFile>& local, const std::vector<RemoteFile>& remote,
                       const std::vector<std::string>& owned_prefixes) {
  std::map<std::string, const RemoteFile*> by_path;
  for (const auto& file : remote) by_path[file.path] = &file;
  CommitPlan plan;
  std::set<std::string> local_paths;
  for (const auto& file : local) {
    local_paths.insert(file.path);
    auto it = by_path.find(file.path);
    bool same = it != by_path.end() &&
                (it->second->lfs_sha256 ? *it->second->lfs_sha256 == file.sha256 : it->second->oid == file.git_oid);
    if (same)
      plan.unchanged.push_back(file.path);
    else
      plan.adds.push_back(file);
  }
  for (const auto& file : remote) {
    if (local_paths.count(file.path)) continue;
    for (const auto& prefix : owned_prefixes) {
      if (file.path.starts_with(prefix)) {
        plan.deletes.push_back(file.path);
        break;
      }
    }
  }
  return plan;
}

// The 512-byte sample is what preupload sends: the server decides inline or LFS from it and the size
// (POST /api/{type}s/{id}/preupload/{rev}, as huggingface_hub's _fetch_upload_modes sends it; the
// registry's side: server/router.hpp); the client never decides.
LocalFile describe_bytes(std::string content, std::string repo_path) {
  LocalFile file;
  file.path = std::move(repo_path);
  file.size = content.size();
  file.sha256 = util::sha256_hex(content);
  file.git_oid = util::git_blob_id(content);
  file.sample = content.substr(0, 512);
  file.content = std::move(content);
  return file;
}

// One read serves both hashes. The git blob header needs the size before the content, so it comes from
// stat(); a file that grows or shrinks meanwhile would get a wrong blob id, hence the size check after.
Result<LocalFile> describe_file(const util::FileSystem& fs, const std::filesystem::path& source,
                                std::string repo_path) {
  auto st = fs.stat(source);
  if (!st.is_file) return fail("cannot read " + source.string());
  util::Hasher sha256;
  util::Hasher sha1(util::Hasher::Algorithm::sha1);
  sha1.update("blob " + std::to_string(st.size));
  sha1.update(std::string_view("\0", 1));
  std::string sample;
  std::uint64_t seen = 0;
  KB_TRY(fs.read_chunks(source, [&](std::string_view chunk) {
    sha256.update(chunk);
    sha1.update(chunk);
    if (sample.size() < 512) sample.append(chunk.substr(0, 512 - sample.size()));
    seen += chunk.size();
  }));
  if (seen != st.size) return fail(source.string() + " changed while it was read");
  return LocalFile{std::move(repo_path), source,      st.size, sha256.finish_hex(), sha1.finish_hex(),
                   std::move(sample),    std::nullopt};
}

// No leading zeros ("v01.0.0" is no release tag, as in lock/version_spec); at most 9 digits per component,
// so stoll cannot overflow. Callers hold MAJOR against the kernel version N: the tag names a commit of vN.
std::optional<std::int64_t> tag_major(const std::string& tag) {
  static const std::regex k_tag(R"(^v(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,8})$)");
  std::smatch match;
  if (!std::regex_match(tag, match, k_tag)) return std::nullopt;
  return std::stoll(match[1]);
}

// The commit request (POST /api/{type}s/{id}/commit/{rev}, NDJSON: a "header" line, then "file",
// "lfsFile" and "deletedFile" lines, as huggingface_hub's create_commit writes it; the registry parses
// it in server/wire_commit.hpp). With parentCommit the Hub answers 412 when the
// branch moved past it, which publish turns into a re-plan instead of overwriting someone else's commit.
// ordered_json keeps the keys in huggingface_hub's order, so one plan always encodes to the same bytes.
std::string encode_commit(const std::string& summary, const std::string& description,
                          const std::optional<std::string>& parent_commit, const std::vector<CommitOp>& ops) {
  nlohmann::ordered_json header = {{"key", "header"}, {"value", {{"summary", summary}, {"description", description}}}};
  if (parent_commit) header["value"]["parentCommit"] = *parent_commit;
  std::string out = header.dump() + "\n";
  for (const auto& op : ops) {
    nlohmann::ordered_json line;
    switch (op.kind) {
      case CommitOp::Kind::add_inline:
        line = {{"key", "file"},
                {"value", {{"content", op.content_base64}, {"path", op.path}, {"encoding", "base64"}}}};
        break;
      case CommitOp::Kind::add_lfs:
        line = {{"key", "lfsFile"},
                {"value", {{"path", op.path}, {"algo", "sha256"}, {"oid", op.sha256}, {"size", op.size}}}};
        break;
      case CommitOp::Kind::remove:
        line = {{"key", "deletedFile"}, {"value", {{"path", op.path}}}};
        break;
    }
    out += line.dump() + "\n";
  }
  return out;
}

}  // namespace kbuild::hub
