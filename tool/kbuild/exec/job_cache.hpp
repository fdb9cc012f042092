#pragma once
// The executor's view of the compile cache (implemented in cache/): restore a job's outputs instead
// of running it, and remember them afterwards. A cache never fails a build: errors are warnings.

#include <string>
#include <vector>

#include "kbuild/plan/graph.hpp"

namespace kbuild::exec {

class JobCache {
 public:
  virtual ~JobCache() = default;
  /// Tries to produce the job's outputs (and depfile) from the cache; true on a hit. An entry whose
  /// unit named the job's volatile define (plan::Job) only serves the same value of it.
  virtual bool restore(const plan::Job& job) = 0;
  /// Called after the job succeeded with its outputs in place and its depfile's prerequisites;
  /// `names_volatile_define` says whether the unit's output depends on the volatile define's value.
  virtual void store(const plan::Job& job, const std::vector<std::string>& prerequisites,
                     bool names_volatile_define) = 0;
};

}  // namespace kbuild::exec
