#include "kbuild/lock/version_spec.hpp"

#include <algorithm>
#include <charconv>

#include "kbuild/net/names.hpp"

namespace kbuild::lock {

std::string Release::str() const {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

namespace {

// A decimal number without sign or leading zeros (except "0"), at most 9 digits.
std::optional<std::uint64_t> parse_number(std::string_view text, bool allow_leading_zero) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  if (!allow_leading_zero && text.size() > 1 && text[0] == '0') return std::nullopt;
  std::uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

std::uint64_t component(const Release& release, int index) {
  return index == 0 ? release.major : index == 1 ? release.minor : release.patch;
}

bool prefix_equal(const Release& a, const Release& b, int components) {
  for (int i = 0; i < components; ++i)
    if (component(a, i) != component(b, i)) return false;
  return true;
}

Release bump(const Release& release, int index) {
  Release out;
  if (index == 0) out.major = release.major + 1;
  if (index == 1) out = {release.major, release.minor + 1, 0};
  if (index == 2) out = {release.major, release.minor, release.patch + 1};
  return out;
}

bool is_space(char c) { return c == ' ' || c == '\t'; }

}  // namespace

std::optional<Release> parse_release_tag(std::string_view tag) {
  if (!tag.starts_with('v')) return std::nullopt;
  tag.remove_prefix(1);
  size_t first = tag.find('.');
  if (first == std::string_view::npos) return std::nullopt;
  size_t second = tag.find('.', first + 1);
  if (second == std::string_view::npos) return std::nullopt;
  auto major = parse_number(tag.substr(0, first), false);
  auto minor = parse_number(tag.substr(first + 1, second - first - 1), false);
  auto patch = parse_number(tag.substr(second + 1), false);
  if (!major || !minor || !patch) return std::nullopt;
  return Release{*major, *minor, *patch};
}

std::optional<std::uint64_t> parse_version_branch(std::string_view branch) {
  if (!branch.starts_with('v')) return std::nullopt;
  return parse_number(branch.substr(1), true);
}

bool Comparison::matches(const Release& release) const {
  switch (op) {
    case Op::ge:
      return release >= version;
    case Op::gt:
      return release > version;
    case Op::le:
      return release <= version;
    case Op::lt:
      return release < version;
    case Op::eq:
      return release == version;
    case Op::ne:
      return release != version;
    case Op::eq_prefix:
      return prefix_equal(release, version, components);
    case Op::ne_prefix:
      return !prefix_equal(release, version, components);
  }
  return false;
}

bool Bounds::matches(const Release& release) const {
  return std::all_of(comparisons.begin(), comparisons.end(), [&](const Comparison& c) { return c.matches(release); });
}

namespace {

struct ClauseParser {
  std::string_view text;
  size_t base = 0;  // offset of `text` in the whole bound
  std::vector<Comparison>& out;

  std::expected<void, BoundsError> parse() {
    size_t pos = 0;
    while (pos < text.size() && is_space(text[pos])) ++pos;
    if (pos == text.size()) return error("empty clause", pos);
    static const std::string_view k_ops[] = {">=", "<=", "==", "!=", "~=", ">", "<", "=", "^", "~"};
    std::string_view op;
    for (std::string_view candidate : k_ops)
      if (text.substr(pos).starts_with(candidate)) {
        op = candidate;
        break;
      }
    size_t op_at = pos;
    pos += op.size();
    while (pos < text.size() && is_space(text[pos])) ++pos;
    size_t end = text.size();
    while (end > pos && is_space(text[end - 1])) --end;
    std::string_view version_text = text.substr(pos, end - pos);
    if (version_text.empty()) return error("expected a version after \"" + std::string(op) + "\"", pos);
    bool wildcard = version_text.ends_with(".*");
    if (wildcard) version_text.remove_suffix(2);
    Release version;
    int components = 0;
    size_t at = 0;
    while (true) {
      size_t dot = version_text.find('.', at);
      std::string_view piece = version_text.substr(at, dot == std::string_view::npos ? dot : dot - at);
      auto number = parse_number(piece, true);
      if (!number) {
        if (!piece.empty() && (piece[0] == 'v' || piece[0] == 'V'))
          return error("versions in bounds have no \"v\" prefix (write 1.2, not v1.2)", pos + at);
        return error("expected a number, found \"" + std::string(piece) + "\"", pos + at);
      }
      if (components == 3) return error("a version has at most three components (MAJOR.MINOR.PATCH)", pos + at);
      (components == 0 ? version.major : components == 1 ? version.minor : version.patch) = *number;
      ++components;
      if (dot == std::string_view::npos) break;
      at = dot + 1;
    }
    if (wildcard && op != "==" && op != "!=")
      return error("a wildcard (.*) is only allowed after == or !=", pos + version_text.size());
    if (wildcard) {
      out.push_back({op == "==" ? Comparison::Op::eq_prefix : Comparison::Op::ne_prefix, version, components});
      return {};
    }
    using Op = Comparison::Op;
    if (op.empty() || op == "==" || op == "=") {
      out.push_back({Op::eq, version, 3});
    } else if (op == "!=") {
      out.push_back({Op::ne, version, 3});
    } else if (op == ">=") {
      out.push_back({Op::ge, version, 3});
    } else if (op == ">") {
      out.push_back({Op::gt, version, 3});
    } else if (op == "<=") {
      out.push_back({Op::le, version, 3});
    } else if (op == "<") {
      out.push_back({Op::lt, version, 3});
    } else if (op == "~=") {
      if (components < 2) return error("~= needs at least MAJOR.MINOR (e.g. ~=1.4)", op_at);
      out.push_back({Op::ge, version, 3});
      out.push_back({Op::eq_prefix, version, components - 1});
    } else if (op == "^") {
      int keep = components - 1;  // index of the left-most non-zero component among those given
      for (int i = 0; i < components; ++i)
        if (component(version, i) != 0) {
          keep = i;
          break;
        }
      out.push_back({Op::ge, version, 3});
      out.push_back({Op::lt, bump(version, keep), 3});
    } else if (op == "~") {
      out.push_back({Op::ge, version, 3});
      out.push_back({Op::lt, bump(version, components == 1 ? 0 : 1), 3});
    }
    return {};
  }

  std::unexpected<BoundsError> error(std::string message, size_t offset) const {
    return std::unexpected(BoundsError{std::move(message), base + offset});
  }
};

}  // namespace

std::expected<Bounds, BoundsError> parse_bounds(std::string_view text) {
  Bounds bounds;
  bounds.text = std::string(text);
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string_view clause = text.substr(start, comma == std::string_view::npos ? comma : comma - start);
    ClauseParser parser{clause, start, bounds.comparisons};
    auto parsed = parser.parse();
    if (!parsed) return std::unexpected(parsed.error());
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return bounds;
}

bool is_commit_id(std::string_view text) {
  return (text.size() == 40 || text.size() == 64) && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
         });
}

std::expected<VersionSpec, BoundsError> parse_version_string(std::string_view text) {
  if (is_commit_id(text)) {
    std::string lower(text);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    return RevisionSpec{lower};
  }
  size_t first = 0;
  while (first < text.size() && is_space(text[first])) ++first;
  if (first == text.size()) return std::unexpected(BoundsError{"empty version", 0});
  char c = text[first];
  if (std::string_view("<>=!~^").find(c) != std::string_view::npos || (c >= '0' && c <= '9')) {
    auto bounds = parse_bounds(text);
    if (!bounds) return std::unexpected(bounds.error());
    return BoundsSpec{std::move(*bounds)};
  }
  if (!net::is_valid_ref_name(text))
    return std::unexpected(BoundsError{
        "\"" + std::string(text) + "\" is neither a version bound nor a valid tag, " + "branch or commit name", 0});
  return RevisionSpec{std::string(text)};
}

std::string describe(const VersionSpec& spec) {
  if (auto* major = std::get_if<MajorSpec>(&spec)) return std::to_string(major->major);
  if (auto* bounds = std::get_if<BoundsSpec>(&spec)) return bounds->bounds.text;
  return std::get<RevisionSpec>(spec).revision;
}

}  // namespace kbuild::lock
