#include "support/mem_fs.hpp"

namespace kbuild::fakes {

namespace {
std::string norm(const std::filesystem::path& path) {
  std::string s = path.lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}
}  // namespace

void MemFileSystem::put(const std::string& path, std::string content, bool executable) {
  m_files[norm(path)] = {std::move(content), m_clock += 1000, executable, ""};
}

Result<void> MemFileSystem::touch(const std::filesystem::path& path) {
  auto it = m_files.find(norm(path));
  if (it == m_files.end()) return fail("cannot touch " + path.string());
  it->second.mtime_ns = (m_clock += 1000);
  return {};
}

bool MemFileSystem::is_dir(const std::string& path) const {
  if (m_dirs.count(path)) return true;
  std::string prefix = path + "/";
  auto it = m_files.lower_bound(prefix);
  if (it != m_files.end() && it->first.compare(0, prefix.size(), prefix) == 0) return true;
  auto dit = m_dirs.lower_bound(prefix);
  return dit != m_dirs.end() && dit->compare(0, prefix.size(), prefix) == 0;
}

std::string MemFileSystem::follow(const std::string& path) const {
  std::string p = path;
  for (int hops = 0; hops < 8; ++hops) {
    auto it = m_files.find(p);
    if (it == m_files.end() || it->second.link.empty()) return p;
    p = norm(std::filesystem::path(p).parent_path() / it->second.link);
  }
  return p;
}

std::string MemFileSystem::link_target(const std::string& path) const {
  auto it = m_files.find(norm(path));
  return it == m_files.end() ? "" : it->second.link;
}

Result<void> MemFileSystem::create_symlink(const std::filesystem::path& target, const std::filesystem::path& link) {
  std::string p = norm(link);
  if (m_files.count(p) || is_dir(p)) return fail("cannot create the link " + p + ": File exists");
  m_files[p] = {"", m_clock += 1000, false, target.string()};
  return {};
}

namespace {
class MemLock final : public util::FileLock {
 public:
  MemLock(MemFileSystem& fs, std::set<std::string>& locks, std::string path)
      : m_fs(fs), m_locks(locks), m_path(std::move(path)) {}
  ~MemLock() override { m_locks.erase(m_path); }
  void set_owner(std::string_view text) override { (void)m_fs.write_file_atomic(m_path, text); }

