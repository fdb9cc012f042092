#pragma once
// build.toml parsing and validation, compatible with kernel-builder's kernels-data crate:
// edition 5 is the current schema, an edition-less file is read as v4 and upgraded in memory with a
// warning, v3 and older are refused with a hint. Every table denies unknown keys. All problems of a
// file are reported at once.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/config/diagnostic.hpp"
#include "kbuild/config/model.hpp"
#include "kbuild/util/fs.hpp"

namespace kbuild::config {

struct ParseOutcome {
  /// Set when there is no error-severity diagnostic.
  std::optional<KernelConfig> config;
  /// What could be read even when there are errors, so that file checks can still run and report
  /// every problem at once. Not for building.
  std::optional<KernelConfig> partial;
  std::vector<Diagnostic> diagnostics;
  /// The schema the file was read as: 5 (edition = 5), 4 (no edition, upgraded in memory), 3 (the
  /// old format, refused).
  int edition = 5;
  /// Location of every value that names a file, keyed "kernel.<name>.src[i]", "torch.src[i]", ...
  std::vector<std::pair<std::string, SourceLocation>> path_locations;
};

/// Parses the text of a build.toml. `file_name` is used in diagnostics only.
ParseOutcome parse_build_toml(std::string_view text, const std::string& file_name);

/// Checks the files a parsed config refers to, relative to the kernel directory `root`: sources and
/// include directories exist and, symbolic links resolved, stay inside `root`; the Python package
/// torch-ext/<python_name>/__init__.py is there.
std::vector<Diagnostic> check_project_files(const ParseOutcome& outcome, const util::FileSystem& fs,
                                            const std::filesystem::path& root, const std::string& file_name);

/// Reads `<root>/build.toml` (a regular file of at most 1 MiB), parses and checks it. Diagnostics are
/// always returned; `config` is set only when there is no error.
ParseOutcome load_kernel_config(const util::FileSystem& fs, const std::filesystem::path& root);

/// build.toml as a build input: "kbuild-build-toml 1\n" and its values without `[general.hub]` (which
/// only publishing reads) as compact JSON with sorted keys (dates and times as TOML writes them), so
/// that any tool can compute it (Python: json.dumps(doc, sort_keys=True, separators=(",", ":"),
/// ensure_ascii=False)). Setting the Hub repository, a comment or a reformatting therefore rebuilds
/// nothing and leaves the ops id as it was; any other value changes this text. Text that does not
/// parse is returned as is (loading it reports the errors).
std::string build_toml_input_text(std::string_view text);

/// The longest general.name kbuild accepts: the library is named "_<name>_<backend>_<id>.abi3.so",
/// which must fit a file name (255 bytes) with the longest backend and a dirty id.
constexpr size_t k_max_kernel_name = 200;
bool is_valid_kernel_name(std::string_view name);
/// A path of build.toml made canonical: relative, '/'-separated, without "." components; an error
/// (the reason) for an empty or absolute path, a ".." component, or a control character (a NUL
/// would silently cut the path short). The kernel directory itself ("." or "./") is "." where a
/// directory may be named (`include = ["."]`, which kernel-builder accepts), an error elsewhere.
std::expected<std::string, std::string> normalize_kernel_path(std::string_view path, bool directory = false);
/// CUDA capabilities that exist (compute capability major.minor of a real GPU architecture).
const std::vector<std::string>& known_cuda_capabilities();
bool is_valid_git_url(std::string_view url);
/// A CUDA capability as build.toml writes it: "9.0", "10.0a", "12.0f", "8.0+PTX".
bool is_valid_cuda_capability(std::string_view capability);

}  // namespace kbuild::config
