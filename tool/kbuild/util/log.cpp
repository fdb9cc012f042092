#include "kbuild/util/log.hpp"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>
#include <set>

namespace kbuild::util::log {

namespace {

struct State {
  std::mutex mutex;
  std::set<std::string> secrets;
  std::function<void(Level, const std::string&)> capture;
  std::shared_ptr<spdlog::logger> stderr_logger;
  Level level = Level::info;
};

State& state() {
  static State instance;
  return instance;
}

spdlog::level::level_enum to_spdlog(Level level) {
  switch (level) {
    case Level::debug:
      return spdlog::level::debug;
    case Level::info:
      return spdlog::level::info;
    case Level::warn:
      return spdlog::level::warn;
    case Level::error:
      return spdlog::level::err;
    case Level::off:
      return spdlog::level::off;
  }
  return spdlog::level::info;
}

std::shared_ptr<spdlog::logger> stderr_logger() {
  State& s = state();
  if (!s.stderr_logger) {
    s.stderr_logger = std::make_shared<spdlog::logger>("kbuild", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    s.stderr_logger->set_pattern("%v");
    s.stderr_logger->set_level(spdlog::level::trace);  // filtering happens in write()
  }
  return s.stderr_logger;
}

bool token_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

}  // namespace

std::optional<Level> parse_level(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "debug" || lower == "trace") return Level::debug;
  if (lower == "info") return Level::info;
  if (lower == "warn" || lower == "warning") return Level::warn;
  if (lower == "error") return Level::error;
  if (lower == "off" || lower == "none") return Level::off;
  return std::nullopt;
}

Level level_for(bool verbose, bool quiet, const std::optional<std::string>& env_value) {
  if (env_value)
    if (auto level = parse_level(*env_value)) return *level;
  if (verbose) return Level::debug;
  if (quiet) return Level::warn;
  return Level::info;
}

void set_level(Level level) {
  std::lock_guard lock(state().mutex);
  state().level = level;
}

Level level() {
  std::lock_guard lock(state().mutex);
  return state().level;
}

bool enabled(Level level) { return level != Level::off && level >= log::level(); }

void add_secret(const std::string& secret) {
  if (secret.size() < 4) return;  // too short to search for without mangling ordinary text
  std::lock_guard lock(state().mutex);
  state().secrets.insert(secret);
}

std::string redact(std::string text) {
  std::set<std::string> secrets;
  {
    std::lock_guard lock(state().mutex);
    secrets = state().secrets;
  }
  for (const auto& secret : secrets)
    for (size_t pos = 0; (pos = text.find(secret, pos)) != std::string::npos;) {
      text.replace(pos, secret.size(), "hf_***");
      pos += 6;
    }
  // Token-shaped words: "hf_" followed by 20 or more token characters.
  for (size_t pos = 0; (pos = text.find("hf_", pos)) != std::string::npos;) {
    size_t end = pos + 3;
    while (end < text.size() && token_char(text[end])) ++end;
    bool word_start = pos == 0 || !token_char(text[pos - 1]);
    if (word_start && end - pos - 3 >= 20) {
      text.replace(pos, end - pos, "hf_***");
      pos += 6;
    } else {
      pos = end;
    }
  }
  return text;
}

void write(Level level, std::string_view message) {
  if (!enabled(level)) return;
  std::string line = redact(std::string(message));
  std::function<void(Level, const std::string&)> capture;
  {
    std::lock_guard lock(state().mutex);
    capture = state().capture;
  }
  if (capture) return capture(level, line);
  const char* prefix = level == Level::warn    ? "kbuild: warning: "
                       : level == Level::error ? "kbuild: error: "
                                               : "kbuild: ";
  stderr_logger()->log(to_spdlog(level), "{}{}", line.starts_with("kbuild: ") ? "" : prefix, line);
}

void capture_for_testing(std::function<void(Level, const std::string&)> sink) {
  std::lock_guard lock(state().mutex);
  state().capture = std::move(sink);
}

struct FileLog::Impl {
  std::shared_ptr<spdlog::logger> logger;
};

FileLog::FileLog() : m_impl(std::make_unique<Impl>()) {}
FileLog::FileLog(FileLog&&) noexcept = default;
FileLog& FileLog::operator=(FileLog&&) noexcept = default;
FileLog::~FileLog() {
  if (m_impl && m_impl->logger) m_impl->logger->flush();
}

Result<FileLog> FileLog::open(const std::filesystem::path& path) {
  FileLog log;
  try {
    auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path.string(), false);
    log.m_impl->logger = std::make_shared<spdlog::logger>("file:" + path.string(), sink);
    log.m_impl->logger->set_pattern("%v");
    log.m_impl->logger->flush_on(spdlog::level::trace);
  } catch (const spdlog::spdlog_ex& e) {
    return fail("cannot open the log " + path.string() + ": " + e.what());
  }
  return log;
}

void FileLog::line(std::string_view text) {
  if (m_impl && m_impl->logger) m_impl->logger->info("{}", redact(std::string(text)));
}

}  // namespace kbuild::util::log
