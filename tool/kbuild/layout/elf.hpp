#pragma once
// Just enough ELF reading for `kbuild check`: the dynamic section (NEEDED, RPATH, RUNPATH, SONAME)
// and the dynamic symbol table with GNU symbol versions. 64-bit little-endian objects only (the
// x86_64 and aarch64 Linux variants kbuild builds).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/util/result.hpp"

namespace kbuild::layout {

struct ElfSymbol {
  std::string name;
  std::string version;  ///< "GLIBC_2.14" for versioned references, else empty
  bool defined = false;
  bool function = false;
  bool global = false;  ///< STB_GLOBAL or STB_WEAK with default or protected visibility
};

struct ElfInfo {
  std::string machine;  ///< "x86_64", "aarch64" or "other"
  bool shared_object = false;
  std::vector<std::string> needed;
  std::optional<std::string> rpath;
  std::optional<std::string> runpath;
  std::vector<ElfSymbol> dynamic_symbols;
};

/// The global symbols a relocatable object (.o) references but does not define (its .symtab), to
/// name the source behind a library's dependency.
Result<std::vector<std::string>> undefined_symbols_of_object(std::string_view image);

/// The C++ name of a mangled symbol ("c10::Error::~Error()"), or the symbol itself when it is not one.
std::string demangle(const std::string& symbol);

/// Parses an ELF image held in memory. Error for anything that is not a 64-bit little-endian ELF
/// file or whose tables point outside the file.
Result<ElfInfo> read_elf(std::string_view image);

}  // namespace kbuild::layout
