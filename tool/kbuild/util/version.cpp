#include "kbuild/util/version.hpp"

#include <charconv>

namespace kbuild::util {

Version::Version(std::vector<unsigned> components) : m_parts(std::move(components)) {}

std::optional<Version> Version::parse(std::string_view text) {
  std::vector<unsigned> parts;
  size_t start = 0;
  while (true) {
    size_t dot = text.find('.', start);
    std::string_view piece = text.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (piece.empty() || piece.size() > 9) return std::nullopt;
    unsigned value = 0;
    auto [ptr, ec] = std::from_chars(piece.data(), piece.data() + piece.size(), value);
    if (ec != std::errc() || ptr != piece.data() + piece.size()) return std::nullopt;
    parts.push_back(value);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return Version(std::move(parts));
}

std::string Version::major_minor() const { return std::to_string(major()) + "." + std::to_string(minor()); }

std::string Version::str() const {
  std::string out;
  for (size_t i = 0; i < m_parts.size(); ++i) {
    if (i) out += '.';
    out += std::to_string(m_parts[i]);
  }
  return out;
}

std::strong_ordering Version::operator<=>(const Version& other) const {
  size_t n = std::max(m_parts.size(), other.m_parts.size());
  for (size_t i = 0; i < n; ++i) {
    if (auto c = component(i) <=> other.component(i); c != 0) return c;
  }
  return std::strong_ordering::equal;
}

}  // namespace kbuild::util
