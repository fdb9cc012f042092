#pragma once
// What a variant is compiled with. A Toolchain combines one Torch installation (from the local
// Python environment, or unpacked from a pinned PyPI wheel), an optional CUDA toolkit (the system's
// or one assembled from NVIDIA's wheels), the host C++ compiler and the Python headers (abi3, so any
// CPython >= 3.9 gives the same result). Several toolchains coexist in one build of a matrix.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/util/version.hpp"

namespace kbuild::toolchain {

namespace fs = std::filesystem;

struct TorchInstall {
  util::Version version;       ///< e.g. 2.11.0
  std::string version_string;  ///< torch.__version__, e.g. "2.11.0+cu130"
  std::string git_version;     ///< torch.version.git_version
  fs::path root;               ///< the torch package directory
  bool cxx11_abi = true;
  std::optional<util::Version> cuda;  ///< CUDA version Torch was built with (torch.version.cuda)
  /// ATen parallelises with OpenMP (ATen/Config.h: AT_PARALLEL_OPENMP 1): translation units that
  /// use at::parallel_for must be compiled with -fopenmp, or it silently runs on one thread.
  bool openmp = false;
  std::string origin;  ///< where it came from: "python:<exe>" or "wheel:<file>"

  std::vector<fs::path> include_dirs() const;
  fs::path lib_dir() const { return root / "lib"; }
};

/// A header-only library a kernel's component depends on (build.toml `depends`, e.g. CUTLASS).
struct HeaderLibrary {
  std::string dependency;              ///< the build.toml name, e.g. "cutlass_3_6"
  std::string version;                 ///< e.g. "3.6.0.0"
  fs::path root;                       ///< the unpacked files (mapped to /<dependency> in objects)
  std::vector<fs::path> include_dirs;  ///< given to the component's compiles with -I, in order
  std::string origin;                  ///< "wheel:<file>"
};

/// apache-tvm-ffi for tvm-ffi kernels: its headers (tvm/ffi, dlpack) and libtvm_ffi.so, unpacked from
/// the PyPI wheel pinned in kbuild.lock as tvm-ffi-<major.minor>.
struct TvmFfiInstall {
  std::string version;   ///< the wheel's version, e.g. "0.1.9"
  fs::path root;         ///< the unpacked files (mapped to /tvm-ffi in objects)
  fs::path include_dir;  ///< tvm/ffi/... and dlpack/dlpack.h
  fs::path lib_dir;      ///< libtvm_ffi.so
  std::string origin;    ///< "wheel:<file>"
};

/// The tvm-ffi series kbuild builds against (the variant name's tvm-ffi<MA><MI>; kernel-builder pins
/// 0.1.9). The `kernels` loader takes a tvm-ffi variant only where the installed tvm_ffi has this
/// major.minor.
inline const util::Version k_tvm_ffi_series({0, 1});

struct CudaToolkit {
  util::Version version;  ///< nvcc's release, e.g. 13.0.88
  fs::path root;          ///< contains bin/nvcc
  fs::path nvcc;
  fs::path include_dir;
  fs::path lib_dir;    ///< where libcudart.so is
  std::string origin;  ///< "system", "wheels", "user"
};

struct HostCompiler {
  fs::path cxx = {};
  std::string version = {};  ///< -dumpfullversion
  std::string machine = {};  ///< -dumpmachine
  /// A pinned toolchain (host_toolchain.hpp): its unpacked root, given as --sysroot to every compile
  /// and link so that no header, startup file or library of the system is used; empty: the system's.
  fs::path sysroot = {};
  /// A pinned toolchain: the libraries its own programs (cc1plus, as, ld) load, as LD_LIBRARY_PATH.
  fs::path tool_library_dir = {};
  std::string origin = "system";       ///< "system", or "pinned:gcc-12.2" for a pinned toolchain
  std::vector<std::string> pins = {};  ///< a pinned toolchain's packages: "g++-12=12.2.0-14+deb12u1", ...

  bool pinned() const { return !sysroot.empty(); }
  /// Arguments every compile and link passes to the driver (--sysroot for a pinned toolchain).
  std::vector<std::string> driver_flags() const;
  /// The environment the driver and the programs it runs need (LD_LIBRARY_PATH when pinned).
  std::map<std::string, std::string> environment() const;
  /// A binutils program ("nm", "objcopy", "ar"): the pinned toolchain's, else the name (found on PATH).
  std::string binutil(const std::string& name) const;
};

struct PythonHeaders {
  fs::path include_dir;
  std::string version;  ///< "3.11"
  /// Debian's and Ubuntu's Pythons keep pyconfig.h apart: include_dir/pyconfig.h includes
  /// <x86_64-linux-gnu/python3.12/pyconfig.h>, found under /usr/include, which a pinned host
  /// toolchain's --sysroot does not search. Then multiarch_header is that relative path and
  /// multiarch_pyconfig its text, which a build writes under its own tree (plan::python_multiarch_dir).
  std::string multiarch_header;
  std::string multiarch_pyconfig;
};

struct Toolchain {
  TorchInstall torch;
  std::optional<CudaToolkit> cuda;
  HostCompiler cxx;
  PythonHeaders python;

  /// A digest of everything that influences compiled output but does not appear in command lines
  /// (compiler versions, Torch build); part of every job's staleness key.
  std::string identity() const;
};

/// The C++ standard a Torch version requires (kernel-builder: C++17 below 2.12, C++20 from 2.12).
std::string cxx_standard_for(const util::Version& torch);

}  // namespace kbuild::toolchain
