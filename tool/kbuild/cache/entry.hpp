#pragma once
// The on-disk (and on-wire, cache/remote.hpp) format of compile-cache entries, pure. An entry binds
// the key it is stored under, so a file copied, linked or renamed to another key is damage, never a
// hit:
//   object    "KBOBJ2 <key> <sha256 of the bytes> <size>\n" followed by the bytes
//   manifest  JSON {"key": <manifest key>, "entries": [{"result": <key>, "inputs": [[path, sha256],
//             ...], "volatile": value}]}, where each entry's result must equal
//             cache::result_key(key, inputs, volatile): an entry cannot point at another job's object.
// Keys are 64 lowercase hex digits (SHA-256), so a key is never a path.

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace kbuild::cache {

bool is_cache_key(std::string_view text);

std::string encode_object(std::string_view key, std::string_view bytes);
/// The bytes of a stored object under `key`; nullopt when damaged, `why` saying how.
std::optional<std::string> decode_object(std::string stored, std::string_view key, std::string& why);

/// Whether restored bytes can be a job's output: an ELF file must be a shared library (ET_DYN) for a
/// link and a relocatable object (ET_REL) for a compile, so an entry with a consistent header but
/// the other kind of output (planted, or a cache shared with a broken tool) is damage. Bytes that are
/// not ELF at all are left to the linker and the ABI gate.
bool plausible_output(bool shared_library, std::string_view bytes);

std::string encode_manifest(std::string_view key, const nlohmann::json& entries);
/// The entries of a manifest stored under `key`; nullopt when damaged, `why` saying how.
std::optional<nlohmann::json> decode_manifest(const std::string& text, std::string_view key, std::string& why);

}  // namespace kbuild::cache
