#include "kbuild/exec/reporter.hpp"

#include <fmt/core.h>

#include "kbuild/util/strings.hpp"

namespace kbuild::exec {

TerminalReporter::~TerminalReporter() { end_status_line(); }

void TerminalReporter::print_status(const std::string& line) {
  if (m_options.smart_terminal && !m_options.verbose) {
    fmt::print(m_options.out, "\r{}\x1b[K", line);
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
  if (m_options.quiet) return;
  print_status(fmt::format("[{}/{}] {}{}", started + 1, total, job.description, cached ? " (cached)" : ""));
  if (m_options.verbose && !cached && !job.argv.empty())
    fmt::print(m_options.out, "{}\n", util::shell_join(job.command_line()));
}

void TerminalReporter::job_finished(const plan::Job& job, const JobOutcome& outcome, size_t, size_t) {
  if (!outcome.success) {
    end_status_line();
    fmt::print(m_options.out, "FAILED: {}\n", job.description);
    if (!job.argv.empty()) fmt::print(m_options.out, "{}\n", util::shell_join(job.command_line()));
    if (!outcome.error.empty()) fmt::print(m_options.out, "{}\n", outcome.error);
    if (!outcome.output.empty()) fmt::print(m_options.out, "{}", outcome.output);
    if (!outcome.output.empty() && outcome.output.back() != '\n') fmt::print(m_options.out, "\n");
  } else if (!outcome.output.empty() && !m_options.quiet) {
    // Warnings of a successful job are shown once, not lost behind the status line.
    end_status_line();
    fmt::print(m_options.out, "{}{}", outcome.output, outcome.output.back() == '\n' ? "" : "\n");
  }
  std::fflush(m_options.out);
}

void TerminalReporter::explain(const plan::Job& job, const std::string& reason) {
  if (!m_options.explain) return;
  end_status_line();
  fmt::print(m_options.out, "kbuild: explain: {}: {}\n", job.id, reason);
}

void TerminalReporter::info(std::string_view message) {
  if (m_options.quiet) return;
  end_status_line();
  fmt::print(m_options.out, "{}\n", message);
  std::fflush(m_options.out);
}

void TerminalReporter::warning(std::string_view message) {
  end_status_line();
  std::fflush(m_options.out);
  fmt::print(stderr, "kbuild: warning: {}\n", message);
}

}  // namespace kbuild::exec
