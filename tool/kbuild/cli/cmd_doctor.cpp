// kbuild doctor [--python PY] [--json]: what kbuild finds on this machine (usecase/doctor.hpp).

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "kbuild/cli/command.hpp"
#include "kbuild/usecase/doctor.hpp"

namespace kbuild::cli {

namespace {

struct DoctorOptions {
  std::string python;
  bool json = false;
};

Result<ExitCode> run_doctor(const DoctorOptions& options, Services& services) {
  LogReporter reporter(false);
  auto doctor_services = services.with(reporter);
  KB_TRY_ASSIGN(auto findings, usecase::doctor({options.python}, doctor_services));
  if (options.json) {
    std::string first_line = version_text().substr(0, version_text().find('\n'));
    nlohmann::ordered_json out = {{"kbuild", first_line}, {"findings", nlohmann::ordered_json::array()}};
    for (const auto& f : findings)
      out["findings"].push_back(
          {{"what", f.what}, {"status", usecase::to_string(f.status)}, {"detail", f.detail}, {"hint", f.hint}});
    print_json_document(out.dump(2));
    return ExitCode::ok;
  }
  fmt::print("{}", version_text());
  for (const auto& f : findings) {
    fmt::print("{:<14} {:<8} {}\n", f.what, usecase::to_string(f.status), f.detail);
    if (!f.hint.empty()) fmt::print("{:<14} {:<8} hint: {}\n", "", "", f.hint);
  }
  return ExitCode::ok;
}

}  // namespace

void register_doctor(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<DoctorOptions>();
  CLI::App* cmd = app.add_subcommand(
      "doctor", "What kbuild finds on this machine: Python and Torch, nvcc, the host compiler, GPUs, git, the cache");
  cmd->add_option("--python", options->python, std::string("The interpreter to look at") + k_python_help_suffix);
  cmd->add_flag("--json", options->json, "Print the findings as JSON");
  cmd->callback([options, &action] { action = [options](Services& s) { return run_doctor(*options, s); }; });
}

}  // namespace kbuild::cli
