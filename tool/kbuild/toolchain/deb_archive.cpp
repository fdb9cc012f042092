#include "kbuild/toolchain/deb_archive.hpp"

#include <sys/stat.h>

#include <memory>

#include "kbuild/toolchain/libarchive_api.hpp"
#include "kbuild/util/confined_dir.hpp"
#include "kbuild/util/interrupt.hpp"

namespace kbuild::toolchain {

namespace fs = std::filesystem;

namespace {

constexpr size_t k_block = 1 << 16;

// Feeds one member of an outer archive to an inner reader (data.tar.xz inside the .deb's ar).
struct MemberStream {
  archive* outer;
  std::string buffer = std::string(k_block, '\0');
};

la_ssize_t read_member(archive*, void* context, const void** block) {
  auto* stream = static_cast<MemberStream*>(context);
  *block = stream->buffer.data();
  return libarchive().read_data(stream->outer, stream->buffer.data(), stream->buffer.size());
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
  util::ConfinedDir& root;
  const fs::path& deb;
  const EntrySelector& select;
  UnpackedDeb result;

  Result<void> refuse(const std::string& name, const std::string& why) const {
    return fail("refusing " + deb.filename().string() + ": entry \"" + name + "\" " + why,
                "the package is malformed or malicious; delete it from the download cache and fetch it again");
  }

  Result<void> make_parent(const std::string& destination) {
    const std::string parent = fs::path(destination).parent_path().string();
    return parent.empty() ? Result<void>() : root.make_dirs(parent);
  }

  Result<void> write_file(archive* data, const std::string& destination, bool executable) {
    KB_TRY(make_parent(destination));
    auto next = [&](std::string& chunk) -> Result<bool> {
      if (util::interrupted()) return util::interrupted_failure("while unpacking " + deb.filename().string());
      size_t had = chunk.size();
      chunk.resize(had + k_block);
      la_ssize_t n = libarchive().read_data(data, chunk.data() + had, k_block);
      chunk.resize(had + static_cast<size_t>(std::max<la_ssize_t>(n, 0)));
      if (n < 0) return fail("cannot unpack " + destination + " from " + deb.string() + ": " + archive_error(data));
      result.bytes += static_cast<std::uint64_t>(n);
      return n > 0;
    };
    KB_TRY(root.write_file(destination, next, executable));
    result.files.push_back(destination);
    return {};
  }

  Result<void> entry(archive* data, archive_entry* header) {
    std::string name = entry_path(header);
    if (name.starts_with("./")) name.erase(0, 2);
    while (name.ends_with("/")) name.pop_back();
    if (name.empty() || name == ".") return {};
    if (!is_safe_archive_path(name)) return refuse(name, "would be written outside the root");
    auto destination = select(name);
    if (!destination) return {};
    const mode_t mode = libarchive().entry_mode(header);
    if (const char* hardlink = libarchive().entry_hardlink(header)) {
      std::string source = hardlink;
      if (source.starts_with("./")) source.erase(0, 2);
      if (!is_safe_archive_path(source)) return refuse(name, "is a hard link to a path outside the root");
      // Read without following a link: a hard link names a file the package wrote, not a link to one.
      auto content = root.read_file(source);
      if (!content) return refuse(name, "is a hard link to something that is no regular file of the package");
      KB_TRY(make_parent(*destination));
      KB_TRY(root.write_file(
          *destination,
          [&, done = false](std::string& chunk) mutable -> Result<bool> {
            if (done) return false;
            chunk += *content;
            done = true;
            return true;
          },
          (mode & 0111) != 0));
      result.files.push_back(*destination);
      return {};
    }
    if (S_ISDIR(mode)) return root.make_dirs(*destination);
    if (S_ISLNK(mode)) {
      const char* raw_target = libarchive().entry_symlink(header);
      auto target = contained_link_target(*destination, raw_target ? raw_target : "");
      if (!target) return refuse(name, "is a symbolic link that leaves the root");
      KB_TRY(make_parent(*destination));
      // Judged as the kernel resolves it through the links already there, not only by its spelling.
      if (!root.resolve(fs::path(*destination).parent_path().string(), *target))
        return refuse(name, "is a symbolic link that leaves the root through the links before it");
      KB_TRY(root.create_symlink(*destination, *target));
      result.symlinks.push_back(*destination);
      return {};
    }
    if (!S_ISREG(mode)) return refuse(name, "is neither a file, a directory nor a link");
    return write_file(data, *destination, (mode & 0111) != 0);
  }

  Result<void> data_member(archive* outer) {
    MemberStream stream{outer};
    ArchivePtr data(libarchive().read_new());
    libarchive().read_support_filter_all(data.get());
    libarchive().read_support_format_tar(data.get());
    if (libarchive().read_open(data.get(), &stream, nullptr, read_member, nullptr) != ARCHIVE_OK)
      return fail("cannot read the data of " + deb.string() + ": " + archive_error(data.get()));
    for (;;) {
      archive_entry* header = nullptr;
      int rc = libarchive().read_next_header(data.get(), &header);
      if (rc == ARCHIVE_EOF) return {};
      if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN)
        return fail("cannot read the data of " + deb.string() + ": " + archive_error(data.get()));
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

Result<void> verify_contained(const fs::path& root) {
  KB_TRY_ASSIGN(util::ConfinedDir dir, util::ConfinedDir::open(root));
  KB_TRY_ASSIGN(auto escaping, dir.escaping_links());
  if (escaping.empty()) return {};
  return fail("refusing the unpacked packages in " + root.string() + ": " + std::to_string(escaping.size()) +
                  " symbolic link(s) lead outside it through other links: " + escaping.front() +
                  (escaping.size() > 1 ? " and more" : ""),
              "a pinned package is malformed or malicious; delete the toolchain's downloads and check kbuild.lock");
}

Result<UnpackedDeb> extract_deb(const fs::path& deb, const fs::path& root, const EntrySelector& select) {
  if (!archive_api()) return fail(archive_api().error());
  KB_TRY_ASSIGN(util::ConfinedDir tree, util::ConfinedDir::open(root));
  ArchivePtr outer(libarchive().read_new());
  libarchive().read_support_format_ar(outer.get());
  if (libarchive().read_open_filename(outer.get(), deb.c_str(), k_block) != ARCHIVE_OK)
    return fail("cannot open " + deb.string() + " as a Debian package: " + archive_error(outer.get()));
  Unpacker unpacker{tree, deb, select, {}};
  for (;;) {
    archive_entry* header = nullptr;
    int rc = libarchive().read_next_header(outer.get(), &header);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK) return fail("cannot read " + deb.string() + ": " + archive_error(outer.get()));
    std::string member = entry_path(header);
    if (!member.starts_with("data.tar")) continue;
    KB_TRY(unpacker.data_member(outer.get()));
    return std::move(unpacker.result);
  }
  return fail(deb.string() + " has no data.tar member", "is it a Debian package?");
}

Result<std::string> decompress_file(const fs::path& file, std::uint64_t limit) {
  if (!archive_api()) return fail(archive_api().error());
  ArchivePtr reader(libarchive().read_new());
  libarchive().read_support_filter_all(reader.get());
  libarchive().read_support_format_raw(reader.get());
  if (libarchive().read_open_filename(reader.get(), file.c_str(), k_block) != ARCHIVE_OK)
    return fail("cannot open " + file.string() + ": " + archive_error(reader.get()));
  archive_entry* header = nullptr;
  if (libarchive().read_next_header(reader.get(), &header) != ARCHIVE_OK)
    return fail("cannot read " + file.string() + ": " + archive_error(reader.get()));
  std::string content;
  for (;;) {
    size_t had = content.size();
    content.resize(had + k_block);
    la_ssize_t n = libarchive().read_data(reader.get(), content.data() + had, k_block);
    if (n < 0) return fail("cannot decompress " + file.string() + ": " + archive_error(reader.get()));
    content.resize(had + static_cast<size_t>(n));
    if (n == 0) return content;
    if (content.size() > limit)
      return fail(file.string() + " decompresses to more than " + std::to_string(limit >> 20) + " MiB");
  }
}

}  // namespace kbuild::toolchain
