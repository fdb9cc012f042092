#pragma once
// The content-addressed blob directory of a registry root (layout in store.hpp): every file content
// ever committed or uploaded, named by its SHA-256 under <root>/blobs/<sha256[0:2]>/<sha256>. A blob is
// written to <root>/tmp first, fsynced, then renamed into place (and its directory fsynced), so a
// blob path that exists always holds the complete content. Blobs are never deleted.
//
// Thread safety: all members may be called concurrently; concurrent writers of the same content
// rename identical files onto the same path.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "kbuild/util/result.hpp"

namespace kbuild::server {

/// Result of checking uploaded bytes against the announced oid and size.
enum class BlobCheck { ok, wrong_size, wrong_hash };

class BlobStore {
 public:
  /// The blobs of registry root `root` (<root>/blobs, with temporary files in <root>/tmp).
  explicit BlobStore(std::filesystem::path root);

  /// A fresh, unused path inside <root>/tmp.
  std::filesystem::path temp_path() const;
  std::filesystem::path path(std::string_view sha256) const;
  /// Size of a stored blob; nullopt when absent (or `sha256` is not 64 lowercase hex).
  std::optional<std::uint64_t> size(std::string_view sha256) const;
  /// Stores `content` (durably) and returns its SHA-256.
  Result<std::string> put(std::string_view content) const;
  /// Hashes `file` (which must be inside <root>/tmp); when it has `size` bytes and SHA-256 `sha256`,
  /// renames it into the blob directory. The file is gone afterwards in every case.
  Result<BlobCheck> adopt(const std::filesystem::path& file, std::string_view sha256, std::uint64_t size) const;
  Result<std::string> read(std::string_view sha256) const;

 private:
  std::filesystem::path m_root;
};

}  // namespace kbuild::server