 private:
  MemFileSystem& m_fs;
  std::set<std::string>& m_locks;
  std::string m_path;
};
}  // namespace

Result<std::unique_ptr<util::FileLock>> MemFileSystem::lock_file(const std::filesystem::path& path, bool wait) {
  std::string p = norm(path);
  if (m_locks.count(p)) {
    if (wait) return fail("MemFileSystem: waiting on a held lock would block forever: " + p);
    return std::unique_ptr<util::FileLock>();
  }
  if (!m_files.count(p)) put(p, "");
  m_locks.insert(p);
  return std::unique_ptr<util::FileLock>(std::make_unique<MemLock>(*this, m_locks, p));
}

Result<std::filesystem::path> MemFileSystem::real_path(const std::filesystem::path& path) const {
  // Links along the way are resolved too (a linked directory), one component at a time.
  std::filesystem::path resolved = "/";
  for (const auto& part : std::filesystem::path(norm(path)).relative_path()) {
    resolved = follow(norm(resolved / part));
  }
  std::string out = norm(resolved);
  if (!m_files.count(out) && !is_dir(out)) return fail("cannot resolve " + path.string());
  return std::filesystem::path(out);
}

util::FileStat MemFileSystem::stat(const std::filesystem::path& path) const {
  util::FileStat st;
  std::string p = follow(norm(path));
  if (auto it = m_files.find(p); it != m_files.end()) {
    st.exists = st.is_file = true;
    st.size = it->second.content.size();
    st.mtime_ns = it->second.mtime_ns;
    st.executable = it->second.executable;
  } else if (is_dir(p)) {
    st.exists = st.is_dir = true;
  }
  return st;
}

util::FileStat MemFileSystem::lstat(const std::filesystem::path& path) const {
  if (auto it = m_files.find(norm(path)); it != m_files.end() && !it->second.link.empty()) {
    util::FileStat st;
    st.exists = st.is_symlink = true;
    return st;
  }
  return stat(path);
}

Result<std::string> MemFileSystem::read_file(const std::filesystem::path& path) const {
  auto it = m_files.find(follow(norm(path)));
  if (it == m_files.end()) return fail("cannot read " + path.string() + ": No such file or directory");
  return it->second.content;
}

Result<void> MemFileSystem::write_file_atomic(const std::filesystem::path& path, std::string_view content,
                                              bool executable) {
  put(norm(path), std::string(content), executable);
  m_written.push_back(norm(path));
  return {};
}

Result<std::vector<util::DirEntry>> MemFileSystem::list_dir(const std::filesystem::path& path) const {
  std::string p = norm(path);
  if (!is_dir(p)) return fail("cannot list " + p);
  std::map<std::string, util::DirEntry> entries;
  std::string prefix = p + "/";
  for (auto it = m_files.lower_bound(prefix); it != m_files.end() && it->first.starts_with(prefix); ++it) {
    std::string rest = it->first.substr(prefix.size());
    size_t slash = rest.find('/');
    if (slash == std::string::npos)
      entries[rest] = {rest, false, true, !it->second.link.empty()};
    else
      entries[rest.substr(0, slash)] = {rest.substr(0, slash), true, false, false};
  }
  for (auto it = m_dirs.lower_bound(prefix); it != m_dirs.end() && it->starts_with(prefix); ++it) {
    std::string rest = it->substr(prefix.size());
    std::string name = rest.substr(0, rest.find('/'));
    entries[name] = {name, true, false, false};
  }
  std::vector<util::DirEntry> out;
  for (auto& [name, entry] : entries) out.push_back(entry);
  return out;
}

Result<void> MemFileSystem::make_dirs(const std::filesystem::path& path) {
  m_dirs.insert(norm(path));
  return {};
}

Result<void> MemFileSystem::remove_all(const std::filesystem::path& path) {
  std::string p = norm(path);
  std::string prefix = p + "/";
  m_files.erase(p);
  for (auto it = m_files.lower_bound(prefix); it != m_files.end() && it->first.starts_with(prefix);)
    it = m_files.erase(it);
  m_dirs.erase(p);
  for (auto it = m_dirs.lower_bound(prefix); it != m_dirs.end() && it->starts_with(prefix);) it = m_dirs.erase(it);
  return {};
}

Result<void> MemFileSystem::rename(const std::filesystem::path& from, const std::filesystem::path& to) {
  std::string f = norm(from), t = norm(to);
  if (auto it = m_files.find(f); it != m_files.end()) {
    m_files[t] = it->second;
    m_files.erase(f);
    return {};
  }
  if (!is_dir(f)) return fail("cannot rename " + f + ": No such file or directory");
  std::string prefix = f + "/";
  std::vector<std::pair<std::string, File>> moved;
  for (auto it = m_files.lower_bound(prefix); it != m_files.end() && it->first.starts_with(prefix);) {
    moved.emplace_back(t + "/" + it->first.substr(prefix.size()), it->second);
    it = m_files.erase(it);
  }
  for (auto& [path, file] : moved) m_files[path] = file;
  std::vector<std::string> dirs;
  for (auto it = m_dirs.lower_bound(prefix); it != m_dirs.end() && it->starts_with(prefix);) {
    dirs.push_back(t + "/" + it->substr(prefix.size()));
    it = m_dirs.erase(it);
  }
  m_dirs.erase(f);
  m_dirs.insert(t);
  for (auto& d : dirs) m_dirs.insert(d);
  return {};
}

}  // namespace kbuild::fakes
