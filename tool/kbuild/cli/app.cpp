#include "kbuild/cli/app.hpp"

#include <fmt/core.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "kbuild/cli/command.hpp"
#include "kbuild/cli/kernel_builder_words.hpp"
#include "kbuild/config/user_config.hpp"
#include "kbuild/exec/command_runner.hpp"
#include "kbuild/hub/curl_transport.hpp"
#include "kbuild/server/listener.hpp"
#include "kbuild/server/metadata_db.hpp"
#include "kbuild/toolchain/archive.hpp"
#include "kbuild/toolchain/deb_archive.hpp"
#include "kbuild/util/build_info.hpp"
#include "kbuild/util/cache_layout.hpp"
#include "kbuild/util/interrupt.hpp"
#include "kbuild/util/library_versions.hpp"
#include "kbuild/util/log.hpp"
#include "kbuild/util/source_info.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::cli {

const char* version() { return util::k_kbuild_version; }

std::string version_text() {
  std::string commit = util::k_source_commit;
  std::string text = std::string("kbuild ") + version() + " (commit " + commit.substr(0, 12) +
                     (util::k_source_dirty ? ", modified" : "") + ", " + util::k_source_date + ")\n";
  text += std::string("compiler: ") + util::k_compiler + "\n";
  util::LibraryVersions libraries = util::library_versions();
  libraries.emplace_back("CLI11", CLI11_VERSION);
  libraries.emplace_back("nlohmann_json", std::to_string(NLOHMANN_JSON_VERSION_MAJOR) + "." +
                                              std::to_string(NLOHMANN_JSON_VERSION_MINOR) + "." +
                                              std::to_string(NLOHMANN_JSON_VERSION_PATCH));
  libraries.emplace_back("toml++", config::toml_library_version());
  libraries.emplace_back("libcurl", hub::curl_library_version());
  libraries.emplace_back("libarchive", toolchain::archive_library_version());
  libraries.emplace_back("SQLite", server::db::sqlite_library_version());
  libraries.emplace_back("cpp-httplib", server::httplib_library_version());
  text += "libraries:";
  for (const auto& [name, library_version] : libraries) text += " " + name + " " + library_version + ",";
  text.back() = '\n';
  return text;
}
std::string builder_id() { return std::string("kbuild/") + version(); }

namespace {
bool g_json_printed = false;  // a command printed its --json document

// libcurl (and the TLS libraries behind it) set up on the first request: most commands make none.
class LazyCurlTransport final : public net::HttpTransport {
 public:
  std::expected<net::HttpResponse, net::TransportError> send(const net::HttpRequest& request) override {
    if (!m_curl) m_curl = std::make_unique<hub::CurlTransport>();
    return m_curl->send(request);
  }

 private:
  std::unique_ptr<hub::CurlTransport> m_curl;
};
}  // namespace

void print_json_document(const std::string& text) {
  fmt::print("{}\n", text);
  std::fflush(stdout);
  g_json_printed = true;
}

std::filesystem::path absolute_dir(const std::string& dir) {
  std::error_code ec;
  auto path = std::filesystem::absolute(dir.empty() ? "." : dir, ec);
  path = path.lexically_normal();
  if (path.has_filename() == false && path != path.root_path()) path = path.parent_path();
  return path;
}

size_t available_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

Result<std::string> python_setting(const std::string& option, Services& services) {
  KB_TRY_ASSIGN(config::Setting python, config::choose_python(option, services.fs, services.env));
  return python.value;
}

// Commands that read or write the cache directory (util/cache_layout.hpp).
static bool uses_cache(CLI::App& app) {
  for (const char* name : {"build", "test", "toolchains", "cache", "doctor", "variants"})
    if (app.got_subcommand(name)) return true;
  return false;
}

bool is_smart_terminal(std::FILE* stream, const util::Environment& env) {
  auto term = env.get("TERM");
  return ::isatty(::fileno(stream)) && term && !term->empty() && *term != "dumb";
}

