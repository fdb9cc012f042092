#include "kbuild/util/toml_guard.hpp"

#include <cctype>
#include <utility>
#include <vector>

namespace kbuild::util {

namespace {

// A small TOML lexer that knows just enough: strings (basic, literal, multi-line), comments, where
// keys stand (line start, a table header, after '{' or ',' in an inline table) and the nesting of
// arrays and inline tables in values.
class ShapeScanner {
 public:
  explicit ShapeScanner(std::string_view text) : m_text(text) {}

  std::optional<TomlShapeProblem> run() {
    bool in_key = true;  // at the start of the document: a key (or a header) comes first
    while (m_at < m_text.size()) {
      char c = m_text[m_at];
      if (c == '"' || c == '\'') {
        skip_string(c);
        continue;
      }
      if (c == '#') {
        while (m_at < m_text.size() && m_text[m_at] != '\n') advance();
        continue;
      }
      if (c == '\n') {
        advance();
        if (m_open.empty()) in_key = true, m_key_parts = 1;
        continue;
      }
      if (in_key && c == '.' && ++m_key_parts > k_max_toml_key_parts)
        return problem("a dotted key of more than " + std::to_string(k_max_toml_key_parts) + " parts");
      if (in_key && m_open.empty() && c == '[' && !m_header) {
        m_header = true;  // [table] or [[array of tables]]: a key until ']'
      } else if (c == '=' && in_key) {
        in_key = false;
      } else if ((c == '[' || c == '{') && !in_key) {
        m_open.push_back(c);
        if (m_open.size() > k_max_toml_nesting)
          return problem("arrays or inline tables nested more than " + std::to_string(k_max_toml_nesting) + " deep");
        if (c == '{') in_key = true, m_key_parts = 1;
      } else if (c == ']' || c == '}') {
        if (m_header && m_open.empty()) {
          m_header = false;
        } else if (!m_open.empty()) {
          m_open.pop_back();
          in_key = false;  // a closed array or inline table is a value: what follows is ',' or the end
        }
      } else if (c == ',' && !m_open.empty()) {
        in_key = m_open.back() == '{';  // the next key of an inline table, or the next array element
        m_key_parts = 1;
      }
      advance();
    }
    return std::nullopt;
  }

 private:
  void advance() {
    if (m_text[m_at] == '\n') {
      ++m_line;
      m_column = 1;
    } else {
      ++m_column;
    }
    ++m_at;
  }

  void skip_string(char quote) {
    const bool multi = m_text.substr(m_at, 3) == std::string(3, quote);
    for (int i = 0; i < (multi ? 3 : 1); ++i) advance();
    while (m_at < m_text.size()) {
      char c = m_text[m_at];
      if (quote == '"' && c == '\\' && m_at + 1 < m_text.size()) {
        advance();
        advance();
        continue;
      }
      if (!multi && c == '\n') return;  // unterminated: the parser says so
      if (multi ? m_text.substr(m_at, 3) == std::string(3, quote) : c == quote) {
        for (int i = 0; i < (multi ? 3 : 1); ++i) advance();
        // TOML lets a multi-line string end with one or two quotes of its own right before the
        // delimiter (four quotes: the string ends in one): they belong to the string.
        for (int i = 0; multi && i < 2 && m_at < m_text.size() && m_text[m_at] == quote; ++i) advance();
        return;
      }
      advance();
    }
  }

  TomlShapeProblem problem(std::string message) const { return {m_line, m_column, std::move(message)}; }

  std::string_view m_text;
  std::size_t m_at = 0, m_line = 1, m_column = 1;
  std::size_t m_key_parts = 1;
  bool m_header = false;
  std::vector<char> m_open;  ///< '[' and '{' of values, innermost last
};

}  // namespace

std::optional<TomlShapeProblem> toml_shape_problem(std::string_view text) { return ShapeScanner(text).run(); }

namespace {

bool starts_code_point(char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }

/// Byte index of (line, column) in `text`; columns count code points.
std::size_t byte_index(std::string_view text, TomlPosition at) {
  std::size_t i = 0;
  for (std::size_t line = 1; line < at.line && i < text.size(); ++i)
    if (text[i] == '\n') ++line;
  for (std::size_t column = 1; column < at.column && i < text.size();) {
    ++i;
    if (i < text.size() && starts_code_point(text[i])) ++column;
  }
  return i;
}

TomlPosition position_of(std::string_view text, std::size_t index) {
  TomlPosition at{1, 1};
  for (std::size_t i = 0; i < index && i < text.size(); ++i) {
    if (text[i] == '\n') {
      at = {at.line + 1, 1};
    } else if (i + 1 < text.size() && starts_code_point(text[i + 1])) {
      ++at.column;
    }
  }
  return at;
}

/// How many bytes the escape at text[i] (a backslash) decodes to, and its length in the source.
std::pair<std::size_t, std::size_t> escape_size(std::string_view text, std::size_t i) {
  char kind = i + 1 < text.size() ? text[i + 1] : '\0';
  std::size_t digits = kind == 'u' ? 4 : kind == 'U' ? 8 : 0;
  if (digits == 0) return {1, 2};
  unsigned long code = 0;
  for (std::size_t d = 0; d < digits && i + 2 + d < text.size(); ++d) {
    char c = text[i + 2 + d];
    int value = c >= '0' && c <= '9' ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10 : 0;
    code = code * 16 + static_cast<unsigned long>(value);
  }
  std::size_t bytes = code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
  return {bytes, 2 + digits};
}

}  // namespace

TomlPosition toml_string_position(std::string_view text, TomlPosition opening, std::size_t offset) {
  std::size_t i = byte_index(text, opening);
  if (i >= text.size()) return opening;
  const char quote = text[i];
  const std::string_view delimiter = text.substr(i, 3) == std::string(3, quote) ? text.substr(i, 3) : text.substr(i, 1);
  const bool multi_line = delimiter.size() == 3;
  i += delimiter.size();
  if (multi_line && text.substr(i, 2) == "\r\n") {
    i += 2;
  } else if (multi_line && i < text.size() && text[i] == '\n') {
    ++i;
  }
  std::size_t produced = 0;
  while (i < text.size() && text.substr(i, delimiter.size()) != delimiter) {
    if (quote == '"' && text[i] == '\\') {
      std::size_t after = i + 1;
      while (multi_line && after < text.size() && (text[after] == ' ' || text[after] == '\t')) ++after;
      if (multi_line && after < text.size() && (text[after] == '\n' || text[after] == '\r')) {
        while (after < text.size() && std::isspace(static_cast<unsigned char>(text[after]))) ++after;
        i = after;  // a line-ending backslash: it and the whitespace after it decode to nothing
        continue;
      }
      auto [bytes, length] = escape_size(text, i);
      if (offset < produced + bytes) break;
      produced += bytes;
      i += length;
      continue;
    }
    if (offset <= produced) break;
    if (text.substr(i, 2) == "\r\n") ++i;  // one decoded newline
    ++produced;
    ++i;
  }
  return position_of(text, i);
}

}  // namespace kbuild::util
