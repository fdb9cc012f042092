#include "kbuild/util/process.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "kbuild/util/interrupt.hpp"
#include "kbuild/util/log.hpp"
#include "kbuild/util/strings.hpp"
#include "kbuild/util/system.hpp"

extern char** environ;

namespace kbuild::util {

// An empty PATH entry is skipped, not read as the current directory as POSIX shells do: the working
// directory is never searched. access(X_OK) also succeeds for a directory, hence is_directory.
std::optional<std::filesystem::path> find_program(const std::string& program, const std::string& path_variable) {
  if (program.find('/') != std::string::npos) {
    if (::access(program.c_str(), X_OK) == 0) return std::filesystem::path(program);
    return std::nullopt;
  }
  for (const auto& dir : split(path_variable, ':')) {
    if (dir.empty()) continue;
    std::filesystem::path candidate = std::filesystem::path(dir) / program;
    if (::access(candidate.c_str(), X_OK) == 0 && !std::filesystem::is_directory(candidate)) return candidate;
  }
  return std::nullopt;
}

std::optional<std::filesystem::path> RealProcessLauncher::find(const std::string& program) const {
  return find_program(program, RealEnvironment().get_or("PATH", ""));
}

std::string current_machine() {
  struct ::utsname name;
  if (::uname(&name) != 0) return "unknown";
  return name.machine;
}

// argv[0] is found on kbuild's own PATH, not on options.env's. stdin is /dev/null: a helper that would prompt (pip,
// git) reads EOF. The pipes are O_CLOEXEC, so no other child inherits a write end that would withhold EOF; both are
// drained by poll(), as reading one to EOF first deadlocks once the child fills the other pipe's buffer.
namespace {

// Ends the child's process group: SIGTERM, then, once the child has exited or a second has passed,
// SIGKILL for whatever of the group is left. The child is not reaped here (WNOWAIT; waitpid follows),
// so its group id stays valid.
void stop_child(pid_t pid) {
  ::kill(-pid, SIGTERM);
  for (int waited = 0; waited < 100; ++waited) {
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) break;
    ::usleep(10'000);
  }
  ::kill(-pid, SIGKILL);
}

// Reads the child's stdout and stderr into `result` until both close; a signal to kbuild meanwhile
// stops the child (stop_child) and makes this return true.
bool collect_output(int out_fd, int err_fd, pid_t pid, ProcessResult& result) {
  pollfd fds[3] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}, {interrupt_fd(), POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_count = 2;
  char buffer[65536];
  bool stopped = false;
  while (open_count > 0) {
    if (::poll(fds, 3, stopped ? 100 : -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (!stopped && interrupted()) {
      stop_child(pid);  // within a second; its pipes then reach EOF
      stopped = true;
      fds[2].fd = -1;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_count;
      }
    }
  }
  return stopped;
}

// Looked up at run time: glibc 2.29 added it, and the wheel's kbuild runs on 2.28 too.
using AddChdir = int (*)(posix_spawn_file_actions_t*, const char*);
AddChdir native_addchdir() {
  static const auto function =
      reinterpret_cast<AddChdir>(::dlsym(RTLD_DEFAULT, "posix_spawn_file_actions_addchdir_np"));
  return function;
}

}  // namespace

std::vector<std::string> chdir_trampoline(const std::filesystem::path& program, const std::vector<std::string>& argv,
                                          const std::filesystem::path& cwd) {
  std::vector<std::string> command = {"/bin/sh", "-c", "cd -- \"$0\" && exec \"$@\"", cwd.string(), program.string()};
  command.insert(command.end(), argv.begin() + (argv.empty() ? 0 : 1), argv.end());
  return command;
}

Result<ProcessResult> RealProcessLauncher::run(const std::vector<std::string>& argv, const ProcessOptions& options) {
  if (argv.empty()) return fail("internal error: empty command");
  if (interrupted()) return interrupted_failure("before running " + argv[0]);
  log::debug("running " + shell_join(argv));
  auto program = find(argv[0]);
  if (!program) return fail("program not found: " + argv[0], "", ExitCode::toolchain);

  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return fail(std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return fail(std::string("pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!options.inherit_output) {
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  }
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  std::vector<std::string> trampoline;
  if (options.cwd && native_addchdir()) {
    native_addchdir()(&actions, options.cwd->c_str());
  } else if (options.cwd) {
    trampoline = chdir_trampoline(*program, argv, *options.cwd);
    program = trampoline.front();
  }

  std::vector<char*> args;
  for (const auto& arg : trampoline.empty() ? argv : trampoline) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_storage;
  std::vector<char*> env;
  char** envp = environ;
  if (!options.env.empty()) {
    auto merged = RealEnvironment().all();
    for (const auto& [key, value] : options.env) merged[key] = value;
    for (const auto& [key, value] : merged) env_storage.push_back(key + "=" + value);
    for (auto& entry : env_storage) env.push_back(entry.data());
    env.push_back(nullptr);
    envp = env.data();
  }
  // Its own process group, so that a signal to kbuild alone (not to the terminal's group) still ends
  // the child and everything it started (pip's own subprocesses): see stop_child below.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, program->c_str(), &actions, &attributes, args.data(), envp);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  // The parent's write ends must go, or the reads below never see EOF.
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return fail("cannot run " + argv[0] + ": " + std::strerror(rc), "", ExitCode::toolchain);
  }
  ProcessResult result;
  const bool stopped = collect_output(out_pipe[0], err_pipe[0], pid, result);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (stopped) return interrupted_failure("while " + argv[0] + " ran (it was stopped)");
  return result;
}

// EPERM: the process exists but belongs to another user; it is alive all the same, and its
// temporary names must not be taken for stale ones.
bool process_alive(int pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

}  // namespace kbuild::util
