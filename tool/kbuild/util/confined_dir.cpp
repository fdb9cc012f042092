#include "kbuild/util/confined_dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>

namespace kbuild::util {

namespace fs = std::filesystem;

namespace {

constexpr int k_max_links = 40;  // the kernel's limit on links in one resolution

// The components of a relative name; nullopt for "", "/x", "a//b", "a/./b", "a/../b", NUL bytes.
std::optional<std::vector<std::string>> components(std::string_view rel) {
  if (rel.empty() || rel.front() == '/' || rel.find('\0') != std::string_view::npos) return std::nullopt;
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t slash = rel.find('/', start);
    std::string part(rel.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
    if (part.empty() || part == "." || part == "..") return std::nullopt;
    parts.push_back(std::move(part));
    if (slash == std::string_view::npos) return parts;
    start = slash + 1;
  }
}

std::string join(const std::vector<std::string>& parts, size_t count) {
  std::string out;
  for (size_t i = 0; i < count; ++i) out += (i ? "/" : "") + parts[i];
  return out;
}

Error refused(std::string_view rel, const std::string& why) {
  return Error{ExitCode::failure, "refusing to write \"" + std::string(rel) + "\": " + why,
               "the archive is malformed or malicious; delete it from the download cache and fetch it again"};
}

struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Opens directory `name` in `dir` without following a link; with `create`, makes it when missing.
int open_dir_at(int dir, const std::string& name, bool create) {
  int fd = ::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && create) {
    if (::mkdirat(dir, name.c_str(), 0755) != 0 && errno != EEXIST) return -1;
    fd = ::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  }
  return fd;
}

// Removes what is at `name` in `dir` (a file or a link, never what a link names); a directory stays
// and is an error.
Result<void> clear_entry(int dir, const std::string& name, std::string_view rel) {
  struct stat st {};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return {};
  if (S_ISDIR(st.st_mode)) return fail(refused(rel, "a directory is there already"));
  if (::unlinkat(dir, name.c_str(), 0) != 0)
    return fail(refused(rel, std::string("cannot replace it: ") + std::strerror(errno)));
  return {};
}

}  // namespace

Result<ConfinedDir> ConfinedDir::open(const fs::path& root) {
  std::error_code ec;
  fs::create_directories(root, ec);
  int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return fail("cannot open " + root.string() + ": " + std::strerror(errno));
  return ConfinedDir(root, fd);
}

ConfinedDir::ConfinedDir(ConfinedDir&& other) noexcept : m_root(std::move(other.m_root)), m_fd(other.m_fd) {
  other.m_fd = -1;
}

ConfinedDir::~ConfinedDir() {
  if (m_fd >= 0) ::close(m_fd);
}

Result<void> ConfinedDir::make_dirs(std::string_view rel) {
  auto parts = components(rel);
  if (!parts) return fail(refused(rel, "not a plain relative name"));
  int dir = ::dup(m_fd);
  for (const auto& part : *parts) {
    int next = open_dir_at(dir, part, true);
    int error = errno;
    ::close(dir);
    if (next < 0)
      return fail(refused(rel, error == ELOOP || error == ENOTDIR
                                   ? "\"" + part + "\" is a link or a file, never followed"
                                   : std::string("cannot create it: ") + std::strerror(error)));
    dir = next;
  }
  ::close(dir);
  return {};
}

Result<std::pair<int, std::string>> ConfinedDir::parent_of(std::string_view rel) const {
  auto parts = components(rel);
  if (!parts) return fail(refused(rel, "not a plain relative name"));
  int dir = ::dup(m_fd);
  for (size_t i = 0; i + 1 < parts->size(); ++i) {
    int next = open_dir_at(dir, (*parts)[i], false);
    int error = errno;
    ::close(dir);
    if (next < 0)
      return fail(refused(rel, error == ELOOP || error == ENOTDIR
                                   ? "\"" + join(*parts, i + 1) + "\" is a link or a file, never followed"
                                   : "its directory does not exist"));
    dir = next;
  }
  return std::pair(dir, parts->back());
}

