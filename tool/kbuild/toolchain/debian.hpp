#pragma once
// Debian's package indices and version order, for pinning the host toolchain (host_toolchain.hpp).
// Pure: the indices are given as text; downloading them is the caller's business.
//
// An index ("Packages", from dists/<suite>/main/binary-amd64/Packages.xz) is a sequence of stanzas
// separated by blank lines, each a list of "Field: value" lines (continuation lines start with a space).
// kbuild reads Package, Version, Architecture, Filename (relative to the archive's root), Size and SHA256.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/toolchain/lock.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::toolchain {

struct DebianPackage {
  std::string name;
  std::string version;
  std::string architecture;
  std::string filename;  ///< "pool/main/g/gcc-12/g++-12_12.2.0-14+deb12u1_amd64.deb"
  std::string sha256;
  std::uint64_t size = 0;
};

/// The stanzas of a Packages index that have all of the fields above (others are skipped).
std::vector<DebianPackage> parse_packages_index(std::string_view text);

/// dpkg's order of versions ([epoch:]upstream[-revision], '~' before everything, even the end):
/// negative when a < b, 0 when equal, positive when a > b.
int compare_debian_versions(std::string_view a, std::string_view b);

/// One suite of an archive: its packages are at <archive>/<Filename>.
struct DebianSuite {
  std::string archive;  ///< "https://deb.debian.org/debian"
  std::string suite;    ///< "bookworm", "bookworm-updates", "bookworm-security"
  /// <archive>/dists/<suite>/main/binary-amd64/Packages.xz
  std::string index_url() const;
};

/// What the pinned host toolchain is made of: a compiler and binutils from one Debian release,
/// the C library and kernel headers that form its sysroot, and the libraries its programs load.
struct HostToolchainRecipe {
  std::string name;     ///< the kbuild.lock entry, "gcc-12.2"
  std::string version;  ///< GCC's full version, "12.2.0"
  std::string triple;   ///< "x86_64-linux-gnu"
  std::string driver;   ///< below the root: "usr/bin/x86_64-linux-gnu-g++-12"
  std::vector<DebianSuite> suites;
  std::vector<std::string> packages;
  /// Packages whose shared libraries the compiler's and binutils' own programs load (cc1plus: isl,
  /// mpc, mpfr, gmp, zstd, zlib; as/ld: libbfd, libopcodes, libctf, libsframe, jansson). They are
  /// given to those programs through LD_LIBRARY_PATH; the sysroot's libc and libstdc++ never are.
  std::vector<std::string> tool_library_packages;
};

/// GCC 12.2 and binutils 2.40 of Debian 12 (bookworm): the compiler of kbuild's reference machine.
const HostToolchainRecipe& bookworm_gcc12_recipe();

/// The newest version of each of `recipe.packages` (architecture amd64 or all) across `indices`
/// (one per suite, in recipe.suites order), as kbuild.lock artifacts with the URL of the file.
/// An error lists every package no index has.
Result<std::vector<LockedArtifact>> resolve_recipe(const HostToolchainRecipe& recipe,
                                                   const std::vector<std::vector<DebianPackage>>& indices);

}  // namespace kbuild::toolchain
