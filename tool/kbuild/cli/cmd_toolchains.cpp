// kbuild toolchains lock|fetch [KERNEL_DIR]: pin and pre-fetch the toolchains of the matrix.

#include <fmt/core.h>

#include <deque>

#include "kbuild/cli/command.hpp"
#include "kbuild/cli/hub_session.hpp"
#include "kbuild/toolchain/probe.hpp"
#include "kbuild/usecase/kernel_source.hpp"
#include "kbuild/usecase/matrix_session.hpp"

namespace kbuild::cli {

namespace {

struct ToolchainsOptions {
  std::string kernel_dir = ".";
  std::string python;
  bool update = false;
  bool locked = false;
  std::vector<std::string> cuda_toolkits;
};

Result<ExitCode> run_lock(const ToolchainsOptions& options, Services& services) {
  auto kernel_dir = absolute_dir(options.kernel_dir);
  KB_TRY_ASSIGN(config::KernelConfig config, usecase::load_kernel(services.fs, kernel_dir, print_diagnostics));
  KB_TRY_ASSIGN(usecase::MatrixSession session,
                usecase::open_matrix(services.fs, config, kernel_dir, {}, false, print_diagnostics));
  toolchain::LockFile previous = session.lock;
  if (options.update) session.lock = usecase::pins_kept_by_update(session.lock);
  toolchain::ProvisionOptions provision;
  provision.cache = util::CacheLayout::from_environment(services.env);
  KB_TRY_ASSIGN(provision.python, python_setting(options.python, services));
  hub::CurlTransport transport;
  provision.download_url = url_downloader(transport);
  provision.cutlass_mirror_url = toolchain::cutlass_mirror_url(services.env);
  toolchain::Provisioner provisioner(services.launcher, services.fs, provision, session.lock,
                                     [](const std::string& line) { fmt::print("kbuild: {}\n", line); });
  KB_TRY(usecase::pin_matrix_toolchains(session.all, usecase::provided_header_dependencies(config, session.all),
                                        provisioner, session.lock));
  if (session.lock_existed && session.lock == previous) {
    fmt::print("{} is up to date\n", session.lock_path.string());
    return ExitCode::ok;
  }
  KB_TRY(services.fs.write_file_atomic(session.lock_path, session.lock.serialize()));
  for (const auto& [name, artifacts] : session.lock.toolchains)
    fmt::print("  {:12} {}\n", name, artifacts.front().package + " " + artifacts.front().version);
  fmt::print("wrote {}\n", session.lock_path.string());
  return ExitCode::ok;
}

Result<ExitCode> run_fetch(const ToolchainsOptions& options, Services& services) {
  auto kernel_dir = absolute_dir(options.kernel_dir);
  KB_TRY_ASSIGN(config::KernelConfig config, usecase::load_kernel(services.fs, kernel_dir, print_diagnostics));
  KB_TRY_ASSIGN(usecase::MatrixSession session,
                usecase::open_matrix(services.fs, config, kernel_dir, {}, options.locked, print_diagnostics));
  toolchain::ProbeOptions probe;
  KB_TRY_ASSIGN(probe.python, python_setting(options.python, services));
  probe.need_torch = false;
  probe.cuda_home = services.env.get("CUDA_HOME");
  KB_TRY_ASSIGN(toolchain::Toolchain local, toolchain::probe_local_toolchain(services.launcher, services.fs, probe));
  KB_TRY_ASSIGN(auto user_cuda, usecase::parse_cuda_toolkits(options.cuda_toolkits));
  toolchain::ProvisionOptions provision;
  provision.cache = util::CacheLayout::from_environment(services.env);
  provision.python = probe.python;
  provision.locked = options.locked;
  provision.progress = is_smart_terminal(stdout, services.env);
  provision.user_cuda = user_cuda;
  provision.host_cxx = local.cxx.cxx.string();
  hub::CurlTransport transport;
  provision.download_url = url_downloader(transport);
  provision.cutlass_mirror_url = toolchain::cutlass_mirror_url(services.env);
  toolchain::Provisioner provisioner(services.launcher, services.fs, provision, session.lock,
                                     [](const std::string& line) { fmt::print("kbuild: {}\n", line); });
  std::deque<toolchain::Toolchain> storage;
  auto builds = usecase::provision_variants(session.all, provisioner, local, storage);
  std::optional<toolchain::TvmFfiInstall> tvm_ffi;
  if (builds && usecase::needs_tvm_ffi(session.all)) {
    auto provided = provisioner.tvm_ffi(toolchain::k_tvm_ffi_series);
    if (!provided)
      builds = fail(provided.error());
    else
      tvm_ffi = *provided;
  }
  std::vector<toolchain::HeaderLibrary> headers;
  for (const auto& dependency : usecase::provided_header_dependencies(config, session.all)) {
    if (!builds) break;
    auto provided = provisioner.header_library(dependency);
    if (!provided)
      builds = fail(provided.error());
    else
      headers.push_back(*provided);
  }
  if (provisioner.lock_changed()) KB_TRY(services.fs.write_file_atomic(session.lock_path, session.lock.serialize()));
  if (!builds) return fail(builds.error());
  for (const auto& tc : storage)
    fmt::print("  torch {:14} cuda {:10} ({})\n", tc.torch.version_string, tc.cuda ? tc.cuda->version.str() : "-",
               tc.cuda ? tc.cuda->origin : "cpu");
  if (tvm_ffi) fmt::print("  tvm-ffi {} ({})\n", tvm_ffi->version, tvm_ffi->origin);
  for (const auto& library : headers) fmt::print("  {} {} ({})\n", library.dependency, library.version, library.origin);
  fmt::print("toolchains of {} variants are in {}\n", builds->size(), provision.cache.toolchains().string());
  return ExitCode::ok;
}

}  // namespace

void register_toolchains(CLI::App& app, CommandAction& action) {
  CLI::App* group = app.add_subcommand("toolchains", "Pin (kbuild.lock) and fetch the toolchains of the matrix");
  group->require_subcommand(1);
  auto options = std::make_shared<ToolchainsOptions>();
  CLI::App* lock = group->add_subcommand(
      "lock", "Pin every Torch, CUDA, tvm-ffi and CUTLASS toolchain of the matrix in kbuild.lock");
  lock->add_option("kernel_dir", options->kernel_dir, "Kernel directory")->capture_default_str();
  lock->add_option("--python", options->python, std::string("Interpreter whose pip resolves") + k_python_help_suffix);
  lock->add_flag("--update", options->update,
                 "Re-resolve the pins to the newest patch releases (CUTLASS source-archive pins are kept)");
  lock->callback([options, &action] { action = [options](Services& s) { return run_lock(*options, s); }; });
  CLI::App* fetch = group->add_subcommand("fetch", "Download, verify and unpack every toolchain of the matrix");
  fetch->add_option("kernel_dir", options->kernel_dir, "Kernel directory")->capture_default_str();
  fetch->add_option("--python", options->python,
                    std::string("Interpreter whose pip downloads and whose headers are used") + k_python_help_suffix);
  fetch->add_flag("--locked", options->locked, "Fail instead of adding pins to kbuild.lock");
  fetch->add_option("--cuda-toolkit", options->cuda_toolkits, "A local CUDA toolkit, VERSION=PATH");
  fetch->callback([options, &action] { action = [options](Services& s) { return run_fetch(*options, s); }; });
}

}  // namespace kbuild::cli
