#include "kbuild/util/hash.hpp"

// The one-shot digest functions (SHA256_Init...), deprecated in OpenSSL 3 in favour of EVP, are kept on
// purpose: EVP's first digest fetches it from the default provider, which builds OpenSSL's name map of
// every algorithm (about 1.3 ms of CPU here, in every kbuild process, a tenth of a no-op build), and each
// later EVP_DigestInit looks the algorithm up again. These call the same assembly directly.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/md5.h>
#include <openssl/sha.h>

#include <cstdio>
#include <fstream>
#include <variant>
#include <vector>

namespace kbuild::util {

struct Hasher::Impl {
  std::variant<SHA256_CTX, SHA_CTX, SHA512_CTX, MD5_CTX> ctx;
};

namespace {
void init(SHA256_CTX& c) { SHA256_Init(&c); }
void init(SHA_CTX& c) { SHA1_Init(&c); }
void init(SHA512_CTX& c) { SHA512_Init(&c); }
void init(MD5_CTX& c) { MD5_Init(&c); }
void feed(SHA256_CTX& c, const void* data, size_t size) { SHA256_Update(&c, data, size); }
void feed(SHA_CTX& c, const void* data, size_t size) { SHA1_Update(&c, data, size); }
void feed(SHA512_CTX& c, const void* data, size_t size) { SHA512_Update(&c, data, size); }
void feed(MD5_CTX& c, const void* data, size_t size) { MD5_Update(&c, data, size); }
template <typename Final>
std::string digest_of(size_t size, Final final) {
  std::string out(size, '\0');
  final(reinterpret_cast<unsigned char*>(out.data()));
  return out;
}
std::string finish(SHA256_CTX& c) {
  return digest_of(SHA256_DIGEST_LENGTH, [&](unsigned char* out) { SHA256_Final(out, &c); });
}
std::string finish(SHA_CTX& c) {
  return digest_of(SHA_DIGEST_LENGTH, [&](unsigned char* out) { SHA1_Final(out, &c); });
}
std::string finish(SHA512_CTX& c) {
  return digest_of(SHA512_DIGEST_LENGTH, [&](unsigned char* out) { SHA512_Final(out, &c); });
}
std::string finish(MD5_CTX& c) {
  return digest_of(MD5_DIGEST_LENGTH, [&](unsigned char* out) { MD5_Final(out, &c); });
}
}  // namespace

Hasher::Hasher(Algorithm algorithm) : m_impl(std::make_unique<Impl>()) {
  switch (algorithm) {
    case Algorithm::sha1:
      m_impl->ctx.emplace<SHA_CTX>();
      break;
    case Algorithm::sha512:
      m_impl->ctx.emplace<SHA512_CTX>();
      break;
    case Algorithm::md5:
      m_impl->ctx.emplace<MD5_CTX>();
      break;
    case Algorithm::sha256:
      break;
  }
  std::visit([](auto& c) { init(c); }, m_impl->ctx);
}

Hasher::~Hasher() = default;

Hasher& Hasher::update(std::string_view bytes) {
  std::visit([&](auto& c) { feed(c, bytes.data(), bytes.size()); }, m_impl->ctx);
  return *this;
}

Hasher& Hasher::update(std::span<const std::uint8_t> bytes) {
  std::visit([&](auto& c) { feed(c, bytes.data(), bytes.size()); }, m_impl->ctx);
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
  return std::visit([](auto& c) { return finish(c); }, m_impl->ctx);
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
