#include "kbuild/usecase/actions.hpp"

#include "kbuild/layout/install.hpp"

namespace kbuild::usecase {

Result<void> LayoutActions::run(const plan::Job& job) {
  if (const auto* write = std::get_if<plan::WriteFiles>(&job.action)) {
    for (const auto& [path, content] : write->files) KB_TRY(m_fs.write_file_atomic(path, content));
    return {};
  }
  if (const auto* install = std::get_if<plan::InstallVariant>(&job.action))
    return layout::install_variant(m_fs, *install->spec);
  return fail("internal error: job " + job.id + " has no in-process action");
}

}  // namespace kbuild::usecase
