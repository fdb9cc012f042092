#include "kbuild/server/blob_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>

#include "kbuild/server/object_ids.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/hash.hpp"

namespace kbuild::server {

namespace fs = std::filesystem;

namespace {

// Writes `content` to a new file and flushes it to disk.
Result<void> write_durably(const fs::path& path, std::string_view content) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return fail("cannot create " + path.string());
  const char* data = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t written = ::write(fd, data, left);
    if (written < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return fail("cannot write " + path.string());
    }
    data += written;
    left -= static_cast<size_t>(written);
  }
  bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced) return fail("cannot flush " + path.string());
  return {};
}

Result<void> sync_file(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail("cannot open " + path.string());
  bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced) return fail("cannot flush " + path.string());
  return {};
}

// Renames a finished temp file onto its blob path (replacing an identical blob) and syncs the directory.
Result<void> install_blob(const fs::path& temp, const fs::path& destination) {
  std::error_code ec;
  fs::create_directories(destination.parent_path(), ec);
  fs::rename(temp, destination, ec);
  if (ec) {
    fs::remove(temp, ec);
    return fail("cannot store blob " + destination.string() + ": " + ec.message());
  }
  (void)sync_file(destination.parent_path());
  return {};
}

}  // namespace

BlobStore::BlobStore(fs::path root) : m_root(std::move(root)) {}

fs::path BlobStore::temp_path() const { return util::temp_sibling(m_root / "tmp" / "t"); }

fs::path BlobStore::path(std::string_view sha256) const {
  std::string name(sha256);
  return m_root / "blobs" / name.substr(0, 2) / name;
}

std::optional<std::uint64_t> BlobStore::size(std::string_view sha256) const {
  if (!is_sha256_hex(sha256)) return std::nullopt;
  std::error_code ec;
  auto size = fs::file_size(path(sha256), ec);
  if (ec) return std::nullopt;
  return size;
}

Result<std::string> BlobStore::put(std::string_view content) const {
  std::string sha = util::sha256_hex(content);
  if (size(sha) == content.size()) return sha;
  fs::path temp = temp_path();
  auto written = write_durably(temp, content);
  if (!written) {
    std::error_code ec;
    fs::remove(temp, ec);
    return std::unexpected(written.error());
  }
  KB_TRY(install_blob(temp, path(sha)));
  return sha;
}

Result<BlobCheck> BlobStore::adopt(const fs::path& file, std::string_view sha256, std::uint64_t size) const {
  std::error_code ec;
  auto actual_size = fs::file_size(file, ec);
  if (ec || actual_size != size) {
    fs::remove(file, ec);
    return BlobCheck::wrong_size;
  }
  auto hashed = util::sha256_file_hex(util::RealFileSystem(), file);
  if (!hashed || *hashed != sha256) {
    fs::remove(file, ec);
    return BlobCheck::wrong_hash;
  }
  if (this->size(sha256) == size) {
    fs::remove(file, ec);
    return BlobCheck::ok;
  }
  KB_TRY(sync_file(file));
  KB_TRY(install_blob(file, path(sha256)));
  return BlobCheck::ok;
}

Result<std::string> BlobStore::read(std::string_view sha256) const {
  fs::path file_path = path(sha256);
  std::FILE* file = std::fopen(file_path.c_str(), "rb");
  if (!file) return fail("missing blob " + std::string(sha256) + " in " + m_root.string());
  std::string content;
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0) content.append(buffer, n);
  bool failed = std::ferror(file) != 0;
  std::fclose(file);
  if (failed) return fail("cannot read blob " + file_path.string());
  return content;
}

}  // namespace kbuild::server
