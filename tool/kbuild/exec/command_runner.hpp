#pragma once
// Running build commands concurrently. The executor starts commands and waits for any of them to
// finish; SubprocessRunner does it with real processes, tests use a scripted fake.

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/util/result.hpp"

namespace kbuild::exec {

struct CommandResult {
  size_t token = 0;    ///< what start() was given
  int exit_code = 0;   ///< 128 + signal when killed
  std::string output;  ///< stdout and stderr, interleaved as written
  double seconds = 0;
  /// The largest resident set of the command or any process it waited for (wait4's ru_maxrss:
  /// nvcc's cicc and ptxas included), in KiB; 0 when unknown.
  std::uint64_t peak_rss_kib = 0;
};

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  /// Starts argv with `env` set in (or overriding) kbuild's environment; `token` comes back in the
  /// CommandResult. Error if it could not be started.
  virtual Result<void> start(size_t token, const std::vector<std::string>& argv,
                             const std::map<std::string, std::string>& env = {}) = 0;
  /// Blocks until one running command finishes and returns it. nullopt when nothing is running or
  /// an interrupt arrived (see interrupt.hpp).
  virtual std::optional<CommandResult> wait() = 0;
  /// Terminates every running command (SIGTERM to its process group, SIGKILL after a grace period)
  /// and reaps them.
  virtual void abort_all() = 0;
  virtual size_t running() const = 0;
};

/// Real processes: posix_spawn, each command in its own process group, output through a pipe.
/// Runs commands as child processes, each in its own process group (so a terminal's Ctrl-C reaches
/// kbuild, which then stops them in order). No command outlives kbuild: a guardian process, forked
/// at the first start(), holds the read end of a pipe and the list of running process groups; when
/// kbuild dies in any way (even kill -9) the pipe closes and the guardian kills every group left.
class SubprocessRunner final : public CommandRunner {
 public:
  SubprocessRunner();
  ~SubprocessRunner() override;
  Result<void> start(size_t token, const std::vector<std::string>& argv,
                     const std::map<std::string, std::string>& env = {}) override;
  std::optional<CommandResult> wait() override;
  void abort_all() override;
  size_t running() const override { return m_children.size(); }

 private:
  struct Child {
    size_t token;
    int pid;
    int fd;
    std::string output;
    double started;
  };
  void ensure_guardian();
  void tell_guardian(int pid);  ///< >0: a new group; <0: a group that is gone

  std::vector<Child> m_children;
  int m_guardian_fd = -1;
  int m_guardian_pid = -1;
};

}  // namespace kbuild::exec
