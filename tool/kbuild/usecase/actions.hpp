#pragma once
// The in-process jobs of a build (plan::WriteFiles, plan::InstallVariant), performed with layout/.

#include "kbuild/exec/action_runner.hpp"
#include "kbuild/util/fs.hpp"

namespace kbuild::usecase {

class LayoutActions final : public exec::ActionRunner {
 public:
  explicit LayoutActions(util::FileSystem& fs) : m_fs(fs) {}
  Result<void> run(const plan::Job& job) override;

 private:
  util::FileSystem& m_fs;
};

}  // namespace kbuild::usecase
