#pragma once
// What the consumer side (lock, download, versions, info) reads from a kernel registry, as a small
// interface: the Hub through HubKernelIndex, in-memory tables in unit tests. Errors are Hub errors
// (exit code 4) unless stated.

#include <filesystem>
#include <string>
#include <vector>

#include "kbuild/hub/client.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::lock {

class KernelIndex {
 public:
  virtual ~KernelIndex() = default;
  /// Whether namespace `ns` is a trusted kernel publisher (false for an unknown organisation).
  virtual Result<bool> trusted_publisher(const std::string& ns) = 0;
  virtual Result<hub::Refs> refs(const std::string& repo_id) = 0;
  /// The names of the folders under build/ at `commit` (empty when there is no build/).
  virtual Result<std::vector<std::string>> variant_dirs(const std::string& repo_id, const std::string& commit) = 0;
  /// Every file below `folder` at `commit`, recursively, with its git blob id and LFS sha256.
  virtual Result<std::vector<hub::RemoteFile>> list_files(const std::string& repo_id, const std::string& commit,
                                                          const std::string& folder) = 0;
  /// The content of a small file at `commit`.
  virtual Result<std::string> read_file(const std::string& repo_id, const std::string& commit,
                                        const std::string& path) = 0;
  /// Writes the content of a file at `commit` to `destination` (unverified: the caller checks it).
  virtual Result<void> fetch(const std::string& repo_id, const std::string& commit, const std::string& path,
                             const std::filesystem::path& destination) = 0;
};

/// A KernelIndex over the Hub client (repository type "kernel").
class HubKernelIndex final : public KernelIndex {
 public:
  explicit HubKernelIndex(hub::HubClient& client) : m_client(client) {}
  Result<bool> trusted_publisher(const std::string& ns) override;
  Result<hub::Refs> refs(const std::string& repo_id) override;
  Result<std::vector<std::string>> variant_dirs(const std::string& repo_id, const std::string& commit) override;
  Result<std::vector<hub::RemoteFile>> list_files(const std::string& repo_id, const std::string& commit,
                                                  const std::string& folder) override;
  Result<std::string> read_file(const std::string& repo_id, const std::string& commit,
                                const std::string& path) override;
  Result<void> fetch(const std::string& repo_id, const std::string& commit, const std::string& path,
                     const std::filesystem::path& destination) override;

 private:
  hub::HubClient& m_client;
};

}  // namespace kbuild::lock
