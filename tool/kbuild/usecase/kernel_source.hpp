#pragma once
// The kernel directory as every command reads it: build.toml with its diagnostics, and the ids that
// name a build of it.

#include <filesystem>
#include <optional>
#include <string>

#include "kbuild/config/build_toml.hpp"
#include "kbuild/config/diagnostic.hpp"
#include "kbuild/exec/reporter.hpp"
#include "kbuild/layout/metadata.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/process.hpp"
#include "kbuild/util/result.hpp"
#include "kbuild/util/system.hpp"

namespace kbuild::usecase {

/// Error (exit code 2) unless `kernel_dir` is a directory holding a build.toml.
Result<void> require_kernel_dir(const util::FileSystem& fs, const std::filesystem::path& kernel_dir);

/// Loads <kernel_dir>/build.toml; every diagnostic goes to `sink`; error (exit code 2) when any is
/// an error, or when there is no build.toml.
Result<config::KernelConfig> load_kernel(const util::FileSystem& fs, const std::filesystem::path& kernel_dir,
                                         const config::DiagnosticSink& sink);

/// The kernel directory's files, relative and sorted by path, leaving out build/, dot-entries,
/// __pycache__ and *.pyc: what the source id and the registration-prefix check read.
Result<std::vector<std::string>> kernel_source_files(const util::FileSystem& fs,
                                                     const std::filesystem::path& kernel_dir);

/// The files of the Python package directory `package_dir` (relative to the kernel directory), all
/// of them (the install step filters), relative to the package and sorted. Symbolic links are
/// followed only to files and directories inside the kernel directory (and never into a loop);
/// any other link is an error (exit code 2) naming each, so nothing outside reaches build/.
Result<std::vector<std::string>> package_files(const util::FileSystem& fs, const std::filesystem::path& kernel_dir,
                                               const std::string& package_dir);

/// The files of the kernel directory that a build reads, relative and sorted: build.toml, every file
/// listed in a `src` ([torch] and components), the C, C++ and CUDA files under their `include`
/// directories, and the Python package (torch-ext/<python_name>/, bytecode left out). README, tests,
/// benchmarks, kbuild.lock and other files are not build inputs. Links are followed as package_files
/// says; a refused link that is (or may hold) a build input is an error (exit code 2).
Result<std::vector<std::string>> build_input_files(const util::FileSystem& fs, const std::filesystem::path& kernel_dir,
                                                   const config::KernelConfig& config);

/// The build inputs with their contents' SHA-256, and the source id they give: "src" + 8 hex digits of
/// SHA-256 over each relative path and content. The same sources give the same id (a commit, a README
/// edit, a new test file or `kbuild clean` keep it; two checkouts agree), and any change to what is
/// compiled or installed gives a new one, as the loader needs to tell two builds apart in one process.
///
/// A build keeps the manifest of its sources in .kbuild/sources (rewritten only when it changes), so
/// that `kbuild check` can name what changed since; format (text):
///   kbuild-sources 1 <source id>
///   <sha256 hex> <relative path>          one line per build input, sorted by path
struct SourceManifest {
  std::string id;
  std::vector<std::pair<std::string, std::string>> files;  ///< (relative path, sha256 hex), sorted
  std::string render() const;
  static std::optional<SourceManifest> parse(std::string_view text);
  /// What differs from `before`, in words ("img2gray.cu changed", "a.h is a new build input"), or "".
  std::string change_since(const SourceManifest& before) const;
};
Result<SourceManifest> source_manifest(const util::FileSystem& fs, const std::filesystem::path& kernel_dir,
                                       const config::KernelConfig& config);

/// The source id alone (SourceManifest::id).
Result<std::string> source_content_id(const util::FileSystem& fs, const std::filesystem::path& kernel_dir,
                                      const config::KernelConfig& config);

struct BuildIdentity {
  std::string unique_id;   ///< the ops id suffix
  SourceManifest sources;  ///< the build inputs
  std::optional<layout::GitProvenance> kernel_git;
};

/// The unique id: `explicit_id` if given, else source_content_id. The kernel directory's git commit
/// and dirty flag, when it is in a git work tree, are provenance for metadata.json only: they do
/// not enter the id, so that committing recompiles nothing.
Result<BuildIdentity> build_identity(util::FileSystem& fs, util::ProcessLauncher& launcher,
                                     const std::filesystem::path& kernel_dir, const config::KernelConfig& config,
                                     const std::optional<std::string>& explicit_id);

/// Warns (file:line:column) about what in `sources` makes variants differ between builds although
/// every toolchain is pinned (plan/reproducibility.hpp); run when the sources change, not on a no-op build.
void warn_reproducibility_hazards(util::FileSystem& fs, exec::Reporter& reporter,
                                  const std::filesystem::path& kernel_dir, const SourceManifest& sources);

/// Whether `id` can be part of a Python identifier (letters, digits, '_').
bool is_valid_unique_id(const std::string& id);

}  // namespace kbuild::usecase
