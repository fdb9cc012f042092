#pragma once
// Linking the few newer libstdc++ symbols statically, the way manylinux toolchains do.
//
// A kernel must load where libstdc++ is as old as manylinux_2_28's (GLIBCXX_3.4.24), but the host
// GCC's libstdc++ is newer: a library that uses, say, std::to_chars(double) (GLIBCXX_3.4.29) or the
// default constructor of std::ostringstream (3.4.26) would need that newer libstdc++ at run time.
// Toolchains built for manylinux (devtoolset) link such symbols from a static "nonshared" archive
// and everything else from the shared libstdc++.so.6 that Torch shares. kbuild builds the
// equivalent from the host GCC's own libstdc++.a:
//
//  - a member of libstdc++.a is a candidate when it defines a symbol that libstdc++.so.6 exports
//    only in versions newer than the policy (GLIBCXX > 3.4.24);
//  - every other global it defines is made local (objcopy --localize-symbol), so the linker pulls
//    the member only for a newer symbol and binds everything else to libstdc++.so.6;
//  - a member is refused when one of those other globals carries identity or shared state that two
//    copies would break: locale facet ids, guard variables, COW string empty representations,
//    shared_ptr's make_shared tag, writable data, C++ runtime entry points (__cxa_*), transactional
//    clones; and when it does not link on its own against libstdc++.so.6 (--no-undefined);
//  - the members kept form libkbuild_stdcxx_compat.a in $KBUILD_CACHE/toolchains/stdcxx-compat-<sha>/,
//    keyed by the bytes of both libraries, assembled under a temporary name.
//
// The link puts the archive before libstdc++.so.6 with --exclude-libs, so what it contributes stays
// hidden. A newer symbol no kept member provides still reaches the ABI gate, which refuses it.

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kbuild/toolchain/toolchain.hpp"
#include "kbuild/util/cache_layout.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/process.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::toolchain {

/// One member of a static archive, as `nm -A -g --format=posix` lists it.
struct ArchiveMember {
  std::string name;
  std::map<std::string, char> defined;  ///< global symbol -> nm type letter
  std::set<std::string> undefined;
};

/// The members of `nm -A -g --format=posix ARCHIVE` output, by name.
std::map<std::string, ArchiveMember> parse_archive_symbols(const std::string& nm_output);

/// The symbols that `nm -D --defined-only --with-symbol-versions --format=posix libstdc++.so.6` shows
/// only with GLIBCXX versions newer than `glibcxx_max` ("3.4.24").
std::set<std::string> newer_glibcxx_symbols(const std::string& nm_output, const std::string& glibcxx_max);

struct CompatMember {
  std::string name;
  std::vector<std::string> localize;  ///< the member's other globals, made local
};

/// The candidates that are safe to link privately (rules above, without the link check), and why
/// each other candidate was refused (member -> reason).
std::vector<CompatMember> select_compat_members(const std::map<std::string, ArchiveMember>& members,
                                                const std::set<std::string>& newer,
                                                std::map<std::string, std::string>* refused = nullptr);

/// Builds (or finds in the cache) the archive for the host compiler; nullopt when the compiler has
/// no static libstdc++ or nothing is safe to link. Needs nm, objcopy and ar (binutils: a pinned
/// toolchain's own, else PATH's).
/// With a `memo_file`, the answer is remembered by the (mtime, size) of the compiler and of its
/// libstdc++.a and libstdc++.so.6, so a no-op build neither runs the compiler nor hashes them.
/// Memo format (text): "kbuild-stdcxx-compat 1", then "<mtime_ns> <size> <path>" for the compiler,
/// libstdc++.a and libstdc++.so.6, then the archive's path ("-" for none).
Result<std::optional<std::filesystem::path>> prepare_stdcxx_compat(util::ProcessLauncher& launcher,
                                                                   util::FileSystem& fs, const util::CacheLayout& cache,
                                                                   const HostCompiler& host,
                                                                   const std::filesystem::path& memo_file = {});

}  // namespace kbuild::toolchain
