#pragma once
// Extracting selected entries of a wheel or a source zip with libarchive (libarchive_api.hpp). Entry
// names are untrusted: absolute names, ".." components, empty components and backslashes are refused,
// and so are symbolic links, before anything is written; only regular files are written, into a
// directory kbuild just made, so nothing is written through a link.

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/util/fs.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::toolchain {

/// libarchive's version and its compression libraries, as loaded (`kbuild --version`).
std::string archive_library_version();

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
/// needed), writing through `fs` in bounded memory (libarchive reads `archive` itself, from the real
/// filesystem). File modes: executable when the entry's Unix mode has an execute bit. Fails on the
/// first unsafe name or link, before writing anything.
Result<ExtractStats> extract_zip(util::FileSystem& fs, const std::filesystem::path& archive,
                                 const std::filesystem::path& target, const EntrySelector& select);

/// Entry names of a zip (for tests and diagnostics).
Result<std::vector<std::string>> list_zip(const std::filesystem::path& archive);

}  // namespace kbuild::toolchain
