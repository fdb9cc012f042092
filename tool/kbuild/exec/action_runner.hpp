#pragma once
// Performs a job's in-process work (plan::JobAction): the executor calls it for generate and
// install jobs. The build use case implements it (usecase/actions.hpp); tests record the calls.

#include "kbuild/plan/graph.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::exec {

class ActionRunner {
 public:
  virtual ~ActionRunner() = default;
  /// Performs job.action; every output must be written atomically (all or nothing).
  virtual Result<void> run(const plan::Job& job) = 0;
};

}  // namespace kbuild::exec
