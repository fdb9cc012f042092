#pragma once
// `kbuild update-build`: rewrites an edition-less (v4) build.toml as edition 5 in place, keeping its
// comments, order and formatting: the only change is an `edition = 5` line after the [general]
// header (v4 and v5 differ in nothing else kbuild reads). v3 files are refused, with the way out.

#include <optional>
#include <string>
#include <string_view>

#include "kbuild/util/result.hpp"

namespace kbuild::config {

/// The updated text, or nullopt when `text` is edition 5 already. Errors (exit 2): a file with
/// errors other than the missing edition (fix those first), a v3 file, no [general] header line.
Result<std::optional<std::string>> update_build_toml(std::string_view text, const std::string& file_name);

}  // namespace kbuild::config
