#pragma once
// The pinned host toolchain: GCC, binutils, the C library and kernel headers of one Debian release,
// so that a locked build compiles the binding, the CPU kernels and nvcc's host side with the same
// compiler, headers and libraries on every machine (what Nix's stdenv gives kernel-builder).
//
// Its packages (debian.hpp's recipe) are pinned in kbuild.lock as gcc-<major.minor>, each .deb with
// the sha256 of Debian's index and the URL it was resolved to; `kbuild toolchains lock` resolves the
// newest of each across the release's suites (main, updates, security). They are unpacked (as dpkg
// would below /, deb_archive.hpp) into $KBUILD_CACHE/toolchains/gcc-<ver>-<sha12>/:
//
//   root/                    the sysroot: usr/bin/x86_64-linux-gnu-g++-12, usr/include, usr/lib,
//                            lib/x86_64-linux-gnu (libc), usr/lib/gcc/x86_64-linux-gnu/12/{as,ld}
//                            (links to the pinned binutils, so the driver never runs PATH's)
//   tool-libs/               links to the shared libraries cc1plus, as and ld load (LD_LIBRARY_PATH
//                            of compiler processes only: never libc or libstdc++)
//   .complete                written last, after the toolchain compiled and linked a test library
//
// The driver is run as `root/usr/bin/x86_64-linux-gnu-g++-12 --sysroot=root`: GCC relocates itself
// (its own programs and headers are found relative to the driver), and --sysroot moves the C library,
// the kernel headers and the startup files into the root.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/toolchain/debian.hpp"
#include "kbuild/toolchain/lock.hpp"
#include "kbuild/util/cache_layout.hpp"
#include "kbuild/util/system.hpp"

namespace kbuild::toolchain {

/// toolchains/<recipe name>-<sha12 of every package's sha256>.
std::filesystem::path host_toolchain_dir(const util::CacheLayout& cache, const HostToolchainRecipe& recipe,
                                         const std::vector<LockedArtifact>& packages);

/// Which entries of a package go into the root: all but documentation, manual pages and translations.
std::optional<std::string> host_toolchain_entry(const std::string& name);

/// KBUILD_DEBIAN_MIRROR, or "" when unset or empty.
std::string debian_mirror_url(const util::Environment& env);
/// `url_template` with every "{file}" replaced by `file` ("http://cache/debs/{file}").
std::string expand_file_url(std::string url_template, const std::string& file);

/// "g++-12=12.2.0-14+deb12u1" for each package: the pins a variant records in metadata.json.
std::vector<std::string> package_pins(const std::vector<LockedArtifact>& packages);

}  // namespace kbuild::toolchain
