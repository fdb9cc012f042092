#include "kbuild/util/fs.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>

#include "kbuild/util/interrupt.hpp"
#include "kbuild/util/system.hpp"

namespace kbuild::util {

namespace {
std::unexpected<Error> io_fail(std::string message, int os_errno) {
  Error error{ExitCode::failure, std::move(message), ""};
  error.kind = ErrorKind::io;
  error.os_errno = os_errno;
  return std::unexpected(std::move(error));
}
}  // namespace

FileStat RealFileSystem::stat(const fs::path& path) const {
  struct ::stat st;
  FileStat result;
  if (::stat(path.c_str(), &st) != 0) return result;
  result.exists = true;
  result.is_dir = S_ISDIR(st.st_mode);
  result.is_file = S_ISREG(st.st_mode);
  result.executable = (st.st_mode & S_IXUSR) != 0;
  result.size = static_cast<std::uint64_t>(st.st_size);
  result.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  return result;
}

FileStat RealFileSystem::lstat(const fs::path& path) const {
  struct ::stat st;
  FileStat result;
  if (::lstat(path.c_str(), &st) != 0) return result;
  result.exists = true;
  result.is_dir = S_ISDIR(st.st_mode);
  result.is_file = S_ISREG(st.st_mode);
  result.is_symlink = S_ISLNK(st.st_mode);
  result.executable = (st.st_mode & S_IXUSR) != 0;
  result.size = static_cast<std::uint64_t>(st.st_size);
  result.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  return result;
}

Result<void> RealFileSystem::set_mode(const fs::path& path, unsigned mode) {
  if (::chmod(path.c_str(), static_cast<mode_t>(mode)) != 0) {
    int saved = errno;
    return io_fail("cannot change the mode of " + path.string() + ": " + std::strerror(saved), saved);
  }
  return {};
}

Result<std::string> RealFileSystem::read_file(const fs::path& path) const {
  std::string content;
  KB_TRY(read_chunks(path, [&](std::string_view chunk) { content.append(chunk); }));
  return content;
}

fs::path temp_sibling(const fs::path& path) {
  static std::atomic<unsigned> counter{0};
  static const std::string salt = [] {
    std::string raw = RealRandom().bytes(4);
    static const char* k_hex = "0123456789abcdef";
    std::string hex;
    for (unsigned char c : raw) hex += {k_hex[c >> 4], k_hex[c & 15]};
    return hex;
  }();
  return path.parent_path() / ("." + path.filename().string() + ".tmp" + std::to_string(::getpid()) + "-" + salt + "-" +
                               std::to_string(counter++));
}

std::optional<long> temp_sibling_pid(std::string_view name) {
  if (!name.starts_with('.')) return std::nullopt;
  size_t tmp = name.rfind(".tmp");
  if (tmp == std::string_view::npos || tmp == 0) return std::nullopt;
  std::string_view rest = name.substr(tmp + 4);  // <pid>-<8 hex>-<n>
  size_t dash = rest.find('-');
  size_t second = dash == std::string_view::npos ? dash : rest.find('-', dash + 1);
  if (dash == 0 || second != dash + 9 || second + 1 >= rest.size()) return std::nullopt;
  auto digits = [](std::string_view text) {
    return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  std::string_view salt = rest.substr(dash + 1, 8);
  if (!digits(rest.substr(0, dash)) || !digits(rest.substr(second + 1)) || dash > 9 ||
      !std::all_of(salt.begin(), salt.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }))
    return std::nullopt;
  return std::stol(std::string(rest.substr(0, dash)));
}

bool abandoned_temp(const FileSystem& fs, const fs::path& path) {
  auto pid = temp_sibling_pid(path.filename().string());
  if (!pid) return false;
  if (::kill(static_cast<pid_t>(*pid), 0) == 0 || errno != ESRCH) return false;  // alive (or not ours to see)
  util::FileStat st = fs.lstat(path);
  if (!st.exists) return false;
  // A directory's own time does not change while files deep inside it are written (an unpacking
  // toolchain, a download of another host sharing the cache): its newest entry counts.
  std::int64_t newest = st.mtime_ns;
  if (st.is_dir)
    if (auto entries = walk_tree(fs, path))
      for (const auto& entry : *entries) newest = std::max(newest, fs.lstat(path / entry.rel).mtime_ns);
  auto now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return now - newest > 60'000'000'000LL;
}

namespace {
class FdLock final : public FileLock {
 public:
  explicit FdLock(int fd) : m_fd(fd) {}
  ~FdLock() override { ::close(m_fd); }
  void set_owner(std::string_view text) override {
    // Written in place, then cut to length: truncating to 0 first would free and reallocate the
    // file's block on every build (on ext4 with discard, a synchronous trim).
    if (::pwrite(m_fd, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()))
      (void)!::ftruncate(m_fd, static_cast<off_t>(text.size()));
  }

