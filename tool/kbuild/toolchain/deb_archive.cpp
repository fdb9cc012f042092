#include "kbuild/toolchain/deb_archive.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>

#include <memory>

#include "kbuild/util/interrupt.hpp"

namespace kbuild::toolchain {

namespace fs = std::filesystem;

std::string archive_library_version() { return archive_version_details(); }

namespace {

struct ArchiveCloser {
  void operator()(archive* a) const { archive_read_free(a); }
};
using ArchivePtr = std::unique_ptr<archive, ArchiveCloser>;

constexpr size_t k_block = 1 << 16;

// Feeds one member of an outer archive to an inner reader (data.tar.xz inside the .deb's ar).
struct MemberStream {
  archive* outer;
  std::string buffer = std::string(k_block, '\0');
};

la_ssize_t read_member(archive*, void* context, const void** block) {
  auto* stream = static_cast<MemberStream*>(context);
  *block = stream->buffer.data();
  return archive_read_data(stream->outer, stream->buffer.data(), stream->buffer.size());
}

std::string error_of(archive* a) {
  const char* message = archive_error_string(a);
  return message ? message : "unknown libarchive error";
}

// Lexically normalised `path` (no "." or ".."); nullopt when ".." climbs above its start.
std::optional<std::string> normalized_inside(const fs::path& path) {
  std::vector<std::string> parts;
  for (const auto& part : path) {
    std::string text = part.string();
    if (text.empty() || text == ".") continue;
    if (text == "..") {
      if (parts.empty()) return std::nullopt;
      parts.pop_back();
    } else {
      parts.push_back(text);
    }
  }
  std::string joined;
  for (const auto& part : parts) joined += (joined.empty() ? "" : "/") + part;
  return joined;
}

struct Unpacker {
  util::FileSystem& fs;
  const fs::path& deb;
  const fs::path& root;
  const EntrySelector& select;
  UnpackedDeb result;

  Result<void> refuse(const std::string& name, const std::string& why) const {
    return fail("refusing " + deb.filename().string() + ": entry \"" + name + "\" " + why,
                "the package is malformed or malicious; delete it from the download cache and fetch it again");
  }

  Result<void> write_file(archive* data, const std::string& destination, bool executable) {
    const fs::path path = root / destination;
    KB_TRY(fs.make_dirs(path.parent_path()));
    auto next = [&](std::string& chunk) -> Result<bool> {
      if (util::interrupted()) return util::interrupted_failure("while unpacking " + deb.filename().string());
      size_t had = chunk.size();
      chunk.resize(had + k_block);
      la_ssize_t n = archive_read_data(data, chunk.data() + had, k_block);
      chunk.resize(had + static_cast<size_t>(std::max<la_ssize_t>(n, 0)));
      if (n < 0) return fail("cannot unpack " + destination + " from " + deb.string() + ": " + error_of(data));
      result.bytes += static_cast<std::uint64_t>(n);
      return n > 0;
    };
    KB_TRY(fs.write_chunks(path, next, executable));
    result.files.push_back(destination);
    return {};
  }

  Result<void> entry(archive* data, archive_entry* header) {
    std::string name = archive_entry_pathname(header) ? archive_entry_pathname(header) : "";
    if (name.starts_with("./")) name.erase(0, 2);
    while (name.ends_with("/")) name.pop_back();
    if (name.empty() || name == ".") return {};
    if (!is_safe_archive_path(name)) return refuse(name, "would be written outside the root");
    auto destination = select(name);
    if (!destination) return {};
    const mode_t mode = archive_entry_mode(header);
    if (const char* hardlink = archive_entry_hardlink(header)) {
      std::string source = hardlink;
      if (source.starts_with("./")) source.erase(0, 2);
      if (!is_safe_archive_path(source)) return refuse(name, "is a hard link to a path outside the root");
      KB_TRY_ASSIGN(std::string content, fs.read_file(root / source));
      KB_TRY(fs.write_chunks(
          root / *destination,
          [&, done = false](std::string& chunk) mutable -> Result<bool> {
            if (done) return false;
            chunk += content;
            done = true;
            return true;
          },
          (mode & 0111) != 0));
      result.files.push_back(*destination);
      return {};
    }
    if (S_ISDIR(mode)) return fs.make_dirs(root / *destination);
    if (S_ISLNK(mode)) {
      const char* raw_target = archive_entry_symlink(header);
      auto target = contained_link_target(*destination, raw_target ? raw_target : "");
      if (!target) return refuse(name, "is a symbolic link that leaves the root");
      KB_TRY(fs.make_dirs((root / *destination).parent_path()));
      (void)fs.remove_all(root / *destination);
      KB_TRY(fs.create_symlink(*target, root / *destination));
      result.symlinks.push_back(*destination);
      return {};
    }
    if (!S_ISREG(mode)) return refuse(name, "is neither a file, a directory nor a link");
    return write_file(data, *destination, (mode & 0111) != 0);
  }

