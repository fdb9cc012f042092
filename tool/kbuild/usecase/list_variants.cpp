#include "kbuild/usecase/list_variants.hpp"

#include "kbuild/toolchain/probe.hpp"
#include "kbuild/usecase/kernel_source.hpp"
#include "kbuild/usecase/local_variants.hpp"
#include "kbuild/usecase/matrix_session.hpp"
#include "kbuild/util/cache_layout.hpp"

namespace kbuild::usecase {

namespace {

Result<void> list_matrix(const ListVariantsRequest& request, const config::KernelConfig& config, Services& services,
                         ListVariantsOutcome& outcome) {
  KB_TRY_ASSIGN(MatrixSession session, open_matrix(services.fs, config, request.kernel_dir, request.filter, false,
                                                   diagnostics_to(services.reporter), true));
  KB_TRY_ASSIGN(auto user_cuda, parse_cuda_toolkits(request.cuda_toolkits));
  auto system = toolchain::probe_cuda(services.launcher, services.fs, services.env.get("CUDA_HOME"));
  std::optional<toolchain::CudaToolkit> system_cuda = system ? *system : std::nullopt;
  auto cache = util::CacheLayout::from_environment(services.env);
  outcome.origin = session.spec.origin;
  outcome.left_out = session.notes;
  for (const auto& entry : session.selected) {
    if (auto reason = plan::unbuildable_reason(config, entry.variant.backend)) {
      outcome.left_out.push_back(entry.variant.name() + ": " + *reason);
      continue;
    }
    bool present = toolchains_present(entry, session.lock, cache, system_cuda, user_cuda, services.fs);
    outcome.variants.push_back({entry.variant, entry.torch, entry.cuda, present});
  }
  return {};
}

Result<void> list_local(const ListVariantsRequest& request, const config::KernelConfig& config, Services& services,
                        ListVariantsOutcome& outcome) {
  toolchain::ProbeOptions probe;
  probe.python = *request.python;
  probe.cuda_home = services.env.get("CUDA_HOME");
  probe.cxx = services.env.get_or("CXX", "g++");
  probe.need_torch = config.framework != config::Framework::tvm_ffi;
  KB_TRY_ASSIGN(toolchain::Toolchain local, toolchain::probe_local_toolchain(services.launcher, services.fs, probe));
  auto variants =
      select_local_variants(config, local, {}, [&](const std::string& why) { outcome.left_out.push_back(why); });
  outcome.origin = "local (" + *request.python + ", torch " + local.torch.version_string + ")";
  // Nothing buildable here is an empty list with the reasons, exit 0 (docs/cli.md: --json is always
  // JSON): the matrix's case too. The reason of the refusal joins the others.
  if (!variants && variants.error().code == ExitCode::toolchain) {
    const auto& error = variants.error();
    outcome.left_out.push_back(error.message + (error.hint.empty() ? "" : " (" + error.hint + ")"));
    return {};
  }
  if (!variants) return fail(variants.error());
  for (const auto& build : *variants) {
    if (auto reason = plan::unbuildable_reason(config, build.variant.backend)) {
      outcome.left_out.push_back(build.variant.name() + ": " + *reason);
      continue;
    }
    std::optional<util::Version> cuda;
    if (build.variant.backend == config::Backend::cuda && local.cuda) cuda = local.cuda->version;
    outcome.variants.push_back({build.variant, local.torch.version, cuda, true});
  }
  return {};
}

}  // namespace

Result<ListVariantsOutcome> list_variants(const ListVariantsRequest& request, Services& services) {
  const auto& filter = request.filter;
  if (request.python &&
      (!filter.variants.empty() || !filter.torch.empty() || !filter.cuda.empty() || !request.cuda_toolkits.empty()))
    return fail("--python lists a local build; --variant, --torch, --cuda and --cuda-toolkit filter the matrix",
                "use one or the other", ExitCode::usage);
  KB_TRY_ASSIGN(config::KernelConfig config,
                load_kernel(services.fs, request.kernel_dir, diagnostics_to(services.reporter)));
  ListVariantsOutcome outcome;
  outcome.kernel = config.general.name;
  KB_TRY(request.python ? list_local(request, config, services, outcome)
                        : list_matrix(request, config, services, outcome));
  return outcome;
}

}  // namespace kbuild::usecase
