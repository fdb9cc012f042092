#include "kbuild/util/interrupt.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>

namespace kbuild::util {

namespace {
std::atomic<bool> g_interrupted{false};
int g_pipe[2] = {-1, -1};

void record_signal() {
  g_interrupted.store(true);
  if (g_pipe[1] >= 0) {
    char byte = 1;
    [[maybe_unused]] auto ignored = ::write(g_pipe[1], &byte, 1);
  }
}

// The first signal asks every loop to stop and clean up; a second one (an impatient Ctrl-C, or a
// command stuck where no loop checks) ends the process at once, with the same exit code.
void on_signal(int) {
  if (g_interrupted.load()) ::_exit(130);
  record_signal();
}
}  // namespace

void install_interrupt_handlers() {
  if (g_pipe[0] >= 0) return;
  if (::pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return;
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: blocking calls return EINTR and re-check the flag
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
  ::sigaction(SIGHUP, &action, nullptr);
}

bool interrupted() { return g_interrupted.load(); }

std::unexpected<Error> interrupted_failure(const std::string& what) {
  return fail("interrupted " + what, "nothing was left half-written; run the command again", ExitCode::interrupted);
}

int interrupt_fd() { return g_pipe[0]; }

void raise_interrupt_for_testing() { record_signal(); }

void reset_interrupt_for_testing() {
  g_interrupted.store(false);
  if (g_pipe[0] >= 0) {
    char buffer[64];
    while (::read(g_pipe[0], buffer, sizeof buffer) > 0) {
    }
  }
}

}  // namespace kbuild::util
