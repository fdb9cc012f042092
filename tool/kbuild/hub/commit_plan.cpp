#include "kbuild/hub/commit_plan.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <map>
#include <regex>
#include <set>

#include "kbuild/util/hash.hpp"

namespace kbuild::hub {

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

Result<LocalFile> describe_file(const std::filesystem::path& source, std::string repo_path) {
  std::FILE* file = std::fopen(source.c_str(), "rb");
  if (!file) return fail("cannot read " + source.string());
  std::fseek(file, 0, SEEK_END);
  long size = std::ftell(file);
  std::fseek(file, 0, SEEK_SET);
  util::Hasher sha256;
  util::Hasher sha1(util::Hasher::Algorithm::sha1);
  std::string header = "blob " + std::to_string(size);
  sha1.update(header);
  sha1.update(std::string_view("\0", 1));
  std::vector<char> buffer(1 << 20);
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), file)) > 0) {
    std::string_view chunk(buffer.data(), n);
    sha256.update(chunk);
    sha1.update(chunk);
  }
  bool failed = std::ferror(file);
  std::fclose(file);
  if (failed || size < 0) return fail("error while reading " + source.string());
  return LocalFile{std::move(repo_path), source, static_cast<std::uint64_t>(size), sha256.finish_hex(),
                   sha1.finish_hex()};
}

std::optional<std::int64_t> tag_major(const std::string& tag) {
  static const std::regex k_tag(R"(^v(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,8})$)");
  std::smatch match;
  if (!std::regex_match(tag, match, k_tag)) return std::nullopt;
  return std::stoll(match[1]);
}

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
