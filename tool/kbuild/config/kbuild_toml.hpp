#pragma once
// kbuild.toml: kbuild's own settings for a kernel, next to build.toml (kernel-builder rejects unknown
// keys in build.toml, so kbuild's settings live apart). Today: the build matrix.
//
//   [matrix]
//   torch = ["2.11", "2.15"]   # Torch major.minor versions
//   cuda = ["13.0", "13.2"]    # CUDA major.minor versions ([] for none)
//   cpu = true                 # also build cpu variants
//
// Without the file (or without [matrix]) the matrix is kbuild's default table (default_matrix()).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/config/diagnostic.hpp"
#include "kbuild/util/version.hpp"

namespace kbuild::config {

struct MatrixSpec {
  std::vector<util::Version> torch;  ///< major.minor
  std::vector<util::Version> cuda;   ///< major.minor
  bool cpu = true;
  std::string origin;  ///< "kbuild default table" or the kbuild.toml path
};

/// kbuild's table of supported variants (documented in docs/matrix.md).
MatrixSpec default_matrix();

struct KbuildSettingsOutcome {
  std::optional<MatrixSpec> matrix;  ///< absent when the file has no [matrix]
  std::vector<config::Diagnostic> diagnostics;
};

/// Parses kbuild.toml (every problem reported, like build.toml).
KbuildSettingsOutcome parse_kbuild_toml(std::string_view text, const std::string& file_name);

}  // namespace kbuild::config
