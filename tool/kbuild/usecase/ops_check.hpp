#pragma once
// kernel-builder's registration-prefix check ("torch-ops-check"): Torch ops that a kernel's Python
// code registers (torch.library.custom_op, register_fake, ...) must be named through _ops.py's
// add_op_namespace_prefix, or two builds of one kernel in a process collide. The rule is in
// templates/checks/torch_ops_check.py, run with the build's Python (its `ast` module is the parser
// kernel-builder's check uses), before anything is compiled or written.

#include <filesystem>
#include <string>
#include <vector>

#include "kbuild/util/fs.hpp"
#include "kbuild/util/process.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::usecase {

/// The Python files the check reads: every *.py of the kernel directory, relative to it, sorted,
/// leaving out build/, dot-entries and __pycache__ (kernel-builder checks the whole source tree).
Result<std::vector<std::string>> python_sources(const util::FileSystem& fs, const std::filesystem::path& kernel_dir);

/// The check's verdict from its output (pure): nothing when exit_code is 0; else an error (exit 2,
/// nothing written) with kernel-builder's heading and each "path:line:column kind name" line.
Result<void> registration_prefix_verdict(const util::ProcessResult& result, const std::filesystem::path& kernel_dir);

/// Runs the check with `python` over python_sources(kernel_dir), unless `stamp_file` holds the stamp of
/// the same files (paths, sizes, modification times) from a check that passed. Returns the stamp to
/// record in `stamp_file` once the build may write (the check itself writes nothing).
Result<std::string> check_registration_prefix(util::ProcessLauncher& launcher, const util::FileSystem& fs,
                                              const std::string& python, const std::filesystem::path& kernel_dir,
                                              const std::filesystem::path& stamp_file);

}  // namespace kbuild::usecase
