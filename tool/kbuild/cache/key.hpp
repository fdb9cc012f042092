#pragma once
// Cache keys for compile and link jobs. A key must change whenever the output could, and must not
// change with where a checkout, a Torch or a CUDA toolkit lives, nor with settings that do not
// affect the output, so that entries are shared across checkouts, -j values and Torch versions:
//
//   key1 (manifest key) = SHA-256 of fields, each length-prefixed:
//       "kbuild-cache-v2" | job kind | tool identity (compiler versions) | normalised arguments |
//       SHA-256 of the source file
//   result key          = SHA-256 of key1 | ["volatile-define" | its value, when the unit names the
//                         macro] | for every prerequisite the compiler read (from its depfile,
//                         sorted): normalised path | SHA-256 of the content
//   link key            = SHA-256 of "kbuild-link-v1" | tool identity (incl. the Torch/CUDA builds
//                         linked against) | normalised arguments | SHA-256 of every input object
//
// Normalised arguments drop what does not influence the output or is covered elsewhere: the
// compiler path (its identity is hashed instead), -o/-MF/-MD and their files, the source path,
// include directories (-I, -isystem; the headers actually read are hashed), -ffile-prefix-map
// (it only makes outputs location independent), nvcc's --threads and -ccbin, -L directories and
// input objects of a link, and the value of the job's volatile define (the ops id: plan::Job), which
// enters the result key only for units that name the macro. Paths under a job's roots are written as $K/...,
// $TORCH/..., etc.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kbuild/plan/graph.hpp"

namespace kbuild::cache {

using Roots = std::vector<std::pair<std::string, std::filesystem::path>>;

/// "/home/me/k/include/a.h" -> "$K/include/a.h" for the first root containing the path; other
/// paths are returned unchanged.
std::string normalize_path(const std::string& path, const Roots& roots);
/// The inverse, for the roots of the job at hand.
std::string denormalize_path(const std::string& path, const Roots& roots);

/// The arguments of a job that take part in its key (see above).
std::vector<std::string> key_arguments(const plan::Job& job);

/// key1 of a compile job, given the SHA-256 (hex) of its source.
std::string manifest_key(const plan::Job& job, const std::string& source_sha256);
/// The result key from key1, (normalised path, content SHA-256) of every prerequisite, and the volatile
/// define's value when the unit names the macro.
std::string result_key(const std::string& manifest_key, std::vector<std::pair<std::string, std::string>> prerequisites,
                       const std::optional<std::string>& volatile_value);
/// The key of a link job, given the SHA-256 of each input object in order.
std::string link_key(const plan::Job& job, const std::vector<std::string>& input_sha256);

}  // namespace kbuild::cache
