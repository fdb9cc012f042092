#include "kbuild/cli/app.hpp"

#include <fmt/core.h>
#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "kbuild/cli/command.hpp"

namespace kbuild::cli {

const char* version() { return "0.1.0"; }
std::string builder_id() { return std::string("kbuild/") + version(); }

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

bool is_smart_terminal(std::FILE* stream) {
  const char* term = std::getenv("TERM");
  return ::isatty(::fileno(stream)) && term && std::string(term) != "dumb";
}

namespace {
void print_error(const Error& error) {
  fmt::print(stderr, "kbuild: error: {}\n", error.message);
  if (!error.hint.empty()) fmt::print(stderr, "  hint: {}\n", error.hint);
}
}  // namespace

int run(int argc, char** argv) {
  CLI::App app{"kbuild builds PyTorch kernels (CUDA and CPU) for the kernels ecosystem", "kbuild"};
  app.set_version_flag("--version", version());
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 success, 1 build or check failed, 2 invalid usage or input, 3 toolchain "
      "problem, 4 network/Hub error, 130 interrupted.\nDocumentation: docs/cli.md");
  CommandAction action;
  for (Registrar registrar :
       {register_init, register_build, register_variants, register_check, register_clean, register_toolchains,
        register_cache, register_config, register_publish, register_whoami, register_hub})
    registrar(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : static_cast<int>(ExitCode::usage);
  }
  if (!action) return static_cast<int>(ExitCode::usage);
  util::RealFileSystem fs;
  util::RealProcessLauncher launcher;
  Services services{fs, launcher};
  try {
    auto result = action(services);
    if (!result) {
      print_error(result.error());
      return static_cast<int>(result.error().code);
    }
    return static_cast<int>(*result);
  } catch (const std::exception& e) {
    print_error({ExitCode::failure, std::string("internal error: ") + e.what(),
                 "please report this with the command line that caused it"});
    return static_cast<int>(ExitCode::failure);
  }
}

}  // namespace kbuild::cli
