#pragma once
// The side-effect seams besides files and processes (util/fs.hpp, util/process.hpp): the
// environment, the clock and randomness. Core logic takes them as interfaces; the executable passes
// the real ones (below), unit tests pass the fixed ones (below, data-driven), so results do not
// depend on the machine, the time or chance.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace kbuild::util {

/// Environment variables.
class Environment {
 public:
  virtual ~Environment() = default;
  /// The value of `name`; nullopt when unset (an empty value is returned as "").
  virtual std::optional<std::string> get(const std::string& name) const = 0;
  /// Every variable (for child processes and for code that looks up several names).
  virtual std::map<std::string, std::string> all() const = 0;
  /// The value, or `fallback` when unset or empty.
  std::string get_or(const std::string& name, const std::string& fallback) const;
};

/// The process's environment, read at each call.
class RealEnvironment final : public Environment {
 public:
  std::optional<std::string> get(const std::string& name) const override;
  std::map<std::string, std::string> all() const override;
};

/// A fixed set of variables.
class MapEnvironment final : public Environment {
 public:
  MapEnvironment() = default;
  explicit MapEnvironment(std::map<std::string, std::string> values) : values(std::move(values)) {}
  std::optional<std::string> get(const std::string& name) const override;
  std::map<std::string, std::string> all() const override { return values; }
  std::map<std::string, std::string> values;
};

/// Time: a monotonic clock for durations, the wall clock for timestamps.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::chrono::steady_clock::time_point now() const = 0;
  /// Milliseconds since the Unix epoch.
  virtual std::int64_t unix_ms() const = 0;
  double seconds_since(std::chrono::steady_clock::time_point start) const {
    return std::chrono::duration<double>(now() - start).count();
  }
};

class RealClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point now() const override { return std::chrono::steady_clock::now(); }
  std::int64_t unix_ms() const override;
};

/// A clock that only moves when told to.
class ManualClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point now() const override { return m_now; }
  std::int64_t unix_ms() const override { return m_unix_ms; }
  void advance(double seconds) {
    m_now += std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
    m_unix_ms += static_cast<std::int64_t>(seconds * 1000);
  }

 private:
  std::chrono::steady_clock::time_point m_now{};
  std::int64_t m_unix_ms = 1'700'000'000'000;
};

/// Unpredictable bytes (ids, tokens, temporary names).
class Random {
 public:
  virtual ~Random() = default;
  virtual std::string bytes(size_t count) = 0;
};

/// The kernel's CSPRNG (getrandom(2)).
class RealRandom final : public Random {
 public:
  std::string bytes(size_t count) override;
};

/// A repeatable sequence (a counter), for tests.
class SequenceRandom final : public Random {
 public:
  std::string bytes(size_t count) override;

 private:
  std::uint64_t m_next = 1;
};

}  // namespace kbuild::util
