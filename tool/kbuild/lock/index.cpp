#include "kbuild/lock/index.hpp"

namespace kbuild::lock {

Result<bool> HubKernelIndex::trusted_publisher(const std::string& ns) {
  KB_TRY_ASSIGN(auto overview, m_client.organization_overview(ns));
  return overview.has_value() && overview->trusted_kernel_publisher;
}

Result<hub::Refs> HubKernelIndex::refs(const std::string& repo_id) { return m_client.list_refs({"kernel", repo_id}); }

Result<std::vector<std::string>> HubKernelIndex::variant_dirs(const std::string& repo_id, const std::string& commit) {
  KB_TRY_ASSIGN(auto entries, m_client.list_folder({"kernel", repo_id}, commit, "build"));
  std::vector<std::string> names;
  for (const auto& entry : entries)
    if (entry.is_dir) names.push_back(entry.path.substr(entry.path.rfind('/') + 1));
  return names;
}

Result<std::string> HubKernelIndex::read_file(const std::string& repo_id, const std::string& commit,
                                              const std::string& path) {
  return m_client.download_text({"kernel", repo_id}, commit, path);
}

Result<std::vector<hub::RemoteFile>> HubKernelIndex::list_files(const std::string& repo_id, const std::string& commit,
                                                                const std::string& folder) {
  return m_client.list_tree({"kernel", repo_id}, commit, folder);
}

Result<void> HubKernelIndex::fetch(const std::string& repo_id, const std::string& commit, const std::string& path,
                                   const std::filesystem::path& destination) {
  KB_TRY(m_client.download_file({"kernel", repo_id}, commit, path, destination));
  return {};
}

}  // namespace kbuild::lock
