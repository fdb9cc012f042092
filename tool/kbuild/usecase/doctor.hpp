#pragma once
// `kbuild doctor`: what kbuild finds on this machine, each finding with what to do about it: the
// interpreter (and where the choice came from) with its Torch, the CUDA toolkit, the host compiler,
// the GPUs, git, the user config file, and the cache with its size. It changes nothing.

#include <string>
#include <vector>

#include "kbuild/usecase/services.hpp"
#include "kbuild/util/process.hpp"
#include "kbuild/util/result.hpp"
#include "kbuild/util/system.hpp"

namespace kbuild::usecase {

struct DoctorRequest {
  std::string python;  ///< --python (empty: KBUILD_PYTHON, the user config, python3)
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
/// One finding per thing checked, in a fixed order.
using DoctorOutcome = std::vector<Finding>;

Result<DoctorOutcome> doctor(const DoctorRequest& request, Services& services);

}  // namespace kbuild::usecase
