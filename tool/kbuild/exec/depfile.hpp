#pragma once
// Make-style dependency files as g++ and nvcc write them with -MD -MF: "target.o: prerequisites",
// where a backslash at the end of a line continues it, "\ " is a space inside a path, and "$$" is
// "$". Example (two lines): `a.o: a.cpp /usr/include/x.h <backslash>` then ` /path/with\ space.h`.

#include <string>
#include <string_view>
#include <vector>

#include "kbuild/util/result.hpp"

namespace kbuild::exec {

/// The prerequisites of every rule in `text` (targets dropped), in order, without duplicates.
Result<std::vector<std::string>> parse_depfile(std::string_view text);

}  // namespace kbuild::exec
