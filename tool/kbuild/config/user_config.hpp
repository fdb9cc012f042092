#pragma once
// The user's settings for every kernel: $XDG_CONFIG_HOME/kbuild/config.toml (default
// ~/.config/kbuild/config.toml). Optional; every key is optional; unknown keys are errors (with
// file:line:column), as in build.toml.
//
//   python = "/opt/torch/bin/python"   # the interpreter whose Torch local builds and tests use
//   cuda-archs = "native"              # local CUDA builds: "native", "all" or "8.0,9.0"
//   torch-index = "https://download.pytorch.org/whl/{compute}"   # kbuild test's Torch builds
//   toolchain-origins = ["https://debian.internal/debian/"]      # pins trusted as they are
//
// Each setting is the third choice of its kind: a command-line option first, then an environment
// variable (KBUILD_PYTHON, KBUILD_CUDA_ARCHS, KBUILD_TORCH_INDEX), then this file, then kbuild's default (python3;
// native). docs/cli.md, "Settings".

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/config/diagnostic.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/result.hpp"
#include "kbuild/util/system.hpp"

namespace kbuild::config {

struct UserConfig {
  std::optional<std::string> python;
  std::optional<std::string> cuda_archs;
  std::optional<std::string> torch_index;
  /// URL prefixes whose toolchain pins are trusted without checking them against upstream's indices
  /// (toolchain/provenance.hpp), e.g. a company's own Debian mirror.
  std::vector<std::string> toolchain_origins;
  std::filesystem::path file;  ///< where it was read from (empty: there is none)
};

/// $XDG_CONFIG_HOME/kbuild/config.toml, or $HOME/.config/kbuild/config.toml; empty without either.
std::filesystem::path user_config_path(const util::Environment& env);

/// Parses the text of a user config (every problem reported).
struct UserConfigOutcome {
  UserConfig config;
  std::vector<Diagnostic> diagnostics;
};
UserConfigOutcome parse_user_config(std::string_view text, const std::string& file_name);

/// Reads the user's config file when there is one; an invalid file is an error (exit code 2) whose
/// message lists every diagnostic.
Result<UserConfig> load_user_config(const util::FileSystem& fs, const util::Environment& env);

/// A setting and where it came from ("--python", "KBUILD_PYTHON", the config file, "default").
struct Setting {
  std::string value;
  std::string source;
};

/// The interpreter: `option` if given, else $KBUILD_PYTHON, else the user config's python, else python3.
Result<Setting> choose_python(const std::string& option, const util::FileSystem& fs, const util::Environment& env);

/// The CUDA architectures of a local build: `option` if given, else $KBUILD_CUDA_ARCHS, else the user
/// config's cuda-archs, else `fallback` ("native"; "all" for a matrix build).
Result<Setting> choose_cuda_archs(const std::string& option, const std::string& fallback, const util::FileSystem& fs,
                                  const util::Environment& env);

/// Where `kbuild test` installs the Torch of a variant's test environment from: a PEP 503 index URL
/// in which "{compute}" becomes the variant's compute ("cpu", "cu130", ...), PyTorch's per-build
/// indexes by default; or "pypi": PyPI's own builds only (one CUDA version per Torch release).
inline constexpr std::string_view k_default_torch_index = "https://download.pytorch.org/whl/{compute}";
/// The Torch index: `option`, else $KBUILD_TORCH_INDEX, else the user config's torch-index, else the
/// default; anything but a http(s)/file URL or "pypi" is a usage error.
Result<Setting> choose_torch_index(const std::string& option, const util::FileSystem& fs, const util::Environment& env);

/// toml++'s version, as compiled against (`kbuild --version`).
std::string toml_library_version();

}  // namespace kbuild::config
