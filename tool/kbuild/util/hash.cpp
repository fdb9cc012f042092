#include "kbuild/util/hash.hpp"

#include <openssl/evp.h>

#include <cstdio>
#include <fstream>
#include <vector>

namespace kbuild::util {

struct Hasher::Impl {
  EVP_MD_CTX* ctx = nullptr;
};

Hasher::Hasher(Algorithm algorithm) : m_impl(std::make_unique<Impl>()) {
  m_impl->ctx = EVP_MD_CTX_new();
  const EVP_MD* md = algorithm == Algorithm::sha1     ? EVP_sha1()
                     : algorithm == Algorithm::sha512 ? EVP_sha512()
                     : algorithm == Algorithm::md5    ? EVP_md5()
                                                      : EVP_sha256();
  EVP_DigestInit_ex(m_impl->ctx, md, nullptr);
}

Hasher::~Hasher() { EVP_MD_CTX_free(m_impl->ctx); }

Hasher& Hasher::update(std::string_view bytes) {
  EVP_DigestUpdate(m_impl->ctx, bytes.data(), bytes.size());
  return *this;
}

Hasher& Hasher::update(std::span<const std::uint8_t> bytes) {
  EVP_DigestUpdate(m_impl->ctx, bytes.data(), bytes.size());
  return *this;
}

// "<decimal length>:<bytes>\n". Compile-cache keys, job keys, toolchain identities and the probe memo are
// built from fields: changing this encoding changes them all (every cache entry misses, every job re-runs).
Hasher& Hasher::field(std::string_view bytes) {
  std::string prefix = std::to_string(bytes.size()) + ":";
  update(prefix);
  update(bytes);
  return update(std::string_view("\n", 1));
}

std::string Hasher::finish_raw() {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_DigestFinal_ex(m_impl->ctx, out, &size);
  return std::string(reinterpret_cast<const char*>(out), size);
}

std::string Hasher::finish_hex() { return to_hex(finish_raw()); }

std::string sha256_hex(std::string_view bytes) { return Hasher().update(bytes).finish_hex(); }

std::string sha1_hex(std::string_view bytes) { return Hasher(Hasher::Algorithm::sha1).update(bytes).finish_hex(); }

std::string md5_hex(std::string_view bytes) { return Hasher(Hasher::Algorithm::md5).update(bytes).finish_hex(); }

Result<std::string> sha256_file_raw(const FileSystem& fs, const std::filesystem::path& path) {
  Hasher hasher;
  KB_TRY(fs.read_chunks(path, [&](std::string_view chunk) { hasher.update(chunk); }));
  return hasher.finish_raw();
}

Result<std::string> sha256_file_hex(const FileSystem& fs, const std::filesystem::path& path) {
  KB_TRY_ASSIGN(std::string raw, sha256_file_raw(fs, path));
  return to_hex(raw);
}

// Lowercase: digests are compared as strings with the Hub's ids (git and LFS oids, commit ids), which are
// lowercase hex.
std::string to_hex(std::string_view raw) {
  static constexpr char k_digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(raw.size() * 2);
  for (unsigned char c : raw) {
    out.push_back(k_digits[c >> 4]);
    out.push_back(k_digits[c & 15]);
  }
  return out;
}

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool from_hex(std::string_view hex, std::string& out) {
  if (hex.size() % 2 != 0) return false;
  out.clear();
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = hex_value(hex[i]), lo = hex_value(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out.push_back(static_cast<char>(hi * 16 + lo));
  }
  return true;
}

static constexpr char k_base64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64_encode(std::string_view raw) {
  std::string out;
  out.reserve((raw.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < raw.size(); i += 3) {
    unsigned v = (unsigned char)raw[i] << 16 | (unsigned char)raw[i + 1] << 8 | (unsigned char)raw[i + 2];
    out += k_base64[v >> 18];
    out += k_base64[(v >> 12) & 63];
    out += k_base64[(v >> 6) & 63];
    out += k_base64[v & 63];
  }
  if (i + 1 == raw.size()) {
    unsigned v = (unsigned char)raw[i] << 16;
    out += k_base64[v >> 18];
    out += k_base64[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == raw.size()) {
    unsigned v = (unsigned char)raw[i] << 16 | (unsigned char)raw[i + 1] << 8;
    out += k_base64[v >> 18];
    out += k_base64[(v >> 12) & 63];
    out += k_base64[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

// Accepts padded text, or unpadded text of any length; refuses data after '='. Bits left over in a final
// partial group are dropped, not checked, so this is no validator of canonical base64.
bool base64_decode(std::string_view text, std::string& out) {
  out.clear();
  unsigned buffer = 0;
  int bits = 0;
  size_t padding = 0;
  for (char c : text) {
    if (c == '=') {
      ++padding;
      continue;
    }
    if (padding > 0) return false;  // data after padding
    const char* p = std::char_traits<char>::find(k_base64, 64, c);
    if (!p) return false;
    buffer = (buffer << 6) | static_cast<unsigned>(p - k_base64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xff));
    }
  }
  return padding <= 2 && (text.size() % 4 == 0 || padding == 0);
}

// The alphabet is [a-z2-7] and there is no '=' padding: a registry token needs no quoting or escaping in
// config.toml, a header or a URL.
std::string base32_lower_nopad(std::string_view raw) {
  static constexpr char k_alphabet[] = "abcdefghijklmnopqrstuvwxyz234567";
  std::string out;
  unsigned buffer = 0;
  int bits = 0;
  for (unsigned char c : raw) {
    buffer = (buffer << 8) | c;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += k_alphabet[(buffer >> bits) & 31];
    }
  }
  if (bits > 0) out += k_alphabet[(buffer << (5 - bits)) & 31];
  return out;
}

// What `git hash-object` gives, and the Hub's tree `oid` of a regular file: "" ->
// e69de29bb2d1d6434b8b29ae775ad8c2e48c5391, "Hello, World!" -> b45ef6fec89518d314f546fd6c3025367b721684.
std::string git_blob_id(std::string_view content) {
  Hasher hasher(Hasher::Algorithm::sha1);
  std::string header = "blob " + std::to_string(content.size());
  hasher.update(header);
  hasher.update(std::string_view("\0", 1));
  hasher.update(content);
  return hasher.finish_hex();
}

}  // namespace kbuild::util
