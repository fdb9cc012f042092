#pragma once
// Dot-separated numeric versions as build.toml uses them ("2.10", "13.0.2"). Trailing zero
// components are not significant: "2.10.0" == "2.10" (kernel-builder's kernels-data/version.rs).

#include <compare>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kbuild::util {

class Version {
 public:
  Version() = default;
  explicit Version(std::vector<unsigned> components);
  /// Parses "2", "2.11", "13.0.88"; nullopt on anything else (empty parts, signs, letters).
  static std::optional<Version> parse(std::string_view text);

  unsigned major() const { return component(0); }
  unsigned minor() const { return component(1); }
  unsigned component(size_t i) const { return i < m_parts.size() ? m_parts[i] : 0; }
  const std::vector<unsigned>& components() const { return m_parts; }
  /// The first two components, "2.11".
  std::string major_minor() const;
  std::string str() const;

  std::strong_ordering operator<=>(const Version& other) const;
  bool operator==(const Version& other) const { return (*this <=> other) == 0; }

 private:
  std::vector<unsigned> m_parts;
};

}  // namespace kbuild::util
