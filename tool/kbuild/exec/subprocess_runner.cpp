#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "kbuild/exec/command_runner.hpp"

#include "kbuild/util/interrupt.hpp"
#include "kbuild/util/process.hpp"
#include "kbuild/util/system.hpp"

extern char** environ;

namespace kbuild::exec {

namespace {
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The exit code, and in `peak_rss_kib` the largest resident set of the child and of what it waited for.
int reap(int pid, std::uint64_t* peak_rss_kib = nullptr) {
  int status = 0;
  struct rusage usage {};
  while (::wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  if (peak_rss_kib) *peak_rss_kib = static_cast<std::uint64_t>(usage.ru_maxrss);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The guardian's life: register and forget process groups from the pipe; at EOF (kbuild is gone),
// kill what is left, then exit. Runs in a fresh fork: no allocation needed beyond a fixed table.
[[noreturn]] void guardian_main(int read_fd) {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) ::signal(sig, SIG_IGN);
  for (int fd = 3; fd < 1024; ++fd)
    if (fd != read_fd) ::close(fd);  // above all: never hold kbuild's build lock
  constexpr int k_max = 4096;
  static int groups[k_max];
  int count = 0;
  for (;;) {
    int pid = 0;
    ssize_t n = ::read(read_fd, &pid, sizeof pid);
    if (n < 0 && errno == EINTR) continue;
    if (n != sizeof pid) break;  // EOF: kbuild exited or died
    if (pid > 0 && count < k_max) {
      groups[count++] = pid;
    } else if (pid < 0) {
      for (int i = 0; i < count; ++i)
        if (groups[i] == -pid) groups[i] = groups[--count];
    }
  }
  for (int i = 0; i < count; ++i) ::kill(-groups[i], SIGKILL);
  ::_exit(0);
}

}  // namespace

SubprocessRunner::SubprocessRunner() = default;

SubprocessRunner::~SubprocessRunner() {
  abort_all();
  if (m_guardian_fd >= 0) {
    ::close(m_guardian_fd);  // EOF: the guardian exits
    int status = 0;
    while (::waitpid(m_guardian_pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

void SubprocessRunner::ensure_guardian() {
  if (m_guardian_fd >= 0) return;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return;  // without a guardian, commands are still stopped on Ctrl-C
  pid_t pid = ::fork();
  if (pid == 0) guardian_main(fds[0]);
  ::close(fds[0]);
  if (pid < 0) {
    ::close(fds[1]);
    return;
  }
  m_guardian_fd = fds[1];
  m_guardian_pid = pid;
}

void SubprocessRunner::tell_guardian(int pid) {
  if (m_guardian_fd < 0) return;
  while (::write(m_guardian_fd, &pid, sizeof pid) < 0 && errno == EINTR) {
  }
}

Result<void> SubprocessRunner::start(size_t token, const std::vector<std::string>& argv,
                                     const std::map<std::string, std::string>& env) {
  if (argv.empty()) return fail("internal error: empty command");
  auto program = util::RealProcessLauncher().find(argv[0]);
  if (!program) return fail("program not found: " + argv[0], "check PATH", ExitCode::toolchain);
  ensure_guardian();
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return fail(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Own process group: a terminal's Ctrl-C reaches kbuild only, which then stops children in order.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t empty, defaults;
  sigemptyset(&empty);
  posix_spawnattr_setsigmask(&attr, &empty);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGHUP);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  std::vector<char*> args;
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_storage;
  std::vector<char*> envp;
  if (!env.empty()) {
    auto merged = util::RealEnvironment().all();
    for (const auto& [key, value] : env) merged[key] = value;
    for (const auto& [key, value] : merged) env_storage.push_back(key + "=" + value);
    for (auto& entry : env_storage) envp.push_back(entry.data());
    envp.push_back(nullptr);
  }
  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, program->c_str(), &actions, &attr, args.data(), env.empty() ? environ : envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    return fail("cannot run " + argv[0] + ": " + std::strerror(rc), "", ExitCode::toolchain);
  }
  tell_guardian(pid);
  m_children.push_back({token, pid, fds[0], {}, now_seconds()});
  return {};
}

std::optional<CommandResult> SubprocessRunner::wait() {
  while (!m_children.empty()) {
    if (util::interrupted()) return std::nullopt;
    std::vector<pollfd> fds;
    for (const auto& child : m_children) fds.push_back({child.fd, POLLIN, 0});
    int signal_fd = util::interrupt_fd();
    if (signal_fd >= 0) fds.push_back({signal_fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    for (size_t i = 0; i < m_children.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Child& child = m_children[i];
      char buffer[65536];
      ssize_t n = ::read(child.fd, buffer, sizeof buffer);
      if (n > 0) {
        child.output.append(buffer, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      // EOF: the child closed its output; reap it.
      ::close(child.fd);
      CommandResult result{child.token, 0, std::move(child.output), now_seconds() - child.started, 0};
      result.exit_code = reap(child.pid, &result.peak_rss_kib);
      tell_guardian(-child.pid);
      m_children.erase(m_children.begin() + static_cast<std::ptrdiff_t>(i));
      return result;
    }
  }
  return std::nullopt;
}

void SubprocessRunner::abort_all() {
  for (const auto& child : m_children) ::kill(-child.pid, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (auto& child : m_children) {
    int status = 0;
    while (true) {
      pid_t done = ::waitpid(child.pid, &status, WNOHANG);
      if (done == child.pid || (done < 0 && errno != EINTR)) break;
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(-child.pid, SIGKILL);
        reap(child.pid);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::close(child.fd);
    tell_guardian(-child.pid);
  }
  m_children.clear();
}

}  // namespace kbuild::exec
