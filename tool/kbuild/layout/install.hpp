#pragma once
// Assembling build/<variant>/ (the layout the loader imports; docs/architecture.md): the kernel's Python package, the
// generated _ops.py, the native library <ops-id>.abi3.so, and metadata.json with the digest of everything else.
//
// The directory is assembled next to its final place (build/.<variant>.tmp-*) and swapped in with
// renames, so a reader (or an interrupted build) sees the old tree or the new one, never a mix.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/config/variant.hpp"
#include "kbuild/layout/check.hpp"
#include "kbuild/layout/metadata.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::layout {

namespace fs = std::filesystem;

/// A directory's future contents: relative path -> bytes or a file to copy.
struct FileSet {
  struct Entry {
    std::optional<std::string> bytes;
    std::optional<fs::path> source;
  };
  std::map<std::string, Entry> files;

  void add_bytes(const std::string& rel, std::string bytes) { files[rel] = {std::move(bytes), std::nullopt}; }
  void add_file(const std::string& rel, fs::path source) { files[rel] = {std::nullopt, std::move(source)}; }
};

/// The checks of `kbuild check` a native library must pass before it is installed (kernel-builder runs
/// its ABI check after every build): nothing the official checker or the loader rejects is installed.
struct LibraryGate {
  std::string machine;            ///< the variant's CPU, "x86_64" or "aarch64"
  CheckOptions options;           ///< the manylinux policy ("none" skips symbol versions)
  std::vector<fs::path> objects;  ///< the linked objects, to name the source of a symbol
  fs::path work_dir;              ///< objects are named relative to <work_dir>/<variant>/obj
};

/// The errors of `check_library` for the staged library, with the objects that reference each
/// offending symbol; an error value (ExitCode::failure) listing them all, or nothing.
Result<void> gate_library(const util::FileSystem& fs, const fs::path& library, const std::string& ops_id,
                          const std::string& variant, const LibraryGate& gate);

struct InstallSpec {
  fs::path variant_dir;                   ///< build/<variant>
  fs::path package_dir;                   ///< torch-ext/<python_name>
  std::vector<std::string> python_files;  ///< relative to package_dir
  std::optional<fs::path> library;        ///< staged native library (absent for noarch variants)
  std::string library_name;               ///< its name in the variant (library_file_name)
  std::string ops_py;                     ///< the generated _ops.py
  Metadata metadata;                      ///< without digest; install adds it
  std::optional<LibraryGate> gate;        ///< checks the library must pass first
};

/// The native library's name in a compiled variant: <ops-id>.abi3.so (a Python extension module), or
/// <ops-id>.so for tvm-ffi variants (a plain shared library that tvm_ffi.load_module opens).
std::string library_file_name(const config::Variant& variant, const std::string& ops_id);

/// Files of the Python package that ship in a variant: extensions in `pyext` (without "pyi" for
/// compiled variants, as kernel-builder's CMake install does), never bytecode or __pycache__.
std::vector<std::string> select_python_files(const std::vector<std::string>& package_files,
                                             const std::vector<std::string>& pyext, bool noarch);

/// The file set of a variant without metadata.json.
FileSet variant_files(const InstallSpec& spec);

/// Writes the variant directory: the file set plus metadata.json with its digest.
Result<void> install_variant(util::FileSystem& fs, const InstallSpec& spec);

}  // namespace kbuild::layout
