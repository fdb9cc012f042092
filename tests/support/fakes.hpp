#pragma once
// Data-driven fakes for the seams of usecase::Services: processes, commands, HTTP, the reporter.

#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/exec/action_runner.hpp"
#include "kbuild/exec/command_runner.hpp"
#include "kbuild/exec/reporter.hpp"
#include "kbuild/net/http.hpp"
#include "kbuild/util/process.hpp"
#include "support/mem_fs.hpp"

namespace kbuild::fakes {

/// Answers commands from a table keyed by the full command line (argv joined with spaces).
/// Unknown commands fail to start, like a missing program.
class FakeLauncher final : public util::ProcessLauncher {
 public:
  std::map<std::string, util::ProcessResult> answers;
  /// Consulted when no exact answer matches: the first entry whose key starts the command line.
  std::vector<std::pair<std::string, util::ProcessResult>> prefix_answers;
  std::vector<std::string> ran;
  /// What find() answers: program -> path (a program with '/' is found as itself).
  std::map<std::string, std::filesystem::path> programs;
  /// Consulted first, with the options too (e.g. to write the files a program would write, or to
  /// check its environment); nullopt falls through to the tables.
  std::function<std::optional<util::ProcessResult>(const std::vector<std::string>&, const util::ProcessOptions&)>
      handler;

  Result<util::ProcessResult> run(const std::vector<std::string>& argv, const util::ProcessOptions& = {}) override;
  std::optional<std::filesystem::path> find(const std::string& program) const override;
};

/// Runs build commands against a MemFileSystem: a command "succeeds" by writing the file after
/// "-o" (content: the command line) and, when given "-MF <file>", a depfile listing the inputs in
/// `headers` for that output. Scripted failures come from `failures` (output path -> exit code).
/// Commands finish in the order they were started.
class FakeCommandRunner final : public exec::CommandRunner {
 public:
  explicit FakeCommandRunner(MemFileSystem& fs) : m_fs(fs) {}

  std::map<std::string, std::vector<std::string>> headers;  ///< output path -> extra prerequisites
  std::map<std::string, int> failures;                      ///< output path -> exit code
  std::string poison;  ///< non-empty: a command fails when a file named in its argv holds exactly this
  std::vector<std::vector<std::string>> started;  ///< every argv started
  size_t max_concurrent = 0;                      ///< highest number running at once
  std::map<std::string, std::uint64_t> peak_kib;  ///< output path -> the peak memory its command reports

  Result<void> start(size_t token, const std::vector<std::string>& argv,
                     const std::map<std::string, std::string>& env = {}) override;
  std::optional<exec::CommandResult> wait() override;
  void abort_all() override { m_queue.clear(); }
  size_t running() const override { return m_queue.size(); }

 private:
  MemFileSystem& m_fs;
  std::deque<std::pair<size_t, std::vector<std::string>>> m_queue;
};

/// Performs WriteFiles actions on a MemFileSystem (InstallVariant: writes metadata.json only) and
/// records the jobs it ran; with `fail`, every action fails.
class RecordingActions final : public exec::ActionRunner {
 public:
  explicit RecordingActions(MemFileSystem& fs) : m_fs(fs) {}
  std::vector<std::string> ran;
  bool fail = false;
  Result<void> run(const plan::Job& job) override;

 private:
  MemFileSystem& m_fs;
};

/// Answers HTTP requests from a table keyed by "METHOD URL" (the URL without its query), then by
/// the longest "METHOD URL-prefix*" entry; anything else is a 404. Records every request.
class FakeHttp final : public net::HttpTransport {
 public:
  std::map<std::string, net::HttpResponse> answers;
  std::vector<net::HttpRequest> requests;
  /// A key-value server (a cache server): a PUT is answered 201 and its body becomes the answer to
  /// GETs of the same URL.
  bool store_puts = false;
  std::expected<net::HttpResponse, net::TransportError> send(const net::HttpRequest& request) override;
  /// Shorthand: a JSON (or any) 200 answer for "METHOD URL".
  void answer(const std::string& key, std::string body, int status = 200);
};

/// Records what a use case says: info lines, warnings, diagnostics, transfers; answers confirm()
/// with `confirm_answer`, recording the questions.
class RecordingReporter final : public exec::Reporter {
 public:
  std::vector<std::string> infos;
  std::vector<std::string> warnings;
  std::vector<std::string> started;  ///< job ids, " (cached)" appended when served from the cache
  std::vector<config::Diagnostic> found;
  std::vector<std::string> questions;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> transfers;
  bool confirm_answer = false;
  void job_started(const plan::Job& job, size_t, size_t, bool cached) override {
    started.push_back(job.id + (cached ? " (cached)" : ""));
  }
  void job_finished(const plan::Job&, const exec::JobOutcome&, size_t, size_t) override {}
  void explain(const plan::Job&, const std::string&) override {}
  void info(std::string_view message) override { infos.emplace_back(message); }
  void warning(std::string_view message) override { warnings.emplace_back(message); }
  void diagnostics(const std::vector<config::Diagnostic>& all) override {
    found.insert(found.end(), all.begin(), all.end());
  }
  void transfer(std::string_view, std::uint64_t done, std::uint64_t total) override {
    transfers.emplace_back(done, total);
  }
  bool confirm(std::string_view question) override {
    questions.emplace_back(question);
    return confirm_answer;
  }
};

}  // namespace kbuild::fakes
