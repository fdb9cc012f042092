#pragma once
// The Pythons `kbuild test` runs a kernel's tests with (usecase/test_variants.hpp): the --python
// interpreter when its Torch serves a variant, otherwise a virtual environment kept in
// $KBUILD_CACHE/test-envs/, created once per Torch build, Python version and test requirements.
//
// Which Torch build serves a variant: its Torch major.minor, and for a CUDA variant a Torch built for
// its CUDA major.minor (a CPU variant loads with any build of its version). A new environment gets
// the Torch of the variant's *compute* from the Torch index (user_config.hpp, choose_torch_index):
//   - a URL with "{compute}" (default https://download.pytorch.org/whl/{compute}): the CPU build for
//     CPU variants (a few hundred MB instead of the CUDA build's gigabytes) and the build for the
//     variant's CUDA (cu130, ...), which PyPI's default build is for one CUDA version only. pip installs
//     torch from that index alone (`--index-url`), then kernels, pytest and tests/requirements.txt from
//     pip's usual indexes. The version is the one kbuild.lock pins for the variant's Torch (else the
//     newest patch release of its major.minor);
//   - "pypi": PyPI's own build (the wheel kbuild.lock pins, from kbuild's downloads when it fits the
//     Python), whatever its CUDA version; a CUDA variant it does not serve is then not tested.
// A build the index does not have (pip: "No matching distribution") is not an error: the variant is
// "not tested" with that reason. Any other pip failure (an index that cannot be reached) is exit 3.
// An environment is assembled under a temporary name and renamed into place with a .complete marker,
// so an interrupted creation is never used.

#include <filesystem>
#include <optional>
#include <string>

#include "kbuild/config/variant.hpp"
#include "kbuild/usecase/services.hpp"
#include "kbuild/util/result.hpp"
#include "kbuild/util/version.hpp"

namespace kbuild::usecase {

/// What a Python's Torch is (probe_python).
struct PythonTorch {
  std::filesystem::path python;
  std::string torch;                   ///< "2.15.0+cu130"; empty: no Torch
  std::string torch_minor;             ///< "2.15"
  std::optional<std::string> cuda;     ///< "13.0"; none for a CPU build
  std::string python_version;          ///< "3.11"
  std::optional<std::string> tvm_ffi;  ///< apache-tvm-ffi's version, when installed
  bool gpu = false;                    ///< torch.cuda.is_available()
};

/// The release part of a Python package version: "2.9.0.dev20250801+cu130" and "2.6.0a0+ecf3bae" (NGC)
/// are 2.9.0 and 2.6.0, "0.1.15.post2" is 0.1.15.
std::optional<util::Version> release_version(const std::string& text);

/// The Torch of `python` (nullopt: it does not run, or has no Torch).
std::optional<PythonTorch> probe_python(util::ProcessLauncher& launcher, const std::filesystem::path& python);

/// The Torch build a variant's tests need.
struct TorchWanted {
  std::string minor;    ///< "2.15"; empty: any (a tvm-ffi variant: the newest Torch when one is made)
  std::string compute;  ///< "cpu" or "cu130": the build of that index
};

/// What `variant` needs, with Torch `minor` (the variant's own, --torch, or the base Python's).
TorchWanted torch_wanted(const config::Variant& variant, const std::string& minor);

/// Whether `env`'s Torch is that build (a CPU build is wanted: any build of the version serves).
bool serves(const PythonTorch& env, const TorchWanted& wanted);

struct TestEnvRequest {
  std::filesystem::path kernel_dir;  ///< its kbuild.lock pins the Torch versions, tests/requirements.txt
  std::string torch_index;           ///< choose_torch_index's value
  bool create_env = false;           ///< create a missing environment without asking
  bool pip_progress = false;         ///< let pip draw its output (a terminal)
};

/// An environment, or why the index has no such Torch (`unavailable`, a sentence).
struct TestEnvironment {
  std::optional<PythonTorch> env;
  std::string unavailable;
};

/// The environment for `wanted`, created when missing (asks services.reporter.confirm unless
/// create_env). Errors: refused, pip or venv failures other than a missing build, interruption.
Result<TestEnvironment> torch_environment(const TestEnvRequest& request, Services& services, const PythonTorch& base,
                                          const TorchWanted& wanted);

}  // namespace kbuild::usecase
