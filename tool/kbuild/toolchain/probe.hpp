#pragma once
// Discovering the local toolchain: Torch from a Python interpreter, CUDA from CUDA_HOME or nvcc on
// PATH, the host compiler from CXX or g++. Probing costs tens of milliseconds (it runs python, nvcc
// and g++), so results are memoised in a small JSON file keyed by the stat of every file consulted;
// a no-op build then starts without running any of them.

#include <filesystem>
#include <optional>
#include <string>

#include "kbuild/toolchain/toolchain.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/process.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::toolchain {

struct ProbeOptions {
  std::string python = "python3";        ///< interpreter whose Torch is used
  std::optional<std::string> cuda_home;  ///< CUDA_HOME; else nvcc on PATH
  std::string cxx = "g++";               ///< CXX
  bool need_cuda = false;                ///< fail when no CUDA toolkit is found
  /// Matrix builds take Torch from wheels: only the interpreter's headers (and pip) are needed.
  bool need_torch = true;
  /// Matrix builds use the pinned host toolchain: the system's compiler is not probed (nor needed).
  bool need_cxx = true;
  /// Where probe results are memoised (e.g. .kbuild/toolchain.json); empty disables it.
  std::filesystem::path memo_file;
};

/// The Python program probe_python runs with `-c` (one JSON line: version, include, torch, multiarch).
const char* python_probe_script();

/// Finds the interpreter's include directory (Python.h) and version; `torch_root` gets the
/// directory of its torch package, if installed.
Result<PythonHeaders> probe_python(util::ProcessLauncher& launcher, const util::FileSystem& fs,
                                   const std::string& python, std::optional<std::filesystem::path>& torch_root);
/// Probes Torch through `python` (without importing it: finds the package and reads version.py).
Result<TorchInstall> probe_torch_from_python(util::ProcessLauncher& launcher, const util::FileSystem& fs,
                                             const std::string& python, PythonHeaders& headers_out);
/// Reads a Torch package directory: torch/version.py and the C++ ABI of libc10.so.
Result<TorchInstall> read_torch_install(const util::FileSystem& fs, const std::filesystem::path& torch_root);
/// Finds and identifies a CUDA toolkit; nullopt when none is present.
Result<std::optional<CudaToolkit>> probe_cuda(util::ProcessLauncher& launcher, const util::FileSystem& fs,
                                              const std::optional<std::string>& cuda_home);
/// Identifies nvcc at `root`/bin/nvcc.
Result<CudaToolkit> identify_cuda(util::ProcessLauncher& launcher, const util::FileSystem& fs,
                                  const std::filesystem::path& root, std::string origin);
Result<HostCompiler> probe_host_compiler(util::ProcessLauncher& launcher, const std::string& cxx);

/// The local toolchain (memoised when options.memo_file is set).
Result<Toolchain> probe_local_toolchain(util::ProcessLauncher& launcher, util::FileSystem& fs,
                                        const ProbeOptions& options);

/// Parses "Cuda compilation tools, release 13.0, V13.0.88" out of `nvcc --version`.
std::optional<util::Version> parse_nvcc_version(const std::string& output);
/// Parses torch/version.py: __version__, cuda, git_version.
bool parse_torch_version_py(const std::string& text, TorchInstall& out);

}  // namespace kbuild::toolchain
