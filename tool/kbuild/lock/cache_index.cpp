#include "kbuild/lock/cache_index.hpp"

#include <algorithm>

#include "kbuild/lock/hf_cache.hpp"
#include "kbuild/util/hash.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::lock {

namespace fs = std::filesystem;

namespace {

constexpr const char* k_online_hint =
    "run the same command once without HF_HUB_OFFLINE (and without --offline) while the Hub can be reached: "
    "`kbuild download` puts the locked variants into the cache";

Error offline_error(std::string message, std::string hint = k_online_hint) {
  return Error{ExitCode::network, "offline (HF_HUB_OFFLINE): " + std::move(message), std::move(hint)};
}

bool is_hex_id(const std::string& text) {
  return (text.size() == 40 || text.size() == 64) &&
         std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// Every file below `dir`, relative to it: the snapshot's links to blobs count as files (a link to a
// directory is not followed).
Result<void> snapshot_files(const util::FileSystem& fs, const fs::path& dir, const std::string& prefix,
                            std::vector<std::string>& out) {
  KB_TRY_ASSIGN(auto entries, fs.list_dir(prefix.empty() ? dir : dir / prefix));
  for (const auto& entry : entries) {
    std::string rel = prefix.empty() ? entry.name : prefix + "/" + entry.name;
    if (entry.is_dir && !entry.is_symlink)
      KB_TRY(snapshot_files(fs, dir, rel, out));
    else if (entry.is_file)
      out.push_back(std::move(rel));
  }
  return {};
}

}  // namespace

bool offline_requested(const std::map<std::string, std::string>& env) {
  auto it = env.find("HF_HUB_OFFLINE");
  if (it == env.end()) return false;
  std::string value = util::ascii_lowercase(util::trim(it->second));
  return value == "1" || value == "true" || value == "yes" || value == "on";
}

fs::path CacheKernelIndex::snapshot(const std::string& repo_id, const std::string& commit) const {
  return m_root / repo_folder_name(repo_id) / "snapshots" / commit;
}

Result<fs::path> CacheKernelIndex::existing_snapshot(const std::string& repo_id, const std::string& commit) const {
  fs::path dir = snapshot(repo_id, commit);
  if (is_hex_id(commit) && m_fs.stat(dir).is_dir) return dir;
  return fail(offline_error("the Hugging Face cache (" + m_root.string() + ") holds nothing of " + repo_id + "@" +
                            commit.substr(0, 12)));
}

Result<bool> CacheKernelIndex::trusted_publisher(const std::string& ns) {
  for (const auto& repo : m_locked)
    if (repo.starts_with(ns + "/")) return true;
  return fail(offline_error("cannot ask the Hub whether " + ns + " is a trusted kernel publisher",
                            "lock new dependencies while online, or pass --trust " + ns));
}

Result<hub::Refs> CacheKernelIndex::refs(const std::string& repo_id) {
  hub::Refs refs;
  const fs::path dir = m_root / repo_folder_name(repo_id) / "refs";
  if (m_fs.stat(dir).is_dir) {
    KB_TRY_ASSIGN(auto names, util::list_files_recursive(m_fs, dir));
    for (const auto& name : names) {
      auto text = m_fs.read_file(dir / name);
      std::string commit = text ? std::string(util::trim(*text)) : "";
      if (!is_hex_id(commit) || name.starts_with("pr/")) continue;
      // The cache does not say which names are tags: release names (vX.Y.Z) are, the rest branches.
      bool release = name.size() > 1 && name[0] == 'v' && std::count(name.begin(), name.end(), '.') == 2;
      (release ? refs.tags : refs.branches)[name] = commit;
    }
  }
  if (refs.branches.empty() && refs.tags.empty())
    return fail(offline_error(
        "the Hugging Face cache (" + m_root.string() + ") knows no branch or tag of " + repo_id,
        "kernels.lock pins commits, which `kbuild lock --check` and `kbuild download` use offline; `kbuild info " +
            repo_id + " --revision COMMIT` describes a cached commit"));
  return refs;
}

Result<std::vector<std::string>> CacheKernelIndex::variant_dirs(const std::string& repo_id, const std::string& commit) {
  KB_TRY_ASSIGN(fs::path dir, existing_snapshot(repo_id, commit));
  std::vector<std::string> names;
  if (!m_fs.stat(dir / "build").is_dir) return names;
  KB_TRY_ASSIGN(auto entries, m_fs.list_dir(dir / "build"));
  for (const auto& entry : entries)
    if (entry.is_dir) names.push_back(entry.name);
  return names;
}

Result<std::vector<hub::RemoteFile>> CacheKernelIndex::list_files(const std::string& repo_id, const std::string& commit,
                                                                  const std::string& folder) {
  KB_TRY_ASSIGN(fs::path dir, existing_snapshot(repo_id, commit));
  std::vector<hub::RemoteFile> files;
  if (!m_fs.stat(dir / folder).is_dir)
    return fail(
        offline_error("the Hugging Face cache holds no " + folder + " of " + repo_id + "@" + commit.substr(0, 12)));
  std::vector<std::string> rels;
  KB_TRY(snapshot_files(m_fs, dir / folder, "", rels));
  std::sort(rels.begin(), rels.end());
  for (const auto& rel : rels) {
    hub::RemoteFile file;
    file.path = folder + "/" + rel;
    auto blob = m_fs.real_path(dir / folder / rel);
    std::string etag = blob ? blob->filename().string() : "";
    if (!is_hex_id(etag)) {  // not a link into blobs/: named by its own bytes, verified by the digest
      auto sha = util::sha256_file_hex(m_fs, dir / folder / rel);
      if (!sha) return fail(offline_error("cannot read " + file.path + " of " + repo_id + " in the cache"));
      etag = *sha;
    }
    if (etag.size() == 64) file.lfs_sha256 = etag;
    file.oid = etag.size() == 40 ? etag : "";
    file.size = m_fs.stat(dir / folder / rel).size;
    files.push_back(std::move(file));
  }
  return files;
}

Result<std::string> CacheKernelIndex::read_file(const std::string& repo_id, const std::string& commit,
                                                const std::string& path) {
  KB_TRY_ASSIGN(fs::path dir, existing_snapshot(repo_id, commit));
  if (!m_fs.stat(dir / path).is_file)
    return fail(
        offline_error("the Hugging Face cache holds no " + path + " of " + repo_id + "@" + commit.substr(0, 12)));
  return m_fs.read_file(dir / path);
}

Result<void> CacheKernelIndex::fetch(const std::string& repo_id, const std::string& commit, const std::string& path,
                                     const fs::path&) {
  return fail(offline_error(path + " of " + repo_id + "@" + commit.substr(0, 12) +
                            " is missing from the Hugging Face cache, or its cached copy is damaged"));
}

}  // namespace kbuild::lock