 private:
  int m_fd;
};
}  // namespace

Result<fs::path> RealFileSystem::real_path(const fs::path& path) const {
  std::error_code ec;
  auto real = fs::canonical(path, ec);
  if (ec) return io_fail("cannot resolve " + path.string() + ": " + ec.message(), ec.value());
  return real;
}

// The lock file may be unlinked by its holder (kbuild clean removes .kbuild with it): a lock taken on an
// inode that is no longer the one at `path` protects nothing, so it is dropped and taken again.
Result<std::unique_ptr<FileLock>> RealFileSystem::lock_file(const fs::path& path, bool wait) {
  return flock_file(path, wait, LOCK_EX);
}

Result<std::unique_ptr<FileLock>> RealFileSystem::lock_file_shared(const fs::path& path, bool wait) {
  return flock_file(path, wait, LOCK_SH);
}

Result<std::unique_ptr<FileLock>> RealFileSystem::flock_file(const fs::path& path, bool wait, int operation) {
  for (int attempt = 0;; ++attempt) {
    if (path.has_parent_path()) KB_TRY(make_dirs(path.parent_path()));
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      int saved = errno;
      if (saved == ENOENT && attempt < 100) continue;  // the directory vanished between the two calls
      return io_fail("cannot open the lock " + path.string() + ": " + std::strerror(saved), saved);
    }
    // Waiting polls (LOCK_NB, then up to 100 ms on the interrupt pipe): a blocking flock would miss a
    // signal that arrives just before it starts, and the build would wait on, deaf to Ctrl-C.
    while (::flock(fd, operation | LOCK_NB) != 0) {
      int saved = errno;
      if (saved == EINTR) continue;
      if (saved == EWOULDBLOCK && wait && !interrupted()) {
        struct pollfd signal_pipe {
          interrupt_fd(), POLLIN, 0
        };
        (void)::poll(&signal_pipe, signal_pipe.fd >= 0 ? 1 : 0, 100);
        continue;
      }
      ::close(fd);
      if (saved == EWOULDBLOCK && wait) return interrupted_failure("while waiting for the lock " + path.string());
      if (saved == EWOULDBLOCK) return std::unique_ptr<FileLock>();
      return io_fail("cannot lock " + path.string() + ": " + std::strerror(saved), saved);
    }
    struct ::stat held, current;
    if (::fstat(fd, &held) == 0 && ::stat(path.c_str(), &current) == 0 && held.st_dev == current.st_dev &&
        held.st_ino == current.st_ino)
      return std::unique_ptr<FileLock>(std::make_unique<FdLock>(fd));
    ::close(fd);
    if (attempt >= 100) return io_fail("the lock " + path.string() + " keeps being replaced", EAGAIN);
  }
}

