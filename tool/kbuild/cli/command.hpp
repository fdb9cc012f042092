#pragma once
// Shared pieces of the command-line layer. Each command lives in cmd_<name>.cpp with an options
// struct, a register function (CLI11 wiring) and a run function returning Result<ExitCode>. Only
// app.cpp prints errors and turns them into exit codes.

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kbuild/config/diagnostic.hpp"
#include "kbuild/usecase/services.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/process.hpp"
#include "kbuild/util/result.hpp"
#include "kbuild/util/system.hpp"

namespace kbuild::cli {

/// The real side-effect providers (app.cpp). A command picks its reporter from its options (-q, -v,
/// --json, where progress goes) and hands the use case `services.with(reporter)`.
struct Services {
  util::FileSystem& fs;
  util::ProcessLauncher& launcher;
  exec::CommandRunner& runner;
  net::HttpTransport& http;  ///< libcurl, loaded on the first request
  const util::Environment& env;
  const util::Clock& clock;
  util::Random& random;
  usecase::Services with(exec::Reporter& reporter) {
    return usecase::Services{fs, launcher, runner, http, env, clock, random, reporter};
  }
};

using CommandAction = std::function<Result<ExitCode>(Services&)>;

/// The arguments after `--` on the command line, which app.cpp takes off before parsing; only
/// `kbuild test` accepts them (they go to pytest), every other command refuses them.
std::vector<std::string>& arguments_after_dashes();

/// Registration: adds a subcommand to `app` and, when it is selected, stores its action in `action`.
using Registrar = void (*)(CLI::App& app, CommandAction& action);

void register_build(CLI::App& app, CommandAction& action);
void register_clean(CLI::App& app, CommandAction& action);
void register_test(CLI::App& app, CommandAction& action);
void register_check(CLI::App& app, CommandAction& action);
void register_init(CLI::App& app, CommandAction& action);
void register_config(CLI::App& app, CommandAction& action);
void register_variants(CLI::App& app, CommandAction& action);
void register_toolchains(CLI::App& app, CommandAction& action);
void register_cache(CLI::App& app, CommandAction& action);
void register_hub(CLI::App& app, CommandAction& action);
void register_publish(CLI::App& app, CommandAction& action);
void register_whoami(CLI::App& app, CommandAction& action);
void register_lock(CLI::App& app, CommandAction& action);
void register_download(CLI::App& app, CommandAction& action);
void register_versions(CLI::App& app, CommandAction& action);  ///< versions and info
void register_ci(CLI::App& app, CommandAction& action);
void register_update_build(CLI::App& app, CommandAction& action);
void register_completions(CLI::App& app, CommandAction& action);
void register_doctor(CLI::App& app, CommandAction& action);

/// The kbuild version (util::k_kbuild_version, from CMake's project()).
const char* version();
/// `kbuild --version`: the version, commit and its date, the compiler, the libraries' versions.
std::string version_text();
/// The builder identification written into metadata.json provenance ("kbuild/<version>").
std::string builder_id();

/// Absolute, normalised kernel directory from a command-line argument ("." by default).
std::filesystem::path absolute_dir(const std::string& dir);
/// Number of CPUs available to this process.
size_t available_cpus();
/// Whether `stream` is a terminal that understands escape sequences (TERM set and not "dumb").
bool is_smart_terminal(std::FILE* stream, const util::Environment& env);
/// The interpreter a command uses: `option` (--python), else $KBUILD_PYTHON, else `python` in the user
/// config file, else python3 (config/user_config.hpp).
Result<std::string> python_setting(const std::string& option, Services& services);
/// Help text of every --python option, naming that order.
inline constexpr const char* k_python_help_suffix = " (default: $KBUILD_PYTHON, the user config's python, or python3)";
/// Prints a command's --json document on stdout. With --json, stdout carries exactly one JSON
/// document: when a command fails before printing its own, app.cpp prints {"error": {...}} instead.
void print_json_document(const std::string& text);
/// The voice of commands without a job graph (lock, download, versions, init, ...): progress lines
/// as log info when `progress` (a terminal or -v, never --json), warnings as log warnings (so -q and
/// KBUILD_LOG decide), diagnostics on stderr.
class LogReporter final : public exec::Reporter {
 public:
  explicit LogReporter(bool progress) : m_progress(progress) {}
  void job_started(const plan::Job&, size_t, size_t, bool) override {}
  void job_finished(const plan::Job&, const exec::JobOutcome&, size_t, size_t) override {}
  void explain(const plan::Job&, const std::string&) override {}
  void info(std::string_view message) override;
  void warning(std::string_view message) override;
  void diagnostics(const std::vector<config::Diagnostic>& found) override;

 private:
  bool m_progress;
};

/// -v of the commands that talk to the Hub: every request in the log (the token is never printed).
void log_requests(bool verbose);
/// Prints diagnostics of an input file to stderr (the library's DiagnosticSink for commands).
void print_diagnostics(const std::vector<config::Diagnostic>& diagnostics);

}  // namespace kbuild::cli
