#include "kbuild/exec/macro_scan.hpp"

namespace kbuild::exec {

namespace {

bool identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}

// The end of a quoted literal starting at `open` (the quote), or npos when it does not end on its line.
size_t literal_end(std::string_view text, size_t open) {
  const char quote = text[open];
  for (size_t i = open + 1; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;  // an escape, or a line continuation
    } else if (text[i] == quote) {
      return i + 1;
    } else if (text[i] == '\n') {
      return std::string_view::npos;
    }
  }
  return std::string_view::npos;
}

// A quote that follows a digit is a C++14 digit separator (1'000), not a character literal.
bool digit_separator(std::string_view text, size_t quote) {
  if (quote == 0) return false;
  size_t start = quote;
  while (start > 0 && identifier_char(text[start - 1])) --start;
  return start < quote && text[start] >= '0' && text[start] <= '9';
}

}  // namespace

bool names_macro(std::string_view text, std::string_view macro) {
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n') i += (text[i] == '\\' && i + 1 < text.size()) ? 2 : 1;
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      size_t end = text.find("*/", i + 2);
      if (end == std::string_view::npos) return true;
      i = end + 2;
    } else if (c == '"' || (c == '\'' && !digit_separator(text, i))) {
      // A raw string (R"x(...)x") may hold anything, quotes and newlines included: not lexed.
      if (c == '"' && i > 0 && text[i - 1] == 'R') return true;
      size_t end = literal_end(text, i);
      if (end == std::string_view::npos) return true;
      i = end;
    } else if (identifier_char(c)) {
      size_t start = i;
      while (i < text.size() && identifier_char(text[i])) ++i;
      if (text.substr(start, i - start) == macro) return true;
    } else {
      ++i;
    }
  }
  return false;
}

}  // namespace kbuild::exec
