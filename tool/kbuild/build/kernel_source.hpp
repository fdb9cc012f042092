#pragma once
// The kernel directory as every command reads it: build.toml with its diagnostics, and the ids that
// name a build of it.

#include <filesystem>
#include <optional>
#include <string>

#include "kbuild/config/build_toml.hpp"
#include "kbuild/config/diagnostic.hpp"
#include "kbuild/layout/metadata.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/process.hpp"
#include "kbuild/util/result.hpp"
#include "kbuild/util/system.hpp"

namespace kbuild::build {

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

/// "src" + 8 hex digits of SHA-256 over build.toml's content and the relative paths of the kernel
/// directory's files (kernel_source_files, sorted by path). Contents
/// other than build.toml do not count: every translation unit sees the id (TORCH_EXTENSION_NAME), and
/// an edited source must recompile only itself.
Result<std::string> source_content_id(const util::FileSystem& fs, const std::filesystem::path& kernel_dir);

struct BuildIdentity {
  std::string unique_id;  ///< the ops id suffix
  std::optional<layout::GitProvenance> kernel_git;
};

/// The unique id: `explicit_id` if given; else the kernel directory's git tree id (7 hex, "_dirty"
/// appended when tracked files changed); else source_content_id, so that two copies of one kernel
/// outside git give the same ops name and the same bytes, and `kbuild clean` keeps it.
Result<BuildIdentity> build_identity(util::FileSystem& fs, util::ProcessLauncher& launcher,
                                     const std::filesystem::path& kernel_dir,
                                     const std::optional<std::string>& explicit_id);

/// Whether `id` can be part of a Python identifier (letters, digits, '_').
bool is_valid_unique_id(const std::string& id);

}  // namespace kbuild::build
