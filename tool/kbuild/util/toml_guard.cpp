#include "kbuild/util/toml_guard.hpp"

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

}  // namespace kbuild::util
