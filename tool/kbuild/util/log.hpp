#pragma once
// kbuild's log, spdlog behind a small facade (modules log without depending on spdlog).
//
// Levels: debug (-v: every request, probe and command), info (default), warn (-q), error, off.
// KBUILD_LOG=debug|info|warn|error|off overrides the command line. Lines go to stderr as
// "kbuild: <message>" (warnings "kbuild: warning: ..."), or to the sinks a program opens (the
// registry's access log). Every line passes through redaction first: registered secrets (Hub tokens)
// and anything that looks like a token ("hf_" + 20 or more characters) are replaced by "hf_***", so
// no secret reaches a log even when a message carries one.

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "kbuild/util/result.hpp"

namespace kbuild::util::log {

enum class Level { debug, info, warn, error, off };

/// Parses a level name (case-insensitive); nullopt otherwise.
std::optional<Level> parse_level(std::string_view name);
/// The level from -v/-q, unless `env_value` (KBUILD_LOG) names one.
Level level_for(bool verbose, bool quiet, const std::optional<std::string>& env_value);

/// Sets the level of the stderr log (default info).
void set_level(Level level);
Level level();
bool enabled(Level level);

/// Registers a secret that must never appear in any log line (e.g. the Hub token in use).
void add_secret(const std::string& secret);
/// `text` with every registered secret, and every token-looking word, replaced by "hf_***".
std::string redact(std::string text);

void write(Level level, std::string_view message);
inline void debug(std::string_view message) { write(Level::debug, message); }
inline void info(std::string_view message) { write(Level::info, message); }
inline void warn(std::string_view message) { write(Level::warn, message); }
inline void error(std::string_view message) { write(Level::error, message); }

/// Sends stderr log lines to `sink` instead (tests); an empty function restores stderr.
void capture_for_testing(std::function<void(Level, const std::string&)> sink);

/// A log file (the registry's access and error logs): one line per call, appended, flushed, redacted.
/// Thread-safe.
class FileLog {
 public:
  static Result<FileLog> open(const std::filesystem::path& path);
  FileLog(FileLog&&) noexcept;
  FileLog& operator=(FileLog&&) noexcept;
  ~FileLog();
  void line(std::string_view text);

 private:
  FileLog();
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

}  // namespace kbuild::util::log
