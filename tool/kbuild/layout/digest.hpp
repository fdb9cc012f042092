#pragma once
// The per-file digest stored in metadata.json (kernels-data digest.rs):
//   {"algorithm": "sha256", "files": {"<relpath>": "<base64 of sha256(file bytes)>", ...}}
// Keys are paths relative to the variant directory with '/' separators, sorted bytewise. Excluded:
// metadata.json and metadata.json.sigstore at the top level only, any path with a __pycache__
// component, and *.pyc files.

#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "kbuild/util/fs.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::layout {

/// relpath -> base64(sha256). std::map keeps byte order, which is the required key order.
using Digest = std::map<std::string, std::string>;

/// Whether a file at `relpath` inside a variant directory takes part in the digest.
bool is_digested(std::string_view relpath);
/// base64 of the SHA-256 of `content`.
std::string digest_value(std::string_view content);
/// Hashes every digested file under `variant_dir`.
Result<Digest> hash_variant_dir(const util::FileSystem& fs, const std::filesystem::path& variant_dir);

}  // namespace kbuild::layout
