#pragma once
// Where build progress goes. TerminalReporter prints "[n/m] DESCRIPTION" lines (rewriting one line
// in place on a terminal, like ninja), the command with -v, and a failing job's command and output.

#include <cstdio>
#include <string>
#include <string_view>

#include "kbuild/plan/graph.hpp"

namespace kbuild::exec {

struct JobOutcome {
  bool success = true;
  bool cache_hit = false;
  int exit_code = 0;
  std::string output;  ///< compiler output (warnings or errors)
  std::string error;   ///< for in-process jobs: the error message
  double seconds = 0;
};

class Reporter {
 public:
  virtual ~Reporter() = default;
  /// `started` counts jobs started before this one; `cached` says it is served from the cache.
  virtual void job_started(const plan::Job& job, size_t started, size_t total, bool cached) = 0;
  virtual void job_finished(const plan::Job& job, const JobOutcome& outcome, size_t finished, size_t total) = 0;
  /// Why a job is stale (--explain).
  virtual void explain(const plan::Job& job, const std::string& reason) = 0;
  virtual void info(std::string_view message) = 0;
  virtual void warning(std::string_view message) = 0;
};

struct TerminalOptions {
  bool verbose = false;  ///< print every command
  bool quiet = false;    ///< no progress lines; failures and warnings only
  bool explain = false;
  bool smart_terminal = false;  ///< rewrite the status line in place
  std::FILE* out = stdout;
};

class TerminalReporter final : public Reporter {
 public:
  explicit TerminalReporter(TerminalOptions options) : m_options(options) {}
  ~TerminalReporter() override;
  void job_started(const plan::Job& job, size_t started, size_t total, bool cached) override;
  void job_finished(const plan::Job& job, const JobOutcome& outcome, size_t finished, size_t total) override;
  void explain(const plan::Job& job, const std::string& reason) override;
  void info(std::string_view message) override;
  void warning(std::string_view message) override;

 private:
  void print_status(const std::string& line);
  void end_status_line();
  TerminalOptions m_options;
  bool m_status_pending = false;
};

/// Discards everything (tests, --quiet).
class NullReporter final : public Reporter {
 public:
  void job_started(const plan::Job&, size_t, size_t, bool) override {}
  void job_finished(const plan::Job&, const JobOutcome&, size_t, size_t) override {}
  void explain(const plan::Job&, const std::string&) override {}
  void info(std::string_view) override {}
  void warning(std::string_view) override {}
};

}  // namespace kbuild::exec
