#include "kbuild/usecase/publish.hpp"

#include "kbuild/usecase/freshness.hpp"
#include "kbuild/usecase/hub_access.hpp"
#include "kbuild/usecase/kernel_source.hpp"
#include "kbuild/usecase/matrix_session.hpp"
#include "kbuild/util/git.hpp"

namespace kbuild::usecase {

Result<PublishOutcome> publish(const PublishRequest& request, Services& services) {
  KB_TRY_ASSIGN(config::KernelConfig config,
                load_kernel(services.fs, request.kernel_dir, diagnostics_to(services.reporter)));
  HubAccess hub = open_hub(services, request.endpoint);
  hub::PublishOptions options;
  options.kernel_dir = request.kernel_dir;
  options.tag = request.tag;
  options.repo_id = request.repo_id;
  options.private_repo = request.private_repo;
  options.create_pr = request.create_pr;
  options.dry_run = request.dry_run;
  options.force = request.force;
  options.has_token = hub.token.has_value();
  options.sources = request.sources;
  ReleaseGate gate;
  gate.allow_stale = request.allow_stale;
  gate.allow_partial_archs = request.allow_partial_archs;
  gate.from = request.sources;
  if (auto git = util::git_state(services.launcher, request.kernel_dir)) gate.commit = git->commit;
  gate.allow_other_commit = request.allow_other_commit;
  gate.require_signed = request.require_signed;
  KB_TRY(check_release(services.fs, request.kernel_dir, config, gate,
                       [&](const std::string& line) { services.reporter.warning(line); }));
  // What the release lacks is named when the matrix can be read; --require-all needs it.
  auto matrix = matrix_variant_names(services.fs, config, request.kernel_dir);
  if (!matrix && request.require_all) return fail(matrix.error());
  options.expected_variants = matrix.value_or(std::vector<std::string>{});
  options.require_all = request.require_all;

  hub::PublishHooks hooks;
  hooks.info = [&](const std::string& line) { services.reporter.info("kbuild: " + line); };
  hooks.upload_progress = [&](std::uint64_t done, std::uint64_t total) {
    services.reporter.transfer("uploading", done, total);
  };
  return hub::publish(*hub.client, services.fs, config, options, hooks);
}

}  // namespace kbuild::usecase
