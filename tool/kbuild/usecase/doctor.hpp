#pragma once
// `kbuild doctor`: what kbuild finds on this machine, each finding with what to do about it: the
// interpreter (and where the choice came from) with its Torch, the CUDA toolkit, the host compiler,
// the GPUs, git, the user config file, and the cache with its size. It changes nothing.

#include <string>
#include <vector>

#include "kbuild/util/fs.hpp"
#include "kbuild/util/process.hpp"
#include "kbuild/util/result.hpp"
#include "kbuild/util/system.hpp"

namespace kbuild::usecase {

struct DoctorRequest {
  std::string python;  ///< --python (empty: KBUILD_PYTHON, the user config, python3)
};

struct DoctorServices {
  util::FileSystem& fs;
  util::ProcessLauncher& launcher;
  const util::Environment& env;
};

struct Finding {
  enum class Status { ok, warning, missing };
  std::string what;  ///< "python", "torch", "nvcc", "host compiler", "gpu", "git", "user config", "cache"
  Status status = Status::ok;
  std::string detail;  ///< what was found, or why not
  std::string hint;    ///< what to do (empty when nothing is)
};

std::string to_string(Finding::Status status);

/// The findings, in a fixed order. Error only for a user config file that cannot be read.
Result<std::vector<Finding>> doctor(const DoctorRequest& request, DoctorServices& services);

}  // namespace kbuild::usecase
