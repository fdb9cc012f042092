// kbuild toolchains lock|fetch|verify [KERNEL_DIR]: pin, pre-fetch and audit the toolchains of the matrix.

#include <fmt/core.h>

#include "kbuild/cli/command.hpp"
#include "kbuild/usecase/toolchains.hpp"

namespace kbuild::cli {

namespace {

struct ToolchainsOptions {
  std::string kernel_dir = ".";
  std::string python;
  bool update = false;
  bool locked = false;
  std::vector<std::string> cuda_toolkits;
  std::vector<std::string> allowed_origins;
};

Result<ExitCode> run_lock(const ToolchainsOptions& options, Services& services) {
  usecase::ToolchainsLockRequest request;
  request.kernel_dir = absolute_dir(options.kernel_dir);
  KB_TRY_ASSIGN(request.python, python_setting(options.python, services));
  request.update = options.update;
  exec::TerminalReporter reporter({});
  auto use_case_services = services.with(reporter);
  KB_TRY_ASSIGN(auto outcome, usecase::lock_toolchains(request, use_case_services));
  if (outcome.up_to_date) {
    fmt::print("{} is up to date\n", outcome.lock_path.string());
    return ExitCode::ok;
  }
  for (const auto& [name, pin] : outcome.pins) fmt::print("  {:12} {}\n", name, pin);
  fmt::print("wrote {}\n", outcome.lock_path.string());
  return ExitCode::ok;
}

Result<ExitCode> run_fetch(const ToolchainsOptions& options, Services& services) {
  usecase::ToolchainsFetchRequest request;
  request.kernel_dir = absolute_dir(options.kernel_dir);
  KB_TRY_ASSIGN(request.python, python_setting(options.python, services));
  request.locked = options.locked;
  request.cuda_toolkits = options.cuda_toolkits;
  request.allowed_origins = options.allowed_origins;
  request.download_progress = is_smart_terminal(stdout, services.env);
  exec::TerminalReporter reporter({});
  auto use_case_services = services.with(reporter);
  KB_TRY_ASSIGN(auto outcome, usecase::fetch_toolchains(request, use_case_services));
  for (const auto& tc : outcome.toolchains)
    fmt::print("  torch {:14} cuda {:10} ({})\n", tc.torch.version_string, tc.cuda ? tc.cuda->version.str() : "-",
               tc.cuda ? tc.cuda->origin : "cpu");
  if (outcome.tvm_ffi) fmt::print("  tvm-ffi {} ({})\n", outcome.tvm_ffi->version, outcome.tvm_ffi->origin);
  for (const auto& library : outcome.headers)
    fmt::print("  {} {} ({})\n", library.dependency, library.version, library.origin);
  fmt::print("toolchains of {} variants are in {}\n", outcome.variants, outcome.cache.string());
  return ExitCode::ok;
}

const char* proof_words(toolchain::PinProof proof) {
  switch (proof) {
    case toolchain::PinProof::debian_signed:
      return "listed with these sha256 by Debian's signed indices";
    case toolchain::PinProof::pypi_listed:
      return "listed with these sha256 by PyPI";
    case toolchain::PinProof::allowed:
      return "from an origin you allow (not checked)";
    case toolchain::PinProof::first_fetch:
      return "a source archive, pinned by its first download (nothing upstream signs)";
  }
  return "";
}

Result<ExitCode> run_verify(const ToolchainsOptions& options, Services& services) {
  usecase::ToolchainsVerifyRequest request;
  request.kernel_dir = absolute_dir(options.kernel_dir);
  request.allowed_origins = options.allowed_origins;
  exec::TerminalReporter reporter({});
  auto use_case_services = services.with(reporter);
  KB_TRY_ASSIGN(auto outcome, usecase::verify_toolchains(request, use_case_services));
  for (const auto& verdict : outcome.verdicts) {
    const std::string pins = std::to_string(verdict.pins) + (verdict.pins == 1 ? " pin" : " pins");
    if (verdict.problem)
      fmt::print(stderr, "kbuild: error: {} ({}): {}\n  hint: {}\n", verdict.entry, pins, verdict.problem->message,
                 verdict.problem->hint);
    else
      fmt::print("  {:12} {:>8}: {}\n", verdict.entry, pins, proof_words(verdict.proof));
  }
  if (!outcome.all_proven()) return ExitCode::toolchain;
  fmt::print("every pin of {} is what upstream published\n", outcome.lock_path.string());
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
  fetch->add_option("--allow-toolchain-origin", options->allowed_origins,
                    "Trust toolchain pins from this URL prefix as they are, without checking them against Debian's "
                    "signed indices or PyPI (repeatable; also toolchain-origins in the user config)");
  fetch->add_option("--cuda-toolkit", options->cuda_toolkits, "A local CUDA toolkit, VERSION=PATH");
  fetch->callback([options, &action] { action = [options](Services& s) { return run_fetch(*options, s); }; });
  CLI::App* verify = group->add_subcommand(
      "verify",
      "Check every pin of kbuild.lock against Debian's signed indices and PyPI, without downloading toolchains");
  verify->add_option("kernel_dir", options->kernel_dir, "Kernel directory")->capture_default_str();
  verify->add_option("--allow-toolchain-origin", options->allowed_origins,
                     "Trust pins from this URL prefix as they are (repeatable; also toolchain-origins)");
  verify->callback([options, &action] { action = [options](Services& s) { return run_verify(*options, s); }; });
}

}  // namespace kbuild::cli
