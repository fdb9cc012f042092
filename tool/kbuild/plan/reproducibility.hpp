#pragma once
// What in a kernel's sources makes its variants differ from build to build or machine to machine,
// although kbuild pins every toolchain (docs/matrix.md, "Reproducibility"). Pure: given a file's
// name and text, lists the hazards with their line and column.
//  - __DATE__, __TIME__, __TIMESTAMP__: the compiler writes the time of the build into the object.
//  - an anonymous namespace in a .cu file: nvcc names the symbols of its device code after a module
//    id derived from the source's absolute path, so another checkout directory gives other bytes.
// Comments, string and character literals are skipped.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kbuild::plan {

struct ReproducibilityHazard {
  size_t line = 0;    ///< 1-based
  size_t column = 0;  ///< 1-based, in bytes
  std::string what;   ///< the message: "__DATE__ puts the build's date into the object"
};

std::vector<ReproducibilityHazard> reproducibility_hazards(std::string_view path, std::string_view text);

/// Whether a kernel source file (by extension) is scanned: C, C++ and CUDA sources and headers.
bool scanned_for_reproducibility(std::string_view path);

}  // namespace kbuild::plan
