#include "kbuild/lock/local_index.hpp"

namespace kbuild::lock {

Result<std::vector<std::string>> LocalKernelIndex::variant_dirs(const std::string&, const std::string&) {
  std::vector<std::string> names;
  if (!m_fs.stat(m_dir / "build").is_dir) return names;
  KB_TRY_ASSIGN(auto entries, m_fs.list_dir(m_dir / "build"));
  for (const auto& entry : entries)
    if (entry.is_dir && !entry.is_symlink) names.push_back(entry.name);
  return names;
}

Result<std::vector<hub::RemoteFile>> LocalKernelIndex::list_files(const std::string&, const std::string&,
                                                                  const std::string& folder) {
  std::vector<hub::RemoteFile> files;
  if (!m_fs.stat(m_dir / folder).is_dir) return files;
  KB_TRY_ASSIGN(auto rels, util::list_files_recursive(m_fs, m_dir / folder));
  for (const auto& rel : rels) {
    hub::RemoteFile file;
    file.path = folder + "/" + rel;
    file.size = m_fs.stat(m_dir / folder / rel).size;
    files.push_back(std::move(file));
  }
  return files;
}

Result<std::string> LocalKernelIndex::read_file(const std::string&, const std::string&, const std::string& path) {
  return m_fs.read_file(m_dir / path);
}

Result<void> LocalKernelIndex::fetch(const std::string&, const std::string&, const std::string& path,
                                     const std::filesystem::path&) {
  return fail("kbuild does not copy " + path + " out of a local kernel directory", "use the directory itself");
}

}  // namespace kbuild::lock
