#pragma once
// Make-style dependency files as g++ and nvcc write them with -MD -MF: "target.o: prerequisites",
// where a backslash at the end of a line continues it, "\ " is a space inside a path, and "$$" is
// "$". Example (two lines): `a.o: a.cpp /usr/include/x.h <backslash>` then ` /path/with\ space.h`.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/util/fs.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::exec {

/// The prerequisites of every rule in `text` (targets dropped), in order, without duplicates.
Result<std::vector<std::string>> parse_depfile(std::string_view text);

/// The prerequisites the compiler reached below `root` (their names start with it) that are not really
/// inside it: a header that is a link out of the kernel, or reached through one, or by ".." past the
/// root. One sentence each, "<name> is <where it really is>, outside <root>".
std::vector<std::string> escaping_prerequisites(const util::FileSystem& fs,
                                                const std::vector<std::string>& prerequisites,
                                                const std::filesystem::path& root);

}  // namespace kbuild::exec