void LogReporter::info(std::string_view message) {
  if (m_progress) util::log::info(std::string(message));
}
void LogReporter::warning(std::string_view message) { util::log::warn(std::string(message)); }
void LogReporter::diagnostics(const std::vector<config::Diagnostic>& found) { print_diagnostics(found); }

void log_requests(bool verbose) {
  if (verbose && !util::log::enabled(util::log::Level::debug)) util::log::set_level(util::log::Level::debug);
}

void print_diagnostics(const std::vector<config::Diagnostic>& diagnostics) {
  exec::print_diagnostics(stderr, diagnostics);
}

namespace {
const char* exit_code_name(ExitCode code) {
  switch (code) {
    case ExitCode::ok:
      return "ok";
    case ExitCode::failure:
      return "failure";
    case ExitCode::usage:
      return "usage";
    case ExitCode::toolchain:
      return "toolchain";
    case ExitCode::network:
      return "network";
    case ExitCode::interrupted:
      return "interrupted";
  }
  return "failure";
}

// Every error leaves with a hint (the --json document's included): the one its origin gave, else
// where to look next for its kind of failure.
Error with_default_hint(Error error, const std::string& command) {
  if (!error.hint.empty()) return error;
  const std::string help = "`kbuild " + (command.empty() ? std::string() : command + " ") + "--help`";
  switch (error.code) {
    case ExitCode::usage:
      error.hint = "see " + help;
      break;
    case ExitCode::toolchain:
      error.hint = "`kbuild doctor` checks the compilers, Python and Torch kbuild finds";
      break;
    case ExitCode::network:
      error.hint = "check the endpoint (HF_ENDPOINT or --endpoint), the network, and that your token can see it";
      break;
    case ExitCode::interrupted:
      error.hint = "run the command again: finished work is kept";
      break;
    default:
      error.hint = "the message names what failed; " + help + " lists the options that change it";
  }
  return error;
}

// The error as text on stderr, and, when the command line asked for --json and the command printed
// no document, as {"error": {"code", "kind", "message", "hint"}} on stdout (docs/cli.md, "Streams").
void print_error(const Error& error, bool json = false) {
  fmt::print(stderr, "kbuild: error: {}\n", error.message);
  if (!error.hint.empty()) fmt::print(stderr, "  hint: {}\n", error.hint);
  if (!json || g_json_printed) return;
  nlohmann::ordered_json document = {{"error",
                                      {{"code", static_cast<int>(error.code)},
                                       {"kind", exit_code_name(error.code)},
                                       {"message", error.message},
                                       {"hint", error.hint}}}};
  fmt::print("{}\n", document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
}

bool json_requested(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--") break;
    if (std::string_view(argv[i]) == "--json") return true;
  }
  return false;
}

// Repeatable options take one value per occurrence, so that `--variant NAME KERNEL_DIR` leaves
// KERNEL_DIR to the positional argument (CLI11 lets vector options swallow what follows).
void one_value_per_option(CLI::App& app) {
  for (CLI::Option* option : app.get_options())
    if (option->nonpositional()) option->allow_extra_args(false);
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) one_value_per_option(*sub);
}

// The command path named on the command line ("publish", "hub serve"), for "see --help" hints;
// `command` gets the innermost (sub)command it names.
std::string command_path(CLI::App& app, int argc, char** argv, CLI::App** command = nullptr) {
  std::string path;
  CLI::App* current = &app;
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-') continue;
    CLI::App* sub = nullptr;
    try {
      sub = current->get_subcommand(argv[i]);
    } catch (const CLI::OptionNotFound&) {
      break;
    }
    path += (path.empty() ? "" : " ") + std::string(argv[i]);
    current = sub;
  }
  if (command) *command = current;
  return path;
}

