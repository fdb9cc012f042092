#pragma once
// The build's generated sources (registration.h, glibc_compat.cpp) and the headers a build carries
// into its own tree (a Debian-style Python's multiarch pyconfig.h): one generate job, which every
// compile that includes one of them depends on.

#include "kbuild/plan/graph.hpp"
#include "kbuild/plan/planner.hpp"

namespace kbuild::plan {

/// The generate job of a build with compiled variants; its key covers every file's path (relative
/// to the work directory) and text.
Result<Job> generated_files_job(const PlanRequest& request);

}  // namespace kbuild::plan
