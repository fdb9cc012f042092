#pragma once
// Hashes and encodings used across kbuild: SHA-256 for digests, cache keys and LFS oids, SHA-1 for
// git object ids, base64 for metadata.json digests and Hub commit payloads. Backed by OpenSSL libcrypto.

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "kbuild/util/fs.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::util {

using Sha256Digest = std::array<std::uint8_t, 32>;
using Sha1Digest = std::array<std::uint8_t, 20>;

/// Incremental hasher. Not copyable; one instance per computation.
class Hasher {
 public:
  enum class Algorithm { sha256, sha1, sha512, md5 };  ///< md5: only to check S3-style ETags
  explicit Hasher(Algorithm algorithm = Algorithm::sha256);
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  Hasher& update(std::string_view bytes);
  Hasher& update(std::span<const std::uint8_t> bytes);
  /// Adds a length-prefixed field, so that ("ab","c") and ("a","bc") hash differently.
  Hasher& field(std::string_view bytes);
  /// Returns the raw digest (32 bytes for SHA-256, 20 for SHA-1, 64 for SHA-512); the hasher is spent.
  std::string finish_raw();
  std::string finish_hex();

 private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

std::string sha256_hex(std::string_view bytes);
std::string sha1_hex(std::string_view bytes);
/// MD5 (hex): not for integrity, only to recognise the ETag S3 gives a part (the MD5 of its bytes).
std::string md5_hex(std::string_view bytes);
/// SHA-256 of a file's contents, streamed through `fs`. Error if the file cannot be read.
Result<std::string> sha256_file_raw(const FileSystem& fs, const std::filesystem::path& path);
Result<std::string> sha256_file_hex(const FileSystem& fs, const std::filesystem::path& path);

std::string to_hex(std::string_view raw);
/// Decodes lowercase or uppercase hex; empty optional-like result (false) on malformed input.
bool from_hex(std::string_view hex, std::string& out);

/// Standard base64 (RFC 4648 §4) with padding.
std::string base64_encode(std::string_view raw);
bool base64_decode(std::string_view text, std::string& out);
/// Lowercase RFC 4648 base32 without padding (registry tokens).
std::string base32_lower_nopad(std::string_view raw);

/// Git blob id of `content`: SHA-1 over "blob <size>\0<content>".
std::string git_blob_id(std::string_view content);

}  // namespace kbuild::util
