#pragma once
// libarchive's functions, for every archive kbuild reads (an internal header of the toolchain module:
// the others see archive.hpp and deb_archive.hpp, which name no libarchive type): Debian packages and package indices
// (deb_archive.hpp) and wheels and source zips (archive.hpp). One archive library serves them all.
// Loaded on first use in a build against shared libraries (util/shared_library.hpp); bound to the
// linked functions in a static build (KBUILD_STATIC_LIBRARIES, the wheel: docs/install.md).

#include <archive.h>
#include <archive_entry.h>

#include <memory>
#include <string>

#include "kbuild/util/result.hpp"

namespace kbuild::toolchain {

struct ArchiveApi {
  decltype(&::archive_read_new) read_new;
  decltype(&::archive_read_free) read_free;
  decltype(&::archive_read_data) read_data;
  decltype(&::archive_error_string) error_string;
  decltype(&::archive_read_support_filter_all) read_support_filter_all;
  decltype(&::archive_read_support_format_ar) read_support_format_ar;
  decltype(&::archive_read_support_format_raw) read_support_format_raw;
  decltype(&::archive_read_support_format_tar) read_support_format_tar;
  decltype(&::archive_read_support_format_zip_seekable) read_support_format_zip_seekable;
  decltype(&::archive_read_open) read_open;
  decltype(&::archive_read_open_filename) read_open_filename;
  decltype(&::archive_read_next_header) read_next_header;
  decltype(&::archive_entry_pathname) entry_pathname;
  decltype(&::archive_entry_mode) entry_mode;
  decltype(&::archive_entry_hardlink) entry_hardlink;
  decltype(&::archive_entry_symlink) entry_symlink;
  decltype(&::archive_version_details) version_details;
};

/// The functions, loaded once per process (an error names the library and the package to install).
const Result<ArchiveApi>& archive_api();

/// Only where archive_api() succeeded.
inline const ArchiveApi& libarchive() { return *archive_api(); }

struct ArchiveCloser {
  void operator()(archive* a) const { libarchive().read_free(a); }
};
using ArchivePtr = std::unique_ptr<archive, ArchiveCloser>;

/// libarchive's error message for `a` (never null).
std::string archive_error(archive* a);

/// An entry's path name ("" when it has none).
std::string entry_path(archive_entry* entry);

}  // namespace kbuild::toolchain
