#pragma once
// A KernelIndex over a kernel directory on this machine (its build/ as one revision), so that
// `kbuild info ./my-kernel` describes a local build with the same code, and the same choice of
// variant, as a published one (`kernels info` takes a local path too). Commits are ignored; the
// directory has no refs.

#include "kbuild/lock/index.hpp"
#include "kbuild/util/fs.hpp"

namespace kbuild::lock {

class LocalKernelIndex final : public KernelIndex {
 public:
  LocalKernelIndex(const util::FileSystem& fs, std::filesystem::path kernel_dir)
      : m_fs(fs), m_dir(std::move(kernel_dir)) {}
  /// The commit to pass for this index's one revision.
  static std::string local_commit() { return std::string(40, '0'); }

  Result<bool> trusted_publisher(const std::string&) override { return true; }
  Result<hub::Refs> refs(const std::string&) override { return hub::Refs{}; }
  Result<std::vector<std::string>> variant_dirs(const std::string& repo_id, const std::string& commit) override;
  Result<std::vector<hub::RemoteFile>> list_files(const std::string& repo_id, const std::string& commit,
                                                  const std::string& folder) override;
  Result<std::string> read_file(const std::string& repo_id, const std::string& commit,
                                const std::string& path) override;
  Result<void> fetch(const std::string& repo_id, const std::string& commit, const std::string& path,
                     const std::filesystem::path& destination) override;

 private:
  const util::FileSystem& m_fs;
  std::filesystem::path m_dir;
};

}  // namespace kbuild::lock
