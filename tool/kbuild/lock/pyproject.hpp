#pragma once
// The kernel dependencies of a Python project: `[tool.kernels.dependencies]` in pyproject.toml.
//
//   [tool.kernels.dependencies]
//   "org/a" = 1                          # major version: branch v1
//   "org/b" = ">=1.2,<2"                 # bounds over release tags (lock/version_spec.hpp)
//   "org/c" = "v1.2.0"                   # a tag or branch name, or a full commit id
//   "org/d" = { version = 1 }            # the table forms of the same, as build.toml's
//   "org/e" = { version = "^1.2" }       #   kernel-depends write them
//   "org/f" = { revision = "v1.2.0" }
//
// Keys are Hub repository ids ("namespace/name"). Every problem of the file is reported at once, as
// file:line:column diagnostics; the rest of pyproject.toml is not interpreted.

#include <string>
#include <string_view>
#include <vector>

#include "kbuild/config/diagnostic.hpp"
#include "kbuild/lock/version_spec.hpp"

namespace kbuild::lock {

struct Requirement {
  std::string repo_id;
  VersionSpec spec;
  config::SourceLocation location;
};

struct PyprojectDependencies {
  bool has_table = false;                 ///< [tool.kernels.dependencies] exists
  std::vector<Requirement> requirements;  ///< in file order
  std::vector<config::Diagnostic> diagnostics;
  bool ok() const { return !config::has_errors(diagnostics); }
};

/// Parses pyproject.toml text; `file` is the path used in diagnostics.
PyprojectDependencies parse_pyproject_dependencies(std::string_view text, const std::string& file);

}  // namespace kbuild::lock
