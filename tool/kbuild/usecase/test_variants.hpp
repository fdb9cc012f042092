#pragma once
// `kbuild test`: the kernel's own tests (KERNEL_DIR/tests, pytest) run against each built variant
// with the Torch that variant was built for, so the matrix is shown to load and work, not only to
// link.
//
// The Torch for a variant: the version it was built for (a torch-stable-abi variant: the oldest
// version it serves, its stable-ABI version), or --torch for all of them; for a CUDA variant, a Torch
// built for its CUDA. The Python: --python's when its Torch is that build, else a test environment
// (usecase/test_envs.hpp: made once, Torch from the Torch index for the variant's compute).
//
// Each run gets, in its environment, what kernel-builder's testshell sets, so that tests written for
// it run unchanged: LOCAL_KERNELS="<general.hub.repo-id>=<the variant's directory>" (get_kernel of
// the kernel's own repo id loads the variant under test, nothing from the network) and PYTHONPATH
// with the variant's directory and a directory where `import <python_name>` finds the variant; and
// HF_HUB_OFFLINE=1 unless `online`. Also KBUILD_TEST_VARIANT (the variant's name),
// KBUILD_TEST_VARIANT_DIR (its directory) and KBUILD_TEST_BACKEND (cpu, cuda, ...). A CUDA variant is
// tested only on a machine with a GPU; others are reported "not tested" with the reason, never
// "passed". With `best_effort` (CI runners without a GPU), a CUDA variant there is instead imported
// with its Torch and every op of its namespace checked to have a CUDA kernel
// (templates/checks/load_variant.py): "loaded", its tests "not run (no GPU)".
//
// Before anything runs, every selected variant must be current (usecase/freshness.hpp): a variant
// older than its sources is refused (exit code 1) unless `allow_stale`.

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "kbuild/usecase/services.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/process.hpp"
#include "kbuild/util/result.hpp"
#include "kbuild/util/system.hpp"

namespace kbuild::usecase {

struct TestRequest {
  std::filesystem::path kernel_dir;   ///< absolute
  std::vector<std::string> variants;  ///< --variant; empty: every variant in build/
  std::string python = "python3";
  /// --torch X.Y: test every variant with that Torch version (a variant it cannot load is not tested),
  /// e.g. a stable-ABI variant with a newer Torch than its minimum. Empty: each variant's own Torch.
  std::string torch;
  bool pip_progress = false;  ///< let pip draw its output (a terminal)
  bool allow_stale = false;   ///< test variants older than their sources too (usecase/freshness.hpp)
  bool online = false;        ///< leave HF_HUB_OFFLINE unset in the test runs
  bool create_env = false;    ///< create missing test environments without asking
  /// Where new test environments get Torch (config::choose_torch_index): a URL template or "pypi".
  std::string torch_index = "https://download.pytorch.org/whl/{compute}";
  /// Test what this machine can: a CUDA variant without a GPU is loaded and its ops checked
  /// (status loaded); callers then count not_tested and loaded as no failure.
  bool best_effort = false;
  /// Arguments after `--`, given to pytest (e.g. -k relu, -x, tests/test_x.py). "tests" is added
  /// unless one of them names a file or directory of the kernel.
  std::vector<std::string> pytest_args;
  /// Let pytest draw its own progress on the terminal (its output is then not in `output`).
  bool pytest_progress = false;
};

/// The pytest command line of one variant's run, after `python -m pytest`; `exists` tests a path
/// relative to the kernel directory.
std::vector<std::string> pytest_arguments(const TestRequest& request, const std::string& junit_report,
                                          const std::function<bool(const std::string&)>& exists);

struct VariantTestResult {
  /// loaded: imported and its ops checked, the tests not run (best_effort, no GPU).
  enum class Status { passed, failed, not_tested, loaded };
  std::string variant;
  Status status = Status::not_tested;
  std::string reason;  ///< not_tested, loaded and failed: why
  std::string torch;   ///< the Torch version the tests ran with
  std::filesystem::path python;
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  std::string output;  ///< pytest's output (failed runs)
  double seconds = 0;
};

std::string to_string(VariantTestResult::Status status);

/// JUnit XML counts of a pytest run: tests, failures, errors, skipped (summed over test suites).
struct TestCounts {
  int tests = 0, failures = 0, errors = 0, skipped = 0;
};
TestCounts parse_junit_counts(const std::string& xml);

/// Runs the tests of every selected variant (error only for a bad request: no build/, no tests/,
/// an unknown variant; a failing variant is a result).
/// One result per variant, in build/ order.
using TestOutcome = std::vector<VariantTestResult>;

/// A missing test environment (gigabytes of downloads) is created with `create_env`, or when
/// services.reporter.confirm() says yes; otherwise refused with a hint to pass --create-env.
Result<TestOutcome> test_variants(const TestRequest& request, Services& services);

}  // namespace kbuild::usecase
