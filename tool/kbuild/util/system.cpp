#include "kbuild/util/system.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cstdlib>
#include <random>

extern char** environ;

namespace kbuild::util {

std::string Environment::get_or(const std::string& name, const std::string& fallback) const {
  auto value = get(name);
  return value && !value->empty() ? *value : fallback;
}

std::optional<std::string> RealEnvironment::get(const std::string& name) const {
  const char* value = std::getenv(name.c_str());
  if (!value) return std::nullopt;
  return std::string(value);
}

std::map<std::string, std::string> RealEnvironment::all() const {
  std::map<std::string, std::string> env;
  for (char** entry = environ; *entry; ++entry) {
    std::string text(*entry);
    size_t eq = text.find('=');
    if (eq != std::string::npos) env[text.substr(0, eq)] = text.substr(eq + 1);
  }
  return env;
}

std::optional<std::string> MapEnvironment::get(const std::string& name) const {
  auto it = values.find(name);
  if (it == values.end()) return std::nullopt;
  return it->second;
}

std::int64_t RealClock::unix_ms() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string RealRandom::bytes(size_t count) {
  std::string out(count, '\0');
  size_t filled = 0;
  while (filled < count) {
    ssize_t n = ::getrandom(out.data() + filled, count - filled, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // no getrandom (very old kernels): the library's source of entropy
      std::random_device device;
      for (; filled < count; ++filled) out[filled] = static_cast<char>(device() & 0xff);
      break;
    }
    filled += static_cast<size_t>(n);
  }
  return out;
}

std::string SequenceRandom::bytes(size_t count) {
  std::string out(count, '\0');
  for (size_t i = 0; i < count; ++i) out[i] = static_cast<char>((m_next >> (8 * (i % 8))) & 0xff);
  ++m_next;
  return out;
}

}  // namespace kbuild::util
