#include "kbuild/exec/reporter.hpp"

#include <fmt/core.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <iostream>

#include "kbuild/util/strings.hpp"

namespace kbuild::exec {

std::string with_elapsed(const std::string& status, double seconds) {
  auto whole = static_cast<long>(seconds);
  std::string elapsed = whole < 60 ? fmt::format("{} s", whole) : fmt::format("{} min {:02} s", whole / 60, whole % 60);
  return status + "  (" + elapsed + ")";
}

namespace {

// The live line must fit the terminal: a wrapped line cannot be rewritten with '\r', and each
// rewrite would add a line. Cut to the width (ASCII descriptions), as ninja does.
std::string fit_to_terminal(std::FILE* out, std::string line) {
  winsize size{};
  if (::ioctl(::fileno(out), TIOCGWINSZ, &size) == 0 && size.ws_col > 4 && line.size() >= size.ws_col)
    line = line.substr(0, size.ws_col - 4) + "...";
  return line;
}

}  // namespace

TerminalReporter::TerminalReporter(TerminalOptions options) : m_options(options) {
  if (!m_options.quiet && !m_options.verbose && m_options.tick.count() > 0)
    m_ticker = std::thread([this] { tick_loop(); });
}

TerminalReporter::~TerminalReporter() {
  {
    std::lock_guard lock(m_mutex);
    m_stopping = true;
  }
  m_wake.notify_all();
  if (m_ticker.joinable()) m_ticker.join();
  end_status_line();
}

void TerminalReporter::tick_loop() {
  std::unique_lock lock(m_mutex);
  // A failed write (a full disk under a redirected log) ends the ticking, never the build.
  try {
    tick_while_running(lock);
  } catch (const std::exception&) {
  }
}

void TerminalReporter::tick_while_running(std::unique_lock<std::mutex>& lock) {
  while (!m_wake.wait_for(lock, m_options.tick, [this] { return m_stopping; })) {
    if (m_running.empty()) continue;
    auto oldest = m_running.begin();
    for (auto it = m_running.begin(); it != m_running.end(); ++it)
      if (it->second.second < oldest->second.second) oldest = it;
    auto now = Clock::now();
    double seconds = std::chrono::duration<double>(now - oldest->second.second).count();
    if (m_options.smart_terminal) {
      if (seconds < m_options.long_after.count() || !m_status_pending) continue;
      std::string prefix = m_status.substr(0, m_status.find(']') + 1);
      fmt::print(m_options.out, "\r{}\x1b[K",
                 fit_to_terminal(m_options.out, with_elapsed(prefix + " " + oldest->second.first, seconds)));
    } else {
      if (seconds < m_options.log_every.count() || now - m_last_log < m_options.log_every) continue;
      m_last_log = now;
      fmt::print(m_options.out, "{}\n", with_elapsed("kbuild: still running: " + oldest->second.first, seconds));
    }
    std::fflush(m_options.out);
  }
}

void TerminalReporter::print_status(const std::string& line) {
  if (m_options.smart_terminal && !m_options.verbose) {
    fmt::print(m_options.out, "\r{}\x1b[K", fit_to_terminal(m_options.out, line));
    m_status_pending = true;
  } else {
    fmt::print(m_options.out, "{}\n", line);
  }
  std::fflush(m_options.out);
}

void TerminalReporter::end_status_line() {
  if (m_status_pending) {
    fmt::print(m_options.out, "\n");
    std::fflush(m_options.out);
    m_status_pending = false;
  }
}

void TerminalReporter::job_started(const plan::Job& job, size_t started, size_t total, bool cached) {
  std::lock_guard lock(m_mutex);
  if (!cached && !job.argv.empty()) m_running[job.id] = {job.description, Clock::now()};
  if (m_options.quiet) return;
  m_status = fmt::format("[{}/{}] {}{}", started + 1, total, job.description, cached ? " (cached)" : "");
  print_status(m_status);
  if (m_options.verbose && !cached && !job.argv.empty())
    fmt::print(m_options.out, "{}\n", util::shell_join(job.command_line()));
}

void TerminalReporter::job_finished(const plan::Job& job, const JobOutcome& outcome, size_t, size_t) {
  std::lock_guard lock(m_mutex);
  m_running.erase(job.id);
  if (!outcome.success) {
    end_status_line();
    // Diagnostics go to stderr. The same source failing in several variants (one typo, a CPU source
    // shared by the cpu and cuda variants) prints its errors once; the command with -v.
    const bool repeated = !outcome.output.empty() && !m_shown_outputs.insert(outcome.output).second;
    fmt::print(m_options.err, "FAILED: {}{}\n", job.description, repeated ? " (the same errors as above)" : "");
    if (!job.argv.empty() && m_options.verbose) fmt::print(m_options.err, "{}\n", util::shell_join(job.command_line()));
    if (!outcome.error.empty()) fmt::print(m_options.err, "{}\n", outcome.error);
    if (!outcome.output.empty() && !repeated)
      fmt::print(m_options.err, "{}{}", outcome.output, outcome.output.back() == '\n' ? "" : "\n");
  } else if (!outcome.output.empty() && !m_options.quiet) {
    // Warnings of a successful job are shown once, not lost behind the status line.
    end_status_line();
    if (m_shown_outputs.insert(outcome.output).second)
      fmt::print(m_options.err, "{}{}", outcome.output, outcome.output.back() == '\n' ? "" : "\n");
  }
  std::fflush(m_options.out);
  std::fflush(m_options.err);
}

void TerminalReporter::job_aborted(const plan::Job& job) {
  std::lock_guard lock(m_mutex);
  m_running.erase(job.id);
}

void TerminalReporter::explain(const plan::Job& job, const std::string& reason) {
  if (!m_options.explain) return;
  std::lock_guard lock(m_mutex);
  end_status_line();
  fmt::print(m_options.out, "kbuild: explain: {}: {}\n", job.id, reason);
}

void TerminalReporter::info(std::string_view message) {
  if (m_options.quiet) return;
  std::lock_guard lock(m_mutex);
  end_status_line();
  fmt::print(m_options.out, "{}\n", message);
  std::fflush(m_options.out);
}

void TerminalReporter::warning(std::string_view message) {
  std::lock_guard lock(m_mutex);
  end_status_line();
  std::fflush(m_options.out);
  fmt::print(stderr, "kbuild: warning: {}\n", message);
}

void print_diagnostics(std::FILE* err, const std::vector<config::Diagnostic>& found) {
  constexpr size_t k_shown = 50;
  std::vector<config::Diagnostic> shown(found.begin(),
                                        found.begin() + static_cast<std::ptrdiff_t>(std::min(k_shown, found.size())));
  fmt::print(err, "{}", config::format_diagnostics(shown));
  if (found.size() > k_shown)
    fmt::print(err, "... and {} more problems (fix the ones above first)\n", found.size() - k_shown);
}

void TerminalReporter::finish() {
  std::lock_guard lock(m_mutex);
  end_status_line();
}

void TerminalReporter::diagnostics(const std::vector<config::Diagnostic>& found) {
  std::lock_guard lock(m_mutex);
  end_status_line();
  std::fflush(m_options.out);
  print_diagnostics(m_options.err, found);
}

void TerminalReporter::transfer(std::string_view what, std::uint64_t done, std::uint64_t total) {
  if (m_options.quiet || !m_options.smart_terminal) return;
  std::lock_guard lock(m_mutex);
  auto now = Clock::now();
  if (!m_status_pending || done == 0) m_transfer_start = now;
  double seconds = std::chrono::duration<double>(now - m_transfer_start).count();
  double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0;
  double eta = rate > 0 && total > done ? static_cast<double>(total - done) / rate : 0;
  m_status = fmt::format("  {} {} / {}  {:.1f} MB/s  ETA {:.0f} s", what, util::human_size(done),
                         util::human_size(total), rate / 1e6, eta);
  fmt::print(m_options.out, "\r{}\x1b[K", fit_to_terminal(m_options.out, m_status));
  std::fflush(m_options.out);
  m_status_pending = true;
}

bool TerminalReporter::confirm(std::string_view question) {
  if (!m_options.interactive || !::isatty(STDIN_FILENO) || !::isatty(::fileno(m_options.err))) return false;
  std::lock_guard lock(m_mutex);
  end_status_line();
  fmt::print(m_options.err, "kbuild: {} [y/N] ", question);
  std::fflush(m_options.err);
  std::string answer;
  if (!std::getline(std::cin, answer)) return false;
  return answer == "y" || answer == "Y" || answer == "yes";
}

}  // namespace kbuild::exec
