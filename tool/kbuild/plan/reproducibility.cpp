#include "kbuild/plan/reproducibility.hpp"

#include <algorithm>
#include <cctype>

namespace kbuild::plan {

namespace {

bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The text with comments and literals blanked (newlines kept), so positions stay the same.
std::string code_only(std::string_view text) {
  std::string code(text);
  for (size_t i = 0; i < code.size(); ++i) {
    if (code[i] == '/' && i + 1 < code.size() && code[i + 1] == '/') {
      while (i < code.size() && code[i] != '\n') code[i++] = ' ';
    } else if (code[i] == '/' && i + 1 < code.size() && code[i + 1] == '*') {
      size_t end = code.find("*/", i + 2);
      end = end == std::string::npos ? code.size() : end + 2;
      for (; i < end; ++i)
        if (code[i] != '\n') code[i] = ' ';
      --i;
    } else if (code[i] == '"' || code[i] == '\'') {
      const char quote = code[i++];
      while (i < code.size() && code[i] != quote && code[i] != '\n') {
        if (code[i] == '\\' && i + 1 < code.size()) code[i++] = ' ';
        code[i++] = ' ';
      }
    }
  }
  return code;
}

// Offsets of `word` as a whole identifier in `code`.
std::vector<size_t> find_word(const std::string& code, std::string_view word) {
  std::vector<size_t> found;
  for (size_t at = code.find(word); at != std::string::npos; at = code.find(word, at + 1)) {
    bool starts = at == 0 || !identifier_char(code[at - 1]);
    bool ends = at + word.size() >= code.size() || !identifier_char(code[at + word.size()]);
    if (starts && ends) found.push_back(at);
  }
  return found;
}

ReproducibilityHazard at_offset(const std::string& code, size_t offset, std::string what) {
  ReproducibilityHazard hazard;
  hazard.line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < offset; ++i)
    if (code[i] == '\n') {
      ++hazard.line;
      line_start = i + 1;
    }
  hazard.column = offset - line_start + 1;
  hazard.what = std::move(what);
  return hazard;
}

}  // namespace

bool scanned_for_reproducibility(std::string_view path) {
  for (std::string_view ext : {".c", ".cc", ".cpp", ".cxx", ".cu", ".h", ".hh", ".hpp", ".cuh", ".inl"})
    if (path.ends_with(ext)) return true;
  return false;
}

std::vector<ReproducibilityHazard> reproducibility_hazards(std::string_view path, std::string_view text) {
  const std::string code = code_only(text);
  std::vector<std::pair<size_t, std::string>> found;
  for (std::string_view macro : {"__DATE__", "__TIME__", "__TIMESTAMP__"})
    for (size_t at : find_word(code, macro))
      found.emplace_back(at, std::string(macro) + " puts the time of the build into the object");
  if (path.ends_with(".cu"))
    for (size_t at : find_word(code, "namespace")) {
      size_t next = code.find_first_not_of(" \t\r\n", at + 9);
      if (next != std::string::npos && code[next] == '{')
        found.emplace_back(at,
                           "an anonymous namespace in a .cu file: nvcc names its device symbols after the "
                           "source's absolute path (use a named namespace)");
    }
  std::sort(found.begin(), found.end());
  std::vector<ReproducibilityHazard> hazards;
  for (auto& [offset, what] : found) hazards.push_back(at_offset(code, offset, std::move(what)));
  return hazards;
}

}  // namespace kbuild::plan