  Result<void> data_member(archive* outer) {
    MemberStream stream{outer};
    ArchivePtr data(archive_read_new());
    archive_read_support_filter_all(data.get());
    archive_read_support_format_tar(data.get());
    if (archive_read_open(data.get(), &stream, nullptr, read_member, nullptr) != ARCHIVE_OK)
      return fail("cannot read the data of " + deb.string() + ": " + error_of(data.get()));
    for (;;) {
      archive_entry* header = nullptr;
      int rc = archive_read_next_header(data.get(), &header);
      if (rc == ARCHIVE_EOF) return {};
      if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN)
        return fail("cannot read the data of " + deb.string() + ": " + error_of(data.get()));
      KB_TRY(entry(data.get(), header));
    }
  }
};

}  // namespace

std::optional<std::string> contained_link_target(std::string_view link, std::string_view target) {
  if (target.empty()) return std::nullopt;
  const fs::path link_dir = fs::path(link).parent_path();
  if (target.front() == '/') {
    auto inside = normalized_inside(fs::path(target).relative_path());
    if (!inside || inside->empty()) return std::nullopt;
    return fs::path(*inside).lexically_relative(link_dir).string();
  }
  if (!normalized_inside(link_dir / target)) return std::nullopt;
  return std::string(target);
}

Result<UnpackedDeb> extract_deb(util::FileSystem& fs, const fs::path& deb, const fs::path& root,
                                const EntrySelector& select) {
  ArchivePtr outer(archive_read_new());
  archive_read_support_format_ar(outer.get());
  if (archive_read_open_filename(outer.get(), deb.c_str(), k_block) != ARCHIVE_OK)
    return fail("cannot open " + deb.string() + " as a Debian package: " + error_of(outer.get()));
  Unpacker unpacker{fs, deb, root, select, {}};
  for (;;) {
    archive_entry* header = nullptr;
    int rc = archive_read_next_header(outer.get(), &header);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK) return fail("cannot read " + deb.string() + ": " + error_of(outer.get()));
    std::string member = archive_entry_pathname(header) ? archive_entry_pathname(header) : "";
    if (!member.starts_with("data.tar")) continue;
    KB_TRY(unpacker.data_member(outer.get()));
    return std::move(unpacker.result);
  }
  return fail(deb.string() + " has no data.tar member", "is it a Debian package?");
}

Result<std::string> decompress_file(const fs::path& file, std::uint64_t limit) {
  ArchivePtr reader(archive_read_new());
  archive_read_support_filter_all(reader.get());
  archive_read_support_format_raw(reader.get());
  if (archive_read_open_filename(reader.get(), file.c_str(), k_block) != ARCHIVE_OK)
    return fail("cannot open " + file.string() + ": " + error_of(reader.get()));
  archive_entry* header = nullptr;
  if (archive_read_next_header(reader.get(), &header) != ARCHIVE_OK)
    return fail("cannot read " + file.string() + ": " + error_of(reader.get()));
  std::string content;
  for (;;) {
    size_t had = content.size();
    content.resize(had + k_block);
    la_ssize_t n = archive_read_data(reader.get(), content.data() + had, k_block);
    if (n < 0) return fail("cannot decompress " + file.string() + ": " + error_of(reader.get()));
    content.resize(had + static_cast<size_t>(n));
    if (n == 0) return content;
    if (content.size() > limit)
      return fail(file.string() + " decompresses to more than " + std::to_string(limit >> 20) + " MiB");
  }
}

}  // namespace kbuild::toolchain
