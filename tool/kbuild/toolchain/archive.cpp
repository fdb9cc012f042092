#include "kbuild/toolchain/archive.hpp"

#include <sys/stat.h>

#include <algorithm>

#include "kbuild/toolchain/libarchive_api.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/interrupt.hpp"

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

constexpr size_t k_block = 1 << 16;

// A reader of the zip at `archive` (its central directory: the seekable reader, so the entries are
// what an installer such as pip sees).
Result<ArchivePtr> open_zip(const std::filesystem::path& archive) {
  if (!archive_api()) return fail(archive_api().error());
  ArchivePtr reader(libarchive().read_new());
  libarchive().read_support_format_zip_seekable(reader.get());
  if (libarchive().read_open_filename(reader.get(), archive.c_str(), k_block) != ARCHIVE_OK)
    return fail("cannot open " + archive.string() + " as a zip archive: " + archive_error(reader.get()));
  return reader;
}

// Calls `visit(entry)` for each entry in order until it returns false or fails.
template <class Visit>
Result<void> each_entry(const std::filesystem::path& file, struct archive* reader, Visit&& visit) {
  for (;;) {
    archive_entry* entry = nullptr;
    int status = libarchive().read_next_header(reader, &entry);
    if (status == ARCHIVE_EOF) return {};
    if (status < ARCHIVE_WARN)
      return fail("cannot read " + file.string() + " as a zip archive: " + archive_error(reader),
                  "the file is damaged; delete it and download it again");
    KB_TRY_ASSIGN(bool more, visit(entry));
    if (!more) return {};
  }
}

struct Planned {
  std::string destination;
  bool executable = false;
};

// The entries to extract, by their index in the archive; fails on the first unsafe one.
Result<std::vector<std::optional<Planned>>> plan_zip(const std::filesystem::path& archive,
                                                     const EntrySelector& select) {
  KB_TRY_ASSIGN(ArchivePtr reader, open_zip(archive));
  std::vector<std::optional<Planned>> planned;
  KB_TRY(each_entry(archive, reader.get(), [&](archive_entry* entry) -> Result<bool> {
    const std::string name = entry_path(entry);
    planned.emplace_back();
    if (!is_safe_archive_path(name))
      return fail("refusing " + archive.filename().string() + ": entry \"" + name + "\" would be written outside " +
                      "the extraction directory",
                  "the archive is malformed or malicious; delete it and download it again");
    const mode_t mode = libarchive().entry_mode(entry);
    if (name.ends_with("/") || S_ISDIR(mode)) return true;
    auto destination = select(name);
    if (!destination) return true;
    if (!is_safe_archive_path(*destination)) return fail("internal error: unsafe destination " + *destination);
    if (S_ISLNK(mode))
      return fail("refusing " + archive.filename().string() + ": entry \"" + name + "\" is a symbolic link");
    planned.back() = Planned{*destination, (mode & 0111) != 0};
    return true;
  }));
  return planned;
}

}  // namespace

Result<std::vector<std::string>> list_zip(const std::filesystem::path& archive) {
  KB_TRY_ASSIGN(ArchivePtr reader, open_zip(archive));
  std::vector<std::string> names;
  KB_TRY(each_entry(archive, reader.get(), [&](archive_entry* entry) -> Result<bool> {
    names.push_back(entry_path(entry));
    return true;
  }));
  return names;
}

Result<ExtractStats> extract_zip(util::FileSystem& fs, const std::filesystem::path& archive,
                                 const std::filesystem::path& target, const EntrySelector& select) {
  KB_TRY_ASSIGN(auto planned, plan_zip(archive, select));  // every name checked before anything is written
  KB_TRY_ASSIGN(ArchivePtr reader, open_zip(archive));
  ExtractStats stats;
  size_t index = 0;
  KB_TRY(each_entry(archive, reader.get(), [&](archive_entry*) -> Result<bool> {
    if (index >= planned.size()) return fail("the entries of " + archive.string() + " changed while it was read");
    const auto& entry = planned[index++];
    if (!entry) return true;
    const std::filesystem::path path = target / entry->destination;
    KB_TRY(fs.make_dirs(path.parent_path()));
    auto read_piece = [&](std::string& chunk) -> Result<bool> {
      if (util::interrupted()) return util::interrupted_failure("while unpacking " + archive.filename().string());
      const size_t had = chunk.size();
      chunk.resize(had + k_block);
      la_ssize_t n = libarchive().read_data(reader.get(), chunk.data() + had, k_block);
      chunk.resize(had + static_cast<size_t>(std::max<la_ssize_t>(n, 0)));
      if (n < 0)
        return fail("cannot extract " + entry->destination + " from " + archive.string() + ": " +
                    archive_error(reader.get()));
      stats.bytes += static_cast<std::uint64_t>(n);
      return n > 0;
    };
    KB_TRY(fs.write_chunks(path, read_piece, entry->executable));
    ++stats.files;
    return index < planned.size();
  }));
  return stats;
}

}  // namespace kbuild::toolchain
