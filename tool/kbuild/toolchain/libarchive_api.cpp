#include "kbuild/toolchain/libarchive_api.hpp"

#include "kbuild/toolchain/archive.hpp"

#include "kbuild/util/lazy_libraries.hpp"
#include "kbuild/util/shared_library.hpp"

namespace kbuild::toolchain {

namespace {

Result<void> bind_archive(const util::SharedLibrary& library, ArchiveApi& functions) {
  KB_TRY(KB_BIND(library, functions.read_new, archive_read_new));
  KB_TRY(KB_BIND(library, functions.read_free, archive_read_free));
  KB_TRY(KB_BIND(library, functions.read_data, archive_read_data));
  KB_TRY(KB_BIND(library, functions.error_string, archive_error_string));
  KB_TRY(KB_BIND(library, functions.read_support_filter_all, archive_read_support_filter_all));
  KB_TRY(KB_BIND(library, functions.read_support_format_ar, archive_read_support_format_ar));
  KB_TRY(KB_BIND(library, functions.read_support_format_raw, archive_read_support_format_raw));
  KB_TRY(KB_BIND(library, functions.read_support_format_tar, archive_read_support_format_tar));
  KB_TRY(KB_BIND(library, functions.read_support_format_zip_seekable, archive_read_support_format_zip_seekable));
  KB_TRY(KB_BIND(library, functions.read_open, archive_read_open));
  KB_TRY(KB_BIND(library, functions.read_open_filename, archive_read_open_filename));
  KB_TRY(KB_BIND(library, functions.read_next_header, archive_read_next_header));
  KB_TRY(KB_BIND(library, functions.entry_pathname, archive_entry_pathname));
  KB_TRY(KB_BIND(library, functions.entry_mode, archive_entry_mode));
  KB_TRY(KB_BIND(library, functions.entry_hardlink, archive_entry_hardlink));
  KB_TRY(KB_BIND(library, functions.entry_symlink, archive_entry_symlink));
  KB_TRY(KB_BIND(library, functions.version_details, archive_version_details));
  return {};
}

}  // namespace

const Result<ArchiveApi>& archive_api() {
  return util::load_once<ArchiveApi>(
      util::k_libarchive_soname,
      "kbuild needs libarchive to unpack wheels and Debian packages (Debian: apt install libarchive13)", bind_archive);
}

std::string archive_error(archive* a) {
  const char* message = libarchive().error_string(a);
  return message ? message : "unknown libarchive error";
}

std::string entry_path(archive_entry* entry) {
  const char* name = libarchive().entry_pathname(entry);
  return name ? name : "";
}

std::string archive_library_version() {
  if (!archive_api()) return util::not_loaded(archive_api().error());
  std::string details = libarchive().version_details();  // "libarchive 3.6.2 zlib/1.2.13 ..."
  return details.starts_with("libarchive ") ? details.substr(11) : details;
}

}  // namespace kbuild::toolchain
