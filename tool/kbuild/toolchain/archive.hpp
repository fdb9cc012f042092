#pragma once
// Extracting selected entries of a wheel (a zip archive) with libzip. Entry names are untrusted:
// absolute names, ".." components, empty components and backslashes are refused before anything is
// written, so an archive cannot write outside the target directory.

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/util/fs.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::toolchain {

/// libzip's version, as loaded (`kbuild --version`).
std::string zip_library_version();

/// Whether `name` is a safe relative path inside an archive ("a/b.h" yes; "/x", "a/../b", "a//b",
/// "a\\b" no).
bool is_safe_archive_path(std::string_view name);

/// Maps an entry name to where it goes, relative to the target directory; nullopt skips it.
using EntrySelector = std::function<std::optional<std::string>(const std::string& name)>;

struct ExtractStats {
  size_t files = 0;
  std::uint64_t bytes = 0;
};

/// Extracts the selected regular-file entries of the zip at `archive` below `target` (created if
/// needed), writing through `fs` in bounded memory (libzip reads `archive` itself, from the real
/// filesystem). File modes: executable when the entry's Unix mode has an execute bit. Fails on the
/// first unsafe name, before writing anything.
Result<ExtractStats> extract_zip(util::FileSystem& fs, const std::filesystem::path& archive,
                                 const std::filesystem::path& target, const EntrySelector& select);

/// Entry names of a zip (for tests and diagnostics).
Result<std::vector<std::string>> list_zip(const std::filesystem::path& archive);

}  // namespace kbuild::toolchain