Result<void> RealFileSystem::write_file_atomic(const fs::path& path, std::string_view content, bool executable) {
  if (path.has_parent_path()) KB_TRY(make_dirs(path.parent_path()));
  fs::path temp = temp_sibling(path);
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, executable ? 0755 : 0644);
  if (fd < 0) {
    int saved = errno;
    return io_fail("cannot write " + temp.string() + ": " + std::strerror(saved), saved);
  }
  size_t written = 0;
  while (written < content.size()) {
    ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      int saved = errno;
      ::close(fd);
      ::unlink(temp.c_str());
      return io_fail("cannot write " + temp.string() + ": " + std::strerror(saved), saved);
    }
    written += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 || ::rename(temp.c_str(), path.c_str()) != 0) {
    int saved = errno;
    ::unlink(temp.c_str());
    return io_fail("cannot write " + path.string() + ": " + std::strerror(saved), saved);
  }
  return {};
}

Result<std::vector<DirEntry>> RealFileSystem::list_dir(const fs::path& path) const {
  std::error_code ec;
  fs::directory_iterator it(path, ec);
  if (ec) return io_fail("cannot list " + path.string() + ": " + ec.message(), ec.value());
  std::vector<DirEntry> entries;
  for (const auto& entry : it) {
    std::error_code ignored;
    entries.push_back({entry.path().filename().string(), entry.is_directory(ignored), entry.is_regular_file(ignored),
                       entry.is_symlink(ignored)});
  }
  std::sort(entries.begin(), entries.end(), [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  return entries;
}

Result<void> RealFileSystem::make_dirs(const fs::path& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) return io_fail("cannot create directory " + path.string() + ": " + ec.message(), ec.value());
  return {};
}

Result<void> RealFileSystem::remove_all(const fs::path& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) return io_fail("cannot remove " + path.string() + ": " + ec.message(), ec.value());
  return {};
}

Result<void> RealFileSystem::rename(const fs::path& from, const fs::path& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    int saved = errno;
    return io_fail("cannot rename " + from.string() + " to " + to.string() + ": " + std::strerror(saved), saved);
  }
  return {};
}

Result<void> RealFileSystem::touch(const fs::path& path) {
  if (::utimensat(AT_FDCWD, path.c_str(), nullptr, 0) != 0) {
    int saved = errno;
    return io_fail("cannot touch " + path.string() + ": " + std::strerror(saved), saved);
  }
  return {};
}

Result<void> RealFileSystem::create_symlink(const fs::path& target, const fs::path& link) {
  if (::symlink(target.c_str(), link.c_str()) != 0) {
    int saved = errno;
    return io_fail("cannot create the link " + link.string() + ": " + std::strerror(saved), saved);
  }
  return {};
}

Result<void> RealFileSystem::write_chunks(const fs::path& path, const ChunkSource& next, bool executable) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, executable ? 0755 : 0644);
  if (fd < 0) {
    int saved = errno;
    return io_fail("cannot write " + path.string() + ": " + std::strerror(saved), saved);
  }
  std::string chunk;
  for (;;) {
    chunk.clear();
    auto more = next(chunk);
    if (!more) {
      ::close(fd);
      return fail(more.error());
    }
    for (size_t written = 0; written < chunk.size();) {
      ssize_t n = ::write(fd, chunk.data() + written, chunk.size() - written);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        int saved = errno;
        ::close(fd);
        return io_fail("cannot write " + path.string() + ": " + std::strerror(saved), saved);
      }
      written += static_cast<size_t>(n);
    }
    if (!*more) break;
  }
  if (::close(fd) != 0) {
    int saved = errno;
    return io_fail("cannot write " + path.string() + ": " + std::strerror(saved), saved);
  }
  return {};
}

