#include "kbuild/lock/download.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "kbuild/layout/digest.hpp"
#include "kbuild/layout/metadata.hpp"
#include "kbuild/lock/hf_cache.hpp"
#include "kbuild/util/hash.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::lock {

namespace {

Error verify_error(std::string message, std::string hint) {
  return Error{ExitCode::failure, std::move(message), std::move(hint)};
}

bool is_bytecode(const std::string& rel) {
  return rel.ends_with(".pyc") || rel == "__pycache__" || rel.starts_with("__pycache__/") ||
         rel.find("/__pycache__/") != std::string::npos || rel.ends_with("/__pycache__");
}

struct FileHashes {
  std::string sha256_hex;
  std::string git_blob_id;
  std::string digest_value;  ///< base64 of the metadata digest algorithm's hash
  std::uint64_t size = 0;
};

Result<FileHashes> hash_file(const util::FileSystem& fs, const std::filesystem::path& path,
                             const std::string& digest_algorithm) {
  auto st = fs.stat(path);
  if (!st.is_file) return fail("cannot read " + path.string());
  util::Hasher sha256, sha1(util::Hasher::Algorithm::sha1), sha512(util::Hasher::Algorithm::sha512);
  sha1.update("blob " + std::to_string(st.size) + std::string(1, '\0'));
  bool want512 = digest_algorithm == "sha512";
  std::uint64_t seen = 0;
  KB_TRY(fs.read_chunks(path, [&](std::string_view chunk) {
    sha256.update(chunk);
    sha1.update(chunk);
    if (want512) sha512.update(chunk);
    seen += chunk.size();
  }));
  if (seen != st.size) return fail(path.string() + " changed while it was read");
  FileHashes out;
  std::string raw256 = sha256.finish_raw();
  out.sha256_hex = util::to_hex(raw256);
  out.git_blob_id = sha1.finish_hex();
  out.digest_value = util::base64_encode(want512 ? sha512.finish_raw() : raw256);
  out.size = st.size;
  return out;
}

// Whether the bytes at `path` are the remote file: its LFS sha256, else its git blob id.
bool matches_remote(const FileHashes& hashes, const hub::RemoteFile& remote) {
  if (remote.lfs_sha256) return hashes.sha256_hex == *remote.lfs_sha256;
  return hashes.git_blob_id == remote.oid;
}

std::string etag_of(const hub::RemoteFile& remote) { return remote.lfs_sha256.value_or(remote.oid); }

bool is_safe_etag(const std::string& etag) {
  return (etag.size() == 40 || etag.size() == 64) &&
         std::all_of(etag.begin(), etag.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

class Installer {
 public:
  Installer(const DownloadOptions& options, KernelIndex& index, util::FileSystem& fs)
      : m_options(options), m_index(index), m_fs(fs) {}

  Result<void> install_commit(const std::string& repo, const std::string& commit, DownloadOutcome& outcome) {
    progress("resolving the variants of " + repo + "@" + commit.substr(0, 12));
    KB_TRY_ASSIGN(auto names, m_index.variant_dirs(repo, commit));
    std::sort(names.begin(), names.end());
    std::vector<std::string> chosen;
    if (m_options.all_variants) {
      for (const auto& name : names)
        if (parse_loader_variant(name)) chosen.push_back(name);
      if (chosen.empty()) return fail(verify_error(repo + "@" + commit.substr(0, 12) + " has no build variants", ""));
    } else {
      std::vector<VariantDecision> trace;
      auto pick = select_variant(names, m_options.system, &trace);
      if (!pick) {
        std::vector<std::string> lines;
        for (const auto& d : trace) lines.push_back(d.variant.name + ": " + d.reason);
        return fail(verify_error(
            "no variant of " + repo + "@" + commit.substr(0, 12) + " can be loaded on this machine (" +
                m_options.system.describe() + ")",
            (lines.empty() ? std::string("the revision has no build variants")
                           : "the variants and why they do not fit:\n    " + util::join(lines, "\n    ")) +
                "\n  use --all-variants to download every variant, or --python to describe another environment"));
      }
      chosen.push_back(*pick);
    }
    for (const auto& variant : chosen) {
      KB_TRY_ASSIGN(auto installed, install_variant(repo, commit, variant));
      outcome.variants.push_back(std::move(installed));
    }
    return {};
  }

 private:
  void progress(const std::string& line) const {
    if (m_options.progress) m_options.progress(line);
  }

  // Makes sure blobs/<etag> holds the remote file, downloading it when missing or wrong. Returns
  // its hashes, and whether it was downloaded.
  Result<std::pair<FileHashes, bool>> ensure_blob(const std::string& repo, const std::string& commit,
                                                  const std::filesystem::path& repo_dir, const hub::RemoteFile& remote,
                                                  const std::string& digest_algorithm) {
    std::string etag = etag_of(remote);
    if (!is_safe_etag(etag))
      return fail(
          verify_error("the Hub listed " + remote.path + " of " + repo + " with an invalid id \"" + etag + "\"", ""));
    auto blob = repo_dir / "blobs" / etag;
    bool damaged = false;
    if (m_fs.stat(blob).is_file) {
      auto hashes = hash_file(m_fs, blob, digest_algorithm);
      if (hashes && matches_remote(*hashes, remote)) return std::pair(*hashes, false);
      damaged = true;
    }
    KB_TRY(m_fs.make_dirs(repo_dir / "blobs"));
    auto temp = util::temp_sibling(blob);
    auto fetched = m_index.fetch(repo, commit, remote.path, temp);
    if (!fetched) {
      (void)m_fs.remove_all(temp);
      return fail(fetched.error());
    }
    auto hashes = hash_file(m_fs, temp, digest_algorithm);
    if (!hashes || !matches_remote(*hashes, remote)) {
      (void)m_fs.remove_all(temp);
      return fail(verify_error("the download of " + remote.path + " from " + repo + "@" + commit.substr(0, 12) +
                                   " does not match the Hub's id " + etag,
                               "the transfer was corrupted or the server is inconsistent; run the command again"));
    }
    auto renamed = m_fs.rename(temp, blob);
    if (!renamed) {
      (void)m_fs.remove_all(temp);
      return fail(renamed.error());
    }
    if (damaged && m_options.repaired) m_options.repaired(repo + "@" + commit.substr(0, 12) + " " + remote.path);
    return std::pair(*hashes, true);
  }

  Result<InstalledVariant> install_variant(const std::string& repo, const std::string& commit,
                                           const std::string& variant) {
    const std::string where = repo + "@" + commit.substr(0, 12) + " build/" + variant;
    const std::string prefix = "build/" + variant + "/";
    auto repo_dir = m_options.cache_root / repo_folder_name(repo);
    progress("downloading " + where);
    KB_TRY_ASSIGN(auto listing, m_index.list_files(repo, commit, "build/" + variant));
    std::map<std::string, hub::RemoteFile> files;  // relative to the variant directory
    for (auto& remote : listing) {
      if (!remote.path.starts_with(prefix)) continue;
      std::string rel = remote.path.substr(prefix.size());
      if (is_bytecode(rel)) continue;
      files.emplace(rel, std::move(remote));
    }
    auto metadata_file = files.find("metadata.json");
    if (metadata_file == files.end())
      return fail(verify_error(where + " has no metadata.json", "this is not a kernel build variant"));

    // metadata.json first: it says what every other file must hash to.
    KB_TRY_ASSIGN(auto metadata_blob, ensure_blob(repo, commit, repo_dir, metadata_file->second, "sha256"));
    KB_TRY_ASSIGN(std::string metadata_text, m_fs.read_file(repo_dir / "blobs" / etag_of(metadata_file->second)));
    auto metadata = layout::Metadata::parse(metadata_text);
    if (!metadata) return fail(verify_error(where + "/metadata.json is invalid: " + metadata.error().message, ""));
    if (!metadata->digest)
      return fail(verify_error(where + "/metadata.json has no digest, so its files cannot be verified",
                               "ask the publisher to rebuild with kbuild or kernel-builder, which write one"));
    const layout::Digest& digest = *metadata->digest;
    for (const auto& [rel, remote] : files)
      if (layout::is_digested(rel) && !digest.count(rel))
        return fail(verify_error(where + "/" + rel + " is not listed in metadata.json's digest",
                                 "the variant on the Hub was changed after it was built; nothing was installed"));
    for (const auto& [rel, value] : digest)
      if (!files.count(rel))
        return fail(verify_error(where + "/" + rel + " is listed in metadata.json's digest but missing on the Hub",
                                 "the variant on the Hub is incomplete; nothing was installed"));

    InstalledVariant installed{repo, commit, variant, {}, files.size(), metadata_blob.second ? 1u : 0u, 0};
    for (const auto& [rel, remote] : files) {
      if (rel == "metadata.json") continue;
      KB_TRY_ASSIGN(auto blob, ensure_blob(repo, commit, repo_dir, remote, metadata->digest_algorithm));
      auto expected = digest.find(rel);
      if (expected != digest.end() && expected->second != blob.first.digest_value)
        return fail(verify_error(where + "/" + rel + " does not match metadata.json's digest (" +
                                     metadata->digest_algorithm + " " + expected->second + ", got " +
                                     blob.first.digest_value + ")",
                                 "the variant on the Hub was modified after it was built; nothing was installed"));
      installed.downloaded += blob.second ? 1 : 0;
      installed.bytes += blob.first.size;
    }

    // Every file is verified: link the snapshot in a temporary directory and swap it into place.
    auto final_dir = repo_dir / "snapshots" / commit / "build" / variant;
    auto temp_dir = util::temp_sibling(final_dir);
    auto linked = [&]() -> Result<void> {
      KB_TRY(m_fs.make_dirs(temp_dir));
      for (const auto& [rel, remote] : files) {
        auto link = temp_dir / rel;
        KB_TRY(m_fs.make_dirs(link.parent_path()));
        KB_TRY(m_fs.create_symlink(snapshot_link_target(prefix + rel, etag_of(remote)), link));
      }
      return {};
    }();
    if (!linked) {
      (void)m_fs.remove_all(temp_dir);
      return fail(linked.error());
    }
    if (m_fs.stat(final_dir).exists) {
      auto old = util::temp_sibling(final_dir);
      KB_TRY(m_fs.rename(final_dir, old));
      KB_TRY(m_fs.rename(temp_dir, final_dir));
      KB_TRY(m_fs.remove_all(old));
    } else {
      KB_TRY(m_fs.rename(temp_dir, final_dir));
    }
    installed.path = final_dir;
    return installed;
  }

  const DownloadOptions& m_options;
  KernelIndex& m_index;
  util::FileSystem& m_fs;
};

}  // namespace

Result<DownloadOutcome> download_locked(const std::vector<LockEntry>& entries, const DownloadOptions& options,
                                        KernelIndex& index, util::FileSystem& fs) {
  Installer installer(options, index, fs);
  DownloadOutcome outcome;
  std::set<std::pair<std::string, std::string>> done;
  for (const auto& entry : entries) {
    if (!done.insert({entry.dependency.repo_id, entry.commit}).second) continue;
    KB_TRY(installer.install_commit(entry.dependency.repo_id, entry.commit, outcome));
  }
  return outcome;
}

}  // namespace kbuild::lock