// An option that the command it follows does not have, found before CLI11 parses (which reports a
// missing required option or subcommand first); with the closest known name as a suggestion.
std::optional<Error> unknown_option(CLI::App& app, int argc, char** argv) {
  CLI::App* current = &app;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    std::string token = argv[i];
    if (token == "--") break;
    bool long_option = token.starts_with("--") && token.size() > 2;
    bool short_option = token.size() == 2 && token[0] == '-' && !std::isdigit(static_cast<unsigned char>(token[1]));
    if (!long_option && !short_option) {
      try {
        current = current->get_subcommand(token);
        path += (path.empty() ? "" : " ") + token;
      } catch (const CLI::OptionNotFound&) {
      }
      continue;
    }
    std::string name =
        long_option ? token.substr(2, token.find('=') == std::string::npos ? std::string::npos : token.find('=') - 2)
                    : token.substr(1);
    std::vector<std::string> known = {"--help"};
    bool found = name == "help" || name == "h";
    for (const CLI::Option* option : current->get_options()) {
      for (const auto& lname : option->get_lnames()) {
        known.push_back("--" + lname);
        found = found || (long_option && lname == name);
      }
      for (const auto& sname : option->get_snames()) found = found || (short_option && sname == name);
    }
    if (found) continue;
    if (auto theirs = kernel_builder_option_error(current->get_name(), long_option ? "--" + name : token))
      return theirs;
    std::string hint = path.empty() ? "see `kbuild --help`" : "see `kbuild " + path + " --help`";
    std::string shown = long_option ? "--" + name : token;
    std::string suggestion = long_option ? util::closest_match(shown, known) : "";
    return Error{ExitCode::usage, "unknown option '" + shown + "'" + (path.empty() ? "" : " for `kbuild " + path + "`"),
                 suggestion.empty() ? hint : "did you mean " + suggestion + "? (" + hint + ")"};
  }
  return std::nullopt;
}

// CLI11's parse errors in kbuild's words: lowercase, the offending option named, a suggestion.
Error usage_error(const CLI::ParseError& error, CLI::App& app, int argc, char** argv) {
  CLI::App* command = &app;
  std::string path = command_path(app, argc, argv, &command);
  std::string hint = path.empty() ? "see `kbuild --help`" : "see `kbuild " + path + " --help`";
  std::string message = error.what();
  const std::string unexpected = "The following argument was not expected: ";
  const std::string unexpected_many = "The following arguments were not expected: ";
  std::string extra;
  if (message.starts_with(unexpected)) extra = message.substr(unexpected.size());
  if (message.starts_with(unexpected_many)) extra = message.substr(unexpected_many.size());
  if (!extra.empty()) {
    std::string first = extra.substr(0, extra.find(' '));
    if (!first.starts_with("-")) return {ExitCode::usage, "unexpected argument '" + first + "'", hint};
    std::vector<std::string> known;
    for (const CLI::Option* option : command->get_options())
      for (const auto& name : option->get_lnames()) known.push_back("--" + name);
    std::string suggestion = util::closest_match(first.substr(0, first.find('=')), known);
    return {ExitCode::usage, "unknown option '" + first + "'" + (path.empty() ? "" : " for `kbuild " + path + "`"),
            suggestion.empty() ? hint : "did you mean " + suggestion + "? (" + hint + ")"};
  }
  if (message == "A subcommand is required")
    return path.empty()
               ? Error{ExitCode::usage, "no command given", "kbuild COMMAND ...; see `kbuild --help` for the commands"}
               : Error{ExitCode::usage, "`kbuild " + path + "` needs a subcommand", hint};
  if (!message.empty()) message[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(message[0])));
  return {ExitCode::usage, message, hint};
}

// The first word that should be a command but is not one.
std::optional<Error> unknown_command(CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return std::nullopt;
  if (auto theirs = kernel_builder_command_error(argc, argv)) return theirs;
  std::vector<std::string> names;
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    if (sub->check_name(argv[1])) return std::nullopt;  // its name or an alias (kernel_builder_words.hpp)
    names.push_back(sub->get_name());
  }
  std::string suggestion = util::closest_match(argv[1], names);
  return Error{ExitCode::usage, fmt::format("unknown command '{}'", argv[1]),
               suggestion.empty() ? "commands: " + util::join(names, ", ") + " (kbuild --help)"
                                  : "did you mean `kbuild " + suggestion + "`?"};
}
}  // namespace

