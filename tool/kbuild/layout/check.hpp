#pragma once
// `kbuild check`: does build/ hold what the kernels loader and the Hub expect (docs/cli.md, kbuild check)?
// Layout (variant names, required files, no bytecode), metadata.json (parses, ids agree, digest
// verifies), and for each native library: ELF of the variant's CPU, exports PyInit_<ops-id>, links
// only Torch, CUDA and C/C++ runtime libraries, no RPATH/RUNPATH, no private CPython symbols
// (kbuild compiles with Py_LIMITED_API=3.9), symbol versions within the manylinux policy, and for a
// torch-stable-abi variant no Torch C++ symbol outside torch::stable (kernel-abi-check's rule).

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/layout/elf.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/version.hpp"

namespace kbuild::layout {

struct CheckIssue {
  enum class Rule { other, symbol_version, stable_abi };

  bool error = true;  ///< false: a warning
  std::string where;  ///< "<variant>" or "<variant>/<file>"
  std::string message;
  Rule rule = Rule::other;
  std::string symbol;  ///< the undefined symbol at fault (symbol_version, stable_abi), as linked
};

struct CheckOptions {
  /// "manylinux_2_28" (the ecosystem's requirement) or "none" to skip symbol versions.
  std::string manylinux = "manylinux_2_28";
  /// The Torch stable-ABI version a torch-stable-abi variant targets; nullopt for other variants.
  std::optional<util::Version> torch_stable_abi;
  /// A tvm-ffi variant's library: exports __tvm_ffi_* functions instead of PyInit_<ops-id>, may link
  /// libtvm_ffi.so, and references no Python symbol at all.
  bool tvm_ffi = false;
};

/// Whether `policy` is one `check` knows.
bool is_known_manylinux_policy(const std::string& policy);

/// Checks one variant directory.
std::vector<CheckIssue> check_variant(const util::FileSystem& fs, const std::filesystem::path& variant_dir,
                                      const CheckOptions& options);

/// The ELF rules alone (pure), for a library expected to export PyInit_<ops_id>.
std::vector<CheckIssue> check_library(const ElfInfo& elf, const std::string& where, const std::string& ops_id,
                                      const std::string& expected_machine, const CheckOptions& options);

}  // namespace kbuild::layout
