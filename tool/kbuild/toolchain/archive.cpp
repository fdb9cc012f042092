#include "kbuild/toolchain/archive.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "kbuild/util/fs.hpp"

namespace kbuild::toolchain {

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
  void operator()(zip_t* z) const { zip_discard(z); }
};
using ZipPtr = std::unique_ptr<zip_t, ZipCloser>;

Result<ZipPtr> open_zip(const std::filesystem::path& archive) {
  int error = 0;
  zip_t* z = zip_open(archive.c_str(), ZIP_RDONLY, &error);
  if (!z) {
    zip_error_t ze;
    zip_error_init_with_code(&ze, error);
    std::string message = zip_error_strerror(&ze);
    zip_error_fini(&ze);
    return fail("cannot open " + archive.string() + " as a zip archive: " + message);
  }
  return ZipPtr(z);
}
}  // namespace

Result<std::vector<std::string>> list_zip(const std::filesystem::path& archive) {
  KB_TRY_ASSIGN(ZipPtr z, open_zip(archive));
  std::vector<std::string> names;
  zip_int64_t count = zip_get_num_entries(z.get(), 0);
  for (zip_int64_t i = 0; i < count; ++i) names.emplace_back(zip_get_name(z.get(), static_cast<zip_uint64_t>(i), 0));
  return names;
}

Result<ExtractStats> extract_zip(const std::filesystem::path& archive, const std::filesystem::path& target,
                                 const EntrySelector& select) {
  KB_TRY_ASSIGN(ZipPtr z, open_zip(archive));
  zip_int64_t count = zip_get_num_entries(z.get(), 0);
  struct Planned {
    zip_uint64_t index;
    std::string destination;
    bool executable;
  };
  std::vector<Planned> planned;
  for (zip_int64_t i = 0; i < count; ++i) {
    const char* raw = zip_get_name(z.get(), static_cast<zip_uint64_t>(i), 0);
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
    zip_file_get_external_attributes(z.get(), static_cast<zip_uint64_t>(i), 0, &opsys, &attributes);
    mode_t mode = opsys == ZIP_OPSYS_UNIX ? static_cast<mode_t>(attributes >> 16) : 0;
    if (opsys == ZIP_OPSYS_UNIX && S_ISLNK(mode))
      return fail("refusing " + archive.filename().string() + ": entry \"" + name + "\" is a symbolic link");
    planned.push_back({static_cast<zip_uint64_t>(i), *destination, (mode & 0111) != 0});
  }
  ExtractStats stats;
  std::vector<char> buffer(1 << 20);
  for (const auto& entry : planned) {
    std::filesystem::path path = target / entry.destination;
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) return fail("cannot create " + path.parent_path().string() + ": " + ec.message());
    zip_file_t* file = zip_fopen_index(z.get(), entry.index, 0);
    if (!file) return fail("cannot read " + entry.destination + " from " + archive.string());
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, entry.executable ? 0755 : 0644);
    if (fd < 0) {
      zip_fclose(file);
      return fail("cannot write " + path.string() + ": " + std::strerror(errno));
    }
    zip_int64_t n;
    bool ok = true;
    while ((n = zip_fread(file, buffer.data(), buffer.size())) > 0) {
      if (::write(fd, buffer.data(), static_cast<size_t>(n)) != n) {
        ok = false;
        break;
      }
      stats.bytes += static_cast<std::uint64_t>(n);
    }
    if (n < 0) ok = false;
    zip_fclose(file);
    if (::close(fd) != 0) ok = false;
    if (!ok) return fail("error while extracting " + entry.destination + " from " + archive.string());
    ++stats.files;
  }
  return stats;
}

}  // namespace kbuild::toolchain
