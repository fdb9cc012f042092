#pragma once
// SIGINT/SIGTERM handling for long operations. The handler only records the signal and writes a
// byte to a self-pipe, so loops blocked in poll() wake up; the executor then stops its children and
// cleans up before kbuild exits with code 130.

#include <string>

#include "kbuild/util/result.hpp"

namespace kbuild::util {

/// Installs the handlers (idempotent). Until then interrupted() is always false.
void install_interrupt_handlers();
bool interrupted();
/// The error of an operation stopped by a signal (exit code 130), `what` saying where it stopped.
std::unexpected<Error> interrupted_failure(const std::string& what);
/// A file descriptor that becomes readable once a signal has arrived; -1 before installation.
int interrupt_fd();
/// For tests: pretend a signal arrived.
void raise_interrupt_for_testing();
void reset_interrupt_for_testing();

}  // namespace kbuild::util