// CLI11 shows a flag that takes an optional value as `--upgrade{*}`; users read `--upgrade[=VALUE]`.
class HelpFormatter final : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* option, bool is_positional) const override {
    std::string name = CLI::Formatter::make_option_name(option, is_positional);
    for (size_t open = name.find('{'); open != std::string::npos; open = name.find('{', open)) {
      size_t close = name.find('}', open);
      if (close == std::string::npos) break;
      name.replace(open, close - open + 1, "[=VALUE]");
    }
    return name;
  }
};

std::vector<std::string>& arguments_after_dashes() {
  static std::vector<std::string> arguments;
  return arguments;
}

int run(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) != "--") continue;
    arguments_after_dashes().assign(argv + i + 1, argv + argc);
    argc = i;
    break;
  }
  CLI::App app{"kbuild builds PyTorch kernels (CUDA and CPU) for the kernels ecosystem", "kbuild"};
  app.formatter(std::make_shared<HelpFormatter>());
  app.set_version_flag("-V,--version", [] { return version_text(); });
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 success, 1 build or check failed, 2 invalid usage or input, 3 toolchain "
      "problem, 4 network/Hub error, 130 interrupted.\nEach command's options: kbuild COMMAND --help. The full "
      "reference is docs/cli.md of kbuild's source, at the commit kbuild --version names.");
  CommandAction action;
  for (Registrar registrar : {register_init, register_build, register_variants, register_check, register_test,
                              register_clean, register_toolchains, register_cache, register_config, register_publish,
                              register_whoami, register_hub, register_lock, register_download, register_versions,
                              register_ci, register_update_build, register_completions, register_doctor})
    registrar(app, action);
  add_kernel_builder_aliases(app);
  one_value_per_option(app);
  const bool json = json_requested(argc, argv);
  if (auto error = unknown_command(app, argc, argv); error || (error = unknown_option(app, argc, argv))) {
    print_error(*error, json);
    return static_cast<int>(ExitCode::usage);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    print_error(usage_error(e, app, argc, argv), json);
    return static_cast<int>(ExitCode::usage);
  }
  if (!action) return static_cast<int>(ExitCode::usage);
  if (!arguments_after_dashes().empty() && !app.got_subcommand("test")) {
    print_error({ExitCode::usage, "only `kbuild test` takes arguments after `--` (for pytest)",
                 "remove `-- " + util::join(arguments_after_dashes(), " ") + "`"},
                json);
    return static_cast<int>(ExitCode::usage);
  }
  util::RealFileSystem fs;
  util::RealProcessLauncher launcher;
  util::RealEnvironment env;
  util::RealClock clock;
  util::RealRandom random;
  exec::SubprocessRunner runner;
  LazyCurlTransport http;
  Services services{fs, launcher, runner, http, env, clock, random};
  util::log::set_level(util::log::level_for(false, false, env.get("KBUILD_LOG")));
  if (uses_cache(app) && util::CacheLayout::from_environment(env).root.empty()) {
    print_error({ExitCode::usage, "no cache directory: HOME is not set (nor KBUILD_CACHE or XDG_CACHE_HOME)",
                 "set KBUILD_CACHE to a directory of your own, e.g. KBUILD_CACHE=$PWD/.kbuild-cache; kbuild does not "
                 "fall back to a shared directory such as /tmp, where another user could prepare it"},
                json);
    return static_cast<int>(ExitCode::usage);
  }
  // Every command stops on SIGINT/SIGTERM with exit code 130: loops, lock waits, transfers and
  // unpacking check util::interrupted(); whatever fails after a signal is reported as interrupted.
  util::install_interrupt_handlers();
  try {
    auto result = action(services);
    if (!result && util::interrupted() && result.error().code != ExitCode::interrupted)
      result = util::interrupted_failure("(" + result.error().message + ")");
    if (!result) {
      print_error(with_default_hint(result.error(), command_path(app, argc, argv)), json);
      return static_cast<int>(result.error().code);
    }
    return static_cast<int>(*result);
  } catch (const std::exception& e) {
    print_error({ExitCode::failure, std::string("internal error: ") + e.what(),
                 "please report this with the command line that caused it"},
                json);
    return static_cast<int>(ExitCode::failure);
  }
}

}  // namespace kbuild::cli
