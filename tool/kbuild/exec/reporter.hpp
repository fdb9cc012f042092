#pragma once
// Where build progress goes. TerminalReporter prints "[n/m] DESCRIPTION" lines (rewriting one line
// in place on a terminal, like ninja), the command with -v, and a failing job's command and output.
// While a command runs long (a CUDA compile for many architectures takes minutes), the live line
// shows the longest-running one with its elapsed time, once a second; on a plain output (a CI log)
// a "still running" line is printed each minute instead.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kbuild/config/diagnostic.hpp"
#include "kbuild/plan/graph.hpp"

namespace kbuild::exec {

struct JobOutcome {
  bool success = true;
  bool cache_hit = false;
  int exit_code = 0;
  std::string output;  ///< compiler output (warnings or errors)
  std::string error;   ///< for in-process jobs: the error message
  double seconds = 0;
  std::uint64_t peak_rss_kib = 0;  ///< for commands: CommandResult::peak_rss_kib
};

class Reporter {
 public:
  virtual ~Reporter() = default;
  /// `started` counts jobs started before this one; `cached` says it is served from the cache.
  virtual void job_started(const plan::Job& job, size_t started, size_t total, bool cached) = 0;
  virtual void job_finished(const plan::Job& job, const JobOutcome& outcome, size_t finished, size_t total) = 0;
  /// A started job was killed (interrupt): it will not finish.
  virtual void job_aborted(const plan::Job&) {}
  /// Why a job is stale (--explain).
  virtual void explain(const plan::Job& job, const std::string& reason) = 0;
  virtual void info(std::string_view message) = 0;
  virtual void warning(std::string_view message) = 0;
  /// The problems found in an input file (build.toml, pyproject.toml), all of them at once.
  virtual void diagnostics(const std::vector<config::Diagnostic>&) {}
  /// Progress of a long transfer (an upload): bytes done of `total`; a live line on a terminal only.
  virtual void transfer(std::string_view /*what*/, std::uint64_t /*done*/, std::uint64_t /*total*/) {}
  /// A yes/no question before something costly (gigabytes of downloads). False where nobody can
  /// answer (no terminal, --json, tests): the use case then refuses with a hint instead of waiting.
  virtual bool confirm(std::string_view /*question*/) { return false; }
};

struct TerminalOptions {
  bool verbose = false;  ///< print every command
  bool quiet = false;    ///< no progress lines; failures and warnings only
  bool explain = false;
  bool smart_terminal = false;  ///< rewrite the status line in place
  std::FILE* out = stdout;      ///< progress, the summary
  std::FILE* err = stderr;      ///< compiler output (errors and warnings), failed jobs
  /// How often the elapsed time of long commands is shown (a terminal: the live line; else a line).
  std::chrono::milliseconds tick{1000};
  std::chrono::seconds long_after{5};  ///< a command counts as long from this age on (terminal)
  std::chrono::seconds log_every{60};  ///< plain output: a "still running" line this often
  /// confirm() asks on stderr and reads the answer from stdin (when both are terminals).
  bool interactive = false;
};

/// "[3/12] CUDA img2gray.cu [torch211-...]  (1 min 05 s)": a status line with a running time.
std::string with_elapsed(const std::string& status, double seconds);

class TerminalReporter final : public Reporter {
 public:
  explicit TerminalReporter(TerminalOptions options);
  ~TerminalReporter() override;
  void job_started(const plan::Job& job, size_t started, size_t total, bool cached) override;
  void job_finished(const plan::Job& job, const JobOutcome& outcome, size_t finished, size_t total) override;
  void job_aborted(const plan::Job& job) override;
  void explain(const plan::Job& job, const std::string& reason) override;
  void info(std::string_view message) override;
  void warning(std::string_view message) override;
  void diagnostics(const std::vector<config::Diagnostic>& found) override;
  void transfer(std::string_view what, std::uint64_t done, std::uint64_t total) override;
  bool confirm(std::string_view question) override;
  /// Ends a live progress line, so that what the caller prints next starts a line of its own.
  void finish();

 private:
  using Clock = std::chrono::steady_clock;
  void print_status(const std::string& line);
  void end_status_line();
  /// The ticker thread: shows the elapsed time of the longest-running command.
  void tick_loop();
  void tick_while_running(std::unique_lock<std::mutex>& lock);
  TerminalOptions m_options;
  bool m_status_pending = false;
  std::string m_status;                                                        ///< the last "[n/m] ..." line
  std::map<std::string, std::pair<std::string, Clock::time_point>> m_running;  ///< job id -> (description, start)
  std::set<std::string> m_shown_outputs;  ///< compiler outputs printed already (each once)
  Clock::time_point m_last_log{};
  Clock::time_point m_transfer_start{};  ///< when the transfer shown on the live line began
  std::mutex m_mutex;                    ///< the executor's thread and the ticker both print
  std::condition_variable m_wake;
  bool m_stopping = false;
  std::thread m_ticker;
};

/// Prints diagnostics to `err`, the first 50 of them (the ones a user fixes first) and a count of the rest.
void print_diagnostics(std::FILE* err, const std::vector<config::Diagnostic>& found);

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