Result<void> ConfinedDir::write_file(std::string_view rel, const std::function<Result<bool>(std::string&)>& next,
                                     bool executable) {
  KB_TRY_ASSIGN(auto parent, parent_of(rel));
  Fd dir(parent.first);
  KB_TRY(clear_entry(dir.fd, parent.second, rel));
  Fd file(::openat(dir.fd, parent.second.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                   executable ? 0755 : 0644));
  if (file.fd < 0) return fail(refused(rel, std::string("cannot create it: ") + std::strerror(errno)));
  auto written = [&]() -> Result<void> {
    std::string chunk;
    for (;;) {
      chunk.clear();
      KB_TRY_ASSIGN(bool more, next(chunk));
      for (size_t done = 0; done < chunk.size();) {
        ssize_t n = ::write(file.fd, chunk.data() + done, chunk.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail("cannot write " + (m_root / rel).string() + ": " + std::strerror(errno));
        done += static_cast<size_t>(n);
      }
      if (!more) return {};
    }
  }();
  if (!written) (void)::unlinkat(dir.fd, parent.second.c_str(), 0);
  return written;
}

Result<void> ConfinedDir::create_symlink(std::string_view rel, std::string_view target) {
  KB_TRY_ASSIGN(auto parent, parent_of(rel));
  Fd dir(parent.first);
  KB_TRY(clear_entry(dir.fd, parent.second, rel));
  if (::symlinkat(std::string(target).c_str(), dir.fd, parent.second.c_str()) != 0)
    return fail(refused(rel, std::string("cannot create the link: ") + std::strerror(errno)));
  return {};
}

Result<std::string> ConfinedDir::read_file(std::string_view rel, std::uint64_t limit) const {
  KB_TRY_ASSIGN(auto parent, parent_of(rel));
  Fd dir(parent.first);
  Fd file(::openat(dir.fd, parent.second.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (file.fd < 0 || ::fstat(file.fd, &st) != 0 || !S_ISREG(st.st_mode))
    return fail(refused(rel, "it is not a regular file reached without links"));
  if (static_cast<std::uint64_t>(st.st_size) > limit) return fail(refused(rel, "it is too large"));
  std::string content(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::read(file.fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("cannot read " + (m_root / rel).string());
    done += static_cast<size_t>(n);
  }
  return content;
}

std::optional<std::string> ConfinedDir::resolve(std::string_view from, std::string_view target) const {
  if (target.empty() || target.front() == '/') return std::nullopt;  // absolute: the host's, not the tree's
  std::vector<std::string> resolved;
  if (!from.empty()) {
    auto start = components(from);
    if (!start) return std::nullopt;
    resolved = *start;
  }
  std::deque<std::string> pending;
  auto push_front_all = [&pending](std::string_view text) {
    std::vector<std::string> parts;
    size_t start = 0;
    for (;;) {
      size_t slash = text.find('/', start);
      parts.emplace_back(text.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start));
      if (slash == std::string_view::npos) break;
      start = slash + 1;
    }
    pending.insert(pending.begin(), parts.begin(), parts.end());
  };
  push_front_all(target);
  int links = 0;
  while (!pending.empty()) {
    std::string part = std::move(pending.front());
    pending.pop_front();
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (resolved.empty()) return std::nullopt;  // above the root
      resolved.pop_back();
      continue;
    }
    resolved.push_back(part);
    const std::string path = join(resolved, resolved.size());
    struct stat st {};
    // Every component before this one is a directory or a missing name, never a link (they were
    // resolved), so the kernel follows no link to stat it.
    if (::fstatat(m_fd, path.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(st.st_mode)) continue;
    if (++links > k_max_links) return std::nullopt;
    char buffer[4096];
    ssize_t n = ::readlinkat(m_fd, path.c_str(), buffer, sizeof buffer);
    if (n <= 0 || buffer[0] == '/') return std::nullopt;
    resolved.pop_back();
    push_front_all(std::string_view(buffer, static_cast<size_t>(n)));
  }
  return join(resolved, resolved.size());
}

Result<std::vector<std::string>> ConfinedDir::escaping_links() const {
  std::vector<std::string> escaping;
  std::function<Result<void>(int, const std::string&)> walk = [&](int dir, const std::string& prefix) -> Result<void> {
    Fd copy(::dup(dir));
    DIR* stream = ::fdopendir(copy.fd);
    if (!stream) return fail("cannot list " + (m_root / prefix).string());
    copy.fd = -1;  // owned by the stream now
    std::vector<std::pair<std::string, unsigned char>> entries;
    while (dirent* entry = ::readdir(stream)) {
      std::string name = entry->d_name;
      if (name != "." && name != "..") entries.emplace_back(name, entry->d_type);
    }
    ::closedir(stream);
    for (const auto& [name, type] : entries) {
      const std::string rel = prefix.empty() ? name : prefix + "/" + name;
      struct stat st {};
      if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (S_ISLNK(st.st_mode)) {
        char buffer[4096];
        ssize_t n = ::readlinkat(dir, name.c_str(), buffer, sizeof buffer);
        if (n <= 0 || !resolve(prefix, std::string_view(buffer, static_cast<size_t>(n)))) escaping.push_back(rel);
      } else if (S_ISDIR(st.st_mode)) {
        Fd child(open_dir_at(dir, name, false));
        if (child.fd < 0) return fail("cannot open " + (m_root / rel).string());
        KB_TRY(walk(child.fd, rel));
      }
    }
    return {};
  };
  KB_TRY(walk(m_fd, ""));
  return escaping;
}

}  // namespace kbuild::util
