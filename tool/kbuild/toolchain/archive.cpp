#include "kbuild/toolchain/archive.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "kbuild/util/fs.hpp"
#include "kbuild/util/interrupt.hpp"
#include "kbuild/util/lazy_libraries.hpp"
#include "kbuild/util/shared_library.hpp"

namespace kbuild::toolchain {

namespace {

// libzip's functions, from the library loaded on first use (util/shared_library.hpp).
struct ZipApi {
  decltype(&::zip_open) open;
  decltype(&::zip_discard) discard;
  decltype(&::zip_error_init_with_code) error_init_with_code;
  decltype(&::zip_error_strerror) error_strerror;
  decltype(&::zip_error_fini) error_fini;
  decltype(&::zip_get_num_entries) get_num_entries;
  decltype(&::zip_get_name) get_name;
  decltype(&::zip_file_get_external_attributes) file_get_external_attributes;
  decltype(&::zip_fopen_index) fopen_index;
  decltype(&::zip_fread) fread;
  decltype(&::zip_fclose) fclose;
  decltype(&::zip_libzip_version) libzip_version;
};

Result<void> bind_zip(const util::SharedLibrary& library, ZipApi& functions) {
  KB_TRY(library.bind(functions.open, "zip_open"));
  KB_TRY(library.bind(functions.discard, "zip_discard"));
  KB_TRY(library.bind(functions.error_init_with_code, "zip_error_init_with_code"));
  KB_TRY(library.bind(functions.error_strerror, "zip_error_strerror"));
  KB_TRY(library.bind(functions.error_fini, "zip_error_fini"));
  KB_TRY(library.bind(functions.get_num_entries, "zip_get_num_entries"));
  KB_TRY(library.bind(functions.get_name, "zip_get_name"));
  KB_TRY(library.bind(functions.file_get_external_attributes, "zip_file_get_external_attributes"));
  KB_TRY(library.bind(functions.fopen_index, "zip_fopen_index"));
  KB_TRY(library.bind(functions.fread, "zip_fread"));
  KB_TRY(library.bind(functions.fclose, "zip_fclose"));
  KB_TRY(library.bind(functions.libzip_version, "zip_libzip_version"));
  return {};
}

// Loaded once per process, on first use.
const Result<ZipApi>& zip_api() {
  return util::load_once<ZipApi>(util::k_libzip_soname,
                                 "kbuild needs libzip to unpack wheels (Debian: apt install libzip4)", bind_zip);
}

// Only called where zip_api() succeeded (open_zip checks).
const ZipApi& libzip() { return *zip_api(); }

}  // namespace

std::string zip_library_version() {
  if (!zip_api()) return util::not_loaded(zip_api().error());
  return libzip().libzip_version();
}

bool is_safe_archive_path(std::string_view name) {
  if (name.empty() || name.front() == '/' || name.find('\\') != std::string_view::npos ||
      name.find('\0') != std::string_view::npos)
    return false;
  size_t start = 0;
  while (start <= name.size()) {
    size_t slash = name.find('/', start);
    std::string_view part = name.substr(start, slash == std::string_view::npos ? slash : slash - start);
    bool last = slash == std::string_view::npos;
    if (part == "..") return false;
    if (part.empty() && !last) return false;  // "a//b"
    if (part == ".") return false;
    if (last) break;
    start = slash + 1;
  }
  return true;
}

namespace {
struct ZipCloser {
  void operator()(zip_t* z) const { libzip().discard(z); }
};
using ZipPtr = std::unique_ptr<zip_t, ZipCloser>;

Result<ZipPtr> open_zip(const std::filesystem::path& archive) {
  if (!zip_api()) return fail(zip_api().error());
  int error = 0;
  zip_t* z = libzip().open(archive.c_str(), ZIP_RDONLY, &error);
  if (!z) {
    zip_error_t ze;
    libzip().error_init_with_code(&ze, error);
    std::string message = libzip().error_strerror(&ze);
    libzip().error_fini(&ze);
    return fail("cannot open " + archive.string() + " as a zip archive: " + message);
  }
  return ZipPtr(z);
}
}  // namespace

Result<std::vector<std::string>> list_zip(const std::filesystem::path& archive) {
  KB_TRY_ASSIGN(ZipPtr z, open_zip(archive));
  std::vector<std::string> names;
  zip_int64_t count = libzip().get_num_entries(z.get(), 0);
  for (zip_int64_t i = 0; i < count; ++i)
    names.emplace_back(libzip().get_name(z.get(), static_cast<zip_uint64_t>(i), 0));
  return names;
}

Result<ExtractStats> extract_zip(util::FileSystem& fs, const std::filesystem::path& archive,
                                 const std::filesystem::path& target, const EntrySelector& select) {
  KB_TRY_ASSIGN(ZipPtr z, open_zip(archive));
  zip_int64_t count = libzip().get_num_entries(z.get(), 0);
  struct Planned {
    zip_uint64_t index;
    std::string destination;
    bool executable;
  };
  std::vector<Planned> planned;
  for (zip_int64_t i = 0; i < count; ++i) {
    const char* raw = libzip().get_name(z.get(), static_cast<zip_uint64_t>(i), 0);
    std::string name = raw ? raw : "";
    if (!is_safe_archive_path(name))
      return fail("refusing " + archive.filename().string() + ": entry \"" + name + "\" would be written outside " +
                      "the extraction directory",
                  "the archive is malformed or malicious; delete it and download it again");
    if (name.ends_with("/")) continue;
    auto destination = select(name);
    if (!destination) continue;
    if (!is_safe_archive_path(*destination)) return fail("internal error: unsafe destination " + *destination);
    zip_uint8_t opsys = 0;
    zip_uint32_t attributes = 0;
    libzip().file_get_external_attributes(z.get(), static_cast<zip_uint64_t>(i), 0, &opsys, &attributes);
    mode_t mode = opsys == ZIP_OPSYS_UNIX ? static_cast<mode_t>(attributes >> 16) : 0;
    if (opsys == ZIP_OPSYS_UNIX && S_ISLNK(mode))
      return fail("refusing " + archive.filename().string() + ": entry \"" + name + "\" is a symbolic link");
    planned.push_back({static_cast<zip_uint64_t>(i), *destination, (mode & 0111) != 0});
  }
  ExtractStats stats;
  constexpr size_t k_chunk = 1 << 20;
  for (const auto& entry : planned) {
    std::filesystem::path path = target / entry.destination;
    KB_TRY(fs.make_dirs(path.parent_path()));
    std::unique_ptr<zip_file_t, decltype(ZipApi::fclose)> file(libzip().fopen_index(z.get(), entry.index, 0),
                                                               libzip().fclose);
    if (!file) return fail("cannot read " + entry.destination + " from " + archive.string());
    auto read_piece = [&](std::string& chunk) -> Result<bool> {
      if (util::interrupted()) return util::interrupted_failure("while unpacking " + archive.filename().string());
      size_t had = chunk.size();
      chunk.resize(had + k_chunk);
      zip_int64_t n = libzip().fread(file.get(), chunk.data() + had, k_chunk);
      chunk.resize(had + static_cast<size_t>(std::max<zip_int64_t>(n, 0)));
      if (n < 0) return fail("error while extracting " + entry.destination + " from " + archive.string());
      stats.bytes += static_cast<std::uint64_t>(n);
      return n > 0;
    };
    KB_TRY(fs.write_chunks(path, read_piece, entry.executable));
    ++stats.files;
  }
  return stats;
}

}  // namespace kbuild::toolchain