Result<void> RealFileSystem::read_chunks(const fs::path& path,
                                         const std::function<void(std::string_view)>& consume) const {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int saved = errno;
    return io_fail("cannot read " + path.string() + ": " + std::strerror(saved), saved);
  }
  struct ::stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return io_fail("cannot read " + path.string() + ": not a regular file", EINVAL);
  }
  (void)::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  // Sized to the file (one read and the one that sees its end), up to 1 MiB: a no-op build reads
  // hundreds of small files, and a zero-filled 1 MiB buffer each was a tenth of its time.
  const size_t size = std::clamp<size_t>(static_cast<size_t>(st.st_size) + 1, 4096, size_t{1} << 20);
  auto buffer = std::make_unique_for_overwrite<char[]>(size);
  for (;;) {
    ssize_t n = ::read(fd, buffer.get(), size);
    if (n < 0) {
      if (errno == EINTR) continue;
      int saved = errno;
      ::close(fd);
      return io_fail("cannot read " + path.string() + ": " + std::strerror(saved), saved);
    }
    if (n == 0) break;
    consume(std::string_view(buffer.get(), static_cast<size_t>(n)));
  }
  ::close(fd);
  return {};
}

Result<std::string> read_input_file(const FileSystem& fs, const fs::path& path, std::uint64_t max_bytes) {
  auto st = fs.stat(path);
  if (!st.exists) return fail("no " + path.string(), "", ExitCode::usage);
  if (!st.is_file)
    return fail(path.string() + " is not a regular file",
                "point kbuild at the file itself, not a device, FIFO or directory", ExitCode::usage);
  if (st.size > max_bytes)
    return fail(path.string() + " is larger than " + std::to_string(max_bytes >> 10) + " KiB", "is it the right file?",
                ExitCode::usage);
  auto text = fs.read_file(path);
  if (!text) return fail(text.error().message, "", ExitCode::usage);
  if (text->size() > max_bytes) return fail(path.string() + " grew while it was read", "", ExitCode::usage);
  return *text;
}

static Result<void> collect_files(const FileSystem& fs, const fs::path& root, const std::string& prefix,
                                  std::vector<std::string>& out) {
  KB_TRY_ASSIGN(auto entries, fs.list_dir(root));
  for (const auto& entry : entries) {
    std::string rel = prefix.empty() ? entry.name : prefix + "/" + entry.name;
    if (entry.is_symlink) continue;
    if (entry.is_dir) {
      KB_TRY(collect_files(fs, root / entry.name, rel, out));
    } else if (entry.is_file) {
      out.push_back(std::move(rel));
    }
  }
  return {};
}

Result<std::uint64_t> tree_size(const FileSystem& fs, const fs::path& root) {
  std::uint64_t total = 0;
  KB_TRY_ASSIGN(auto entries, fs.list_dir(root));
  for (const auto& entry : entries) {
    if (entry.is_symlink) continue;  // counted where it points, if inside at all
    if (entry.is_dir) {
      KB_TRY_ASSIGN(std::uint64_t size, tree_size(fs, root / entry.name));
      total += size;
    } else if (entry.is_file) {
      total += fs.stat(root / entry.name).size;
    }
  }
  return total;
}

Result<std::vector<std::string>> list_files_recursive(const FileSystem& fs, const fs::path& root) {
  std::vector<std::string> files;
  KB_TRY(collect_files(fs, root, "", files));
  std::sort(files.begin(), files.end());
  return files;
}

static void walk_into(const FileSystem& fs, const fs::path& root, const std::string& prefix,
                      std::vector<TreeEntry>& out) {
  auto entries = fs.list_dir(prefix.empty() ? root : root / prefix);
  if (!entries) {
    if (!prefix.empty()) out.back().type = TreeEntry::Type::unreadable;
    return;
  }
  for (const auto& entry : *entries) {
    std::string rel = prefix.empty() ? entry.name : prefix + "/" + entry.name;
    using Type = TreeEntry::Type;
    Type type = entry.is_symlink ? Type::symlink
                : entry.is_dir   ? Type::directory
                : entry.is_file  ? Type::file
                                 : Type::other;
    out.push_back({rel, type});
    if (type == Type::directory) walk_into(fs, root, rel, out);
  }
}

Result<std::vector<TreeEntry>> walk_tree(const FileSystem& fs, const fs::path& root) {
  KB_TRY(fs.list_dir(root));
  std::vector<TreeEntry> out;
  walk_into(fs, root, "", out);
  return out;
}

}  // namespace kbuild::util
