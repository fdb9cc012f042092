#include "kbuild/cache/entry.hpp"

#include <algorithm>

#include "kbuild/cache/key.hpp"
#include "kbuild/util/hash.hpp"

namespace kbuild::cache {

namespace {
constexpr std::string_view k_object_magic = "KBOBJ2 ";

bool is_key_value(const nlohmann::json& value) {
  return value.is_string() && is_cache_key(value.get_ref<const std::string&>());
}

// Why an entry of a manifest under `key` is malformed or points elsewhere; empty when it is sound.
std::string entry_problem(const nlohmann::json& entry, std::string_view key) {
  if (!entry.is_object() || !is_key_value(entry.value("result", nlohmann::json())) || !entry.contains("inputs") ||
      !entry["inputs"].is_array())
    return "an entry does not have the documented shape";
  std::vector<std::pair<std::string, std::string>> inputs;
  for (const auto& input : entry["inputs"]) {
    if (!input.is_array() || input.size() != 2 || !input[0].is_string() || !is_key_value(input[1]))
      return "an input is not [path, sha256]";
    inputs.emplace_back(input[0].get<std::string>(), input[1].get<std::string>());
  }
  std::optional<std::string> volatile_value;
  if (entry.contains("volatile")) {
    if (!entry["volatile"].is_string()) return "a volatile value is not a string";
    volatile_value = entry["volatile"].get<std::string>();
  }
  if (result_key(std::string(key), std::move(inputs), volatile_value) != entry["result"].get<std::string>())
    return "an entry's result is not the key of its inputs";
  return "";
}
}  // namespace

bool is_cache_key(std::string_view text) {
  return text.size() == 64 &&
         std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string encode_object(std::string_view key, std::string_view bytes) {
  return std::string(k_object_magic) + std::string(key) + " " + util::sha256_hex(bytes) + " " +
         std::to_string(bytes.size()) + "\n";
}

std::optional<std::string> decode_object(std::string stored, std::string_view key, std::string& why) {
  size_t newline = stored.find('\n');
  if (newline == std::string::npos || newline > 200 || !stored.starts_with(k_object_magic)) {
    why = "not a kbuild cache object (or an older format)";
    return std::nullopt;
  }
  std::string_view header(stored.data(), newline + 1);
  std::string_view stored_key = header.substr(k_object_magic.size(), 64);
  if (stored_key != key) {
    why = "stored under another key (copied or linked from elsewhere)";
    return std::nullopt;
  }
  std::string bytes = stored.substr(newline + 1);
  if (encode_object(key, bytes) != header) {
    why = "its bytes do not match its header (truncated or modified)";
    return std::nullopt;
  }
  return bytes;
}

bool plausible_output(bool shared_library, std::string_view bytes) {
  if (bytes.size() < 18 || bytes.substr(0, 4) !=
                               "\x7f"
                               "ELF")
    return true;
  // e_type at offset 16, in the byte order of EI_DATA (5): 1 little-endian, 2 big-endian.
  auto low = static_cast<unsigned char>(bytes[bytes[5] == 2 ? 17 : 16]);
  auto high = static_cast<unsigned char>(bytes[bytes[5] == 2 ? 16 : 17]);
  unsigned type = low | (high << 8);
  return type == (shared_library ? 3u : 1u);  // ET_DYN : ET_REL
}

std::string encode_manifest(std::string_view key, const nlohmann::json& entries) {
  return nlohmann::json{{"key", key}, {"entries", entries}}.dump() + "\n";
}

std::optional<nlohmann::json> decode_manifest(const std::string& text, std::string_view key, std::string& why) {
  auto manifest = nlohmann::json::parse(text, nullptr, false);
  if (!manifest.is_object() || !manifest.contains("entries") || !manifest["entries"].is_array()) {
    why = "not a kbuild cache manifest (or an older format)";
    return std::nullopt;
  }
  if (manifest.value("key", nlohmann::json()) != key) {
    why = "stored under another key (copied or linked from elsewhere)";
    return std::nullopt;
  }
  for (const auto& entry : manifest["entries"]) {
    if (std::string problem = entry_problem(entry, key); !problem.empty()) {
      why = problem;
      return std::nullopt;
    }
  }
  return manifest["entries"];
}

}  // namespace kbuild::cache
