#pragma once
// Running a helper program to completion and capturing its output (toolchain probes, git). Build
// jobs run through exec::CommandRunner instead, which runs many at once.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/util/result.hpp"

namespace kbuild::util {

struct ProcessResult {
  int exit_code = 0;  ///< 128 + signal number when killed by a signal
  std::string out;
  std::string err;
};

struct ProcessOptions {
  std::optional<std::filesystem::path> cwd;
  /// Variables to set or override in the child's environment.
  std::map<std::string, std::string> env;
  /// The child writes to kbuild's own stdout/stderr (e.g. pip's progress bar on a terminal)
  /// instead of having its output captured.
  bool inherit_output = false;
};

class ProcessLauncher {
 public:
  virtual ~ProcessLauncher() = default;
  /// Runs argv (argv[0] looked up on PATH when it has no '/'). Error only if it could not start.
  virtual Result<ProcessResult> run(const std::vector<std::string>& argv, const ProcessOptions& options = {}) = 0;
  /// Where `program` would be run from: itself when it contains '/', else its PATH entry; nullopt
  /// when it cannot be found.
  virtual std::optional<std::filesystem::path> find(const std::string& program) const = 0;
};

class RealProcessLauncher final : public ProcessLauncher {
 public:
  Result<ProcessResult> run(const std::vector<std::string>& argv, const ProcessOptions& options = {}) override;
  std::optional<std::filesystem::path> find(const std::string& program) const override;
};

/// Looks `program` up in `path_variable` (a PATH value; or returns it when it contains '/'); nullopt
/// when not found. The real launcher's find() with this process's PATH.
std::optional<std::filesystem::path> find_program(const std::string& program, const std::string& path_variable);

/// The command that runs `program` with `argv`'s arguments (argv[0] excepted) in directory `cwd`
/// through /bin/sh: how a child changes directory where glibc lacks
/// posix_spawn_file_actions_addchdir_np (before 2.29; kbuild's wheel targets 2.28).
std::vector<std::string> chdir_trampoline(const std::filesystem::path& program, const std::vector<std::string>& argv,
                                          const std::filesystem::path& cwd);

/// The machine's hardware name as uname(2) reports it ("x86_64", "aarch64").
std::string current_machine();

/// Whether process `pid` exists (kill(pid, 0)); for telling stale temporary names from live ones.
bool process_alive(int pid);

}  // namespace kbuild::util
