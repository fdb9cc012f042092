#pragma once
// Unpacking Debian packages (.deb) and compressed package indices with libarchive, for the pinned
// host toolchain (host_toolchain.hpp). A .deb is an ar archive whose data.tar.* member holds the
// files; kbuild unpacks that member below a root directory the way dpkg would below /, except:
//  - entry names must be safe relative paths (is_safe_archive_path) after the leading "./";
//  - every write goes through util::ConfinedDir: walked from the root one component at a time, never
//    through a link (an entry that names a path through an earlier link is refused);
//  - an absolute symbolic link ("/lib/x86_64-linux-gnu/libm.so.6") is rewritten relative to the link
//    inside the root, so the tree can move; a link whose target leaves the root, as the kernel would
//    resolve it through the links already there, is refused; verify_contained() checks the finished
//    tree again, since a later link can redirect an earlier one;
//  - a hard link becomes a copy of the regular file it names (written earlier, read without links);
//  - owners and timestamps are not kept; a file is executable when any execute bit is set.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/toolchain/archive.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::toolchain {

struct UnpackedDeb {
  std::vector<std::string> files;     ///< regular files written, relative to the root ("usr/bin/g++-12")
  std::vector<std::string> symlinks;  ///< symbolic links created, relative to the root
  std::uint64_t bytes = 0;
};

/// Unpacks the entries of `deb`'s data member that `select` keeps (given the name without "./";
/// directories are created as needed) below `root`.
Result<UnpackedDeb> extract_deb(const std::filesystem::path& deb, const std::filesystem::path& root,
                                const EntrySelector& select);

/// Error when a symbolic link in the tree at `root` leads outside it (after every package of a
/// toolchain was unpacked, before anything uses the tree).
Result<void> verify_contained(const std::filesystem::path& root);

/// The target a symbolic link at `link` (relative to the root) must have inside the root: an
/// absolute `target` made relative to the link's directory, a relative one kept; nullopt when the
/// link would point outside the root.
std::optional<std::string> contained_link_target(std::string_view link, std::string_view target);

/// The decompressed content of `file` (xz, gzip, zstd, bzip2 or none, as libarchive detects), at most
/// `limit` bytes (more is an error).
Result<std::string> decompress_file(const std::filesystem::path& file, std::uint64_t limit);

}  // namespace kbuild::toolchain
