#include "kbuild/server/attributes.hpp"

#include "kbuild/util/strings.hpp"

namespace kbuild::server {

// ---------------------------------------------------------------------------------------------
// Git wildmatch

namespace {

// Matches a "[...]" class starting at p[pi] == '['; sets `next` to the index after ']'. A malformed
// class (no closing bracket) matches nothing.
bool match_class(std::string_view p, size_t pi, char c, size_t& next) {
  size_t i = pi + 1;
  bool negate = i < p.size() && (p[i] == '!' || p[i] == '^');
  if (negate) ++i;
  bool matched = false;
  bool first = true;
  while (i < p.size() && (p[i] != ']' || first)) {
    first = false;
    char lo = p[i];
    if (lo == '\\' && i + 1 < p.size()) lo = p[++i];
    char hi = lo;
    if (i + 2 < p.size() && p[i + 1] == '-' && p[i + 2] != ']') {
      hi = p[i + 2];
      if (hi == '\\' && i + 3 < p.size()) hi = p[++i + 2];
      i += 2;
    }
    if (c >= lo && c <= hi) matched = true;
    ++i;
  }
  if (i >= p.size()) return false;
  next = i + 1;
  return matched != negate;
}

bool wildmatch_at(std::string_view p, std::string_view t) {
  size_t pi = 0, ti = 0;
  while (pi < p.size()) {
    char c = p[pi];
    if (c == '*') {
      bool is_double = pi + 1 < p.size() && p[pi + 1] == '*';
      bool starts_component = pi == 0 || p[pi - 1] == '/';
      size_t after = pi + 2;
      if (is_double && starts_component && (after == p.size() || p[after] == '/')) {
        if (after == p.size()) return true;  // "a/**" or "**": everything below
        std::string_view rest = p.substr(after + 1);
        if (wildmatch_at(rest, t.substr(ti))) return true;  // "**/" as zero directories
        for (size_t k = ti; k < t.size(); ++k)
          if (t[k] == '/' && wildmatch_at(rest, t.substr(k + 1))) return true;
        return false;
      }
      while (pi < p.size() && p[pi] == '*') ++pi;
      std::string_view rest = p.substr(pi);
      for (size_t k = ti;; ++k) {
        if (wildmatch_at(rest, t.substr(k))) return true;
        if (k >= t.size() || t[k] == '/') return false;
      }
    }
    if (ti >= t.size()) return false;
    if (c == '?') {
      if (t[ti] == '/') return false;
      ++pi, ++ti;
      continue;
    }
    if (c == '[') {
      size_t next = 0;
      if (t[ti] == '/' || !match_class(p, pi, t[ti], next)) return false;
      pi = next, ++ti;
      continue;
    }
    if (c == '\\' && pi + 1 < p.size()) c = p[++pi];
    if (c != t[ti]) return false;
    ++pi, ++ti;
  }
  return ti == t.size();
}

std::string_view basename_of(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Splits a .gitattributes/.gitignore text into trimmed, non-comment lines.
std::vector<std::string> pattern_lines(std::string_view text) {
  std::vector<std::string> lines;
  for (auto& line : util::split(text, '\n')) {
    std::string_view trimmed = util::trim(line);
    if (trimmed.empty() || trimmed.front() == '#') continue;
    lines.emplace_back(trimmed);
  }
  return lines;
}

}  // namespace

bool wildmatch(std::string_view pattern, std::string_view path) { return wildmatch_at(pattern, path); }

GitAttributes::GitAttributes(std::string_view text) {
  for (const auto& line : pattern_lines(text)) {
    std::vector<std::string> words;
    for (auto& word : util::split(line, ' '))
      for (auto& piece : util::split(word, '\t'))
        if (!piece.empty()) words.push_back(piece);
    if (words.size() < 2) continue;
    std::optional<bool> lfs;
    for (size_t i = 1; i < words.size(); ++i) {
      const auto& attribute = words[i];
      if (attribute == "filter=lfs")
        lfs = true;
      else if (attribute == "-filter" || attribute == "!filter" || attribute.starts_with("filter="))
        lfs = false;
    }
    if (!lfs) continue;
    std::string pattern = words[0];
    if (pattern.starts_with("/")) pattern.erase(0, 1);
    m_rules.push_back({std::move(pattern), *lfs});
  }
}

bool GitAttributes::is_lfs(std::string_view path) const {
  bool lfs = false;
  for (const auto& rule : m_rules) {
    bool has_slash = rule.pattern.find('/') != std::string::npos;
    if (wildmatch(rule.pattern, has_slash ? path : basename_of(path))) lfs = rule.lfs;
  }
  return lfs;
}

GitIgnore::GitIgnore(std::string_view text) {
  for (auto line : pattern_lines(text)) {
    Rule rule;
    if (line.starts_with("!")) {
      rule.negated = true;
      line.erase(0, 1);
    }
    if (line.ends_with("/")) {
      rule.directory_only = true;
      line.pop_back();
    }
    if (line.starts_with("/")) {
      rule.anchored = true;
      line.erase(0, 1);
    }
    if (line.find('/') != std::string::npos) rule.anchored = true;
    if (line.empty()) continue;
    rule.pattern = std::move(line);
    m_rules.push_back(std::move(rule));
  }
}

std::optional<bool> GitIgnore::match(std::string_view path, bool is_directory) const {
  std::optional<bool> ignored;
  for (const auto& rule : m_rules) {
    if (rule.directory_only && !is_directory) continue;
    if (wildmatch(rule.pattern, rule.anchored ? path : basename_of(path))) ignored = !rule.negated;
  }
  return ignored;
}

bool GitIgnore::is_ignored(std::string_view path) const {
  if (m_rules.empty()) return false;
  for (size_t slash = path.find('/'); slash != std::string_view::npos; slash = path.find('/', slash + 1))
    if (match(path.substr(0, slash), true).value_or(false)) return true;
  return match(path, false).value_or(false);
}

bool use_lfs(const GitAttributes& attributes, std::string_view path, std::uint64_t size, std::string_view sample) {
  if (size == 0) return false;
  if (attributes.is_lfs(path)) return true;
  if (sample.substr(0, 512).find('\0') != std::string_view::npos) return true;
  return size >= k_lfs_size_threshold;
}

std::string_view default_gitattributes() {
  return "*.7z filter=lfs diff=lfs merge=lfs -text\n"
         "*.arrow filter=lfs diff=lfs merge=lfs -text\n"
         "*.bin filter=lfs diff=lfs merge=lfs -text\n"
         "*.bz2 filter=lfs diff=lfs merge=lfs -text\n"
         "*.ckpt filter=lfs diff=lfs merge=lfs -text\n"
         "*.ftz filter=lfs diff=lfs merge=lfs -text\n"
         "*.gz filter=lfs diff=lfs merge=lfs -text\n"
         "*.h5 filter=lfs diff=lfs merge=lfs -text\n"
         "*.joblib filter=lfs diff=lfs merge=lfs -text\n"
         "*.lfs.* filter=lfs diff=lfs merge=lfs -text\n"
         "*.mlmodel filter=lfs diff=lfs merge=lfs -text\n"
         "*.model filter=lfs diff=lfs merge=lfs -text\n"
         "*.msgpack filter=lfs diff=lfs merge=lfs -text\n"
         "*.npy filter=lfs diff=lfs merge=lfs -text\n"
         "*.npz filter=lfs diff=lfs merge=lfs -text\n"
         "*.onnx filter=lfs diff=lfs merge=lfs -text\n"
         "*.ot filter=lfs diff=lfs merge=lfs -text\n"
         "*.parquet filter=lfs diff=lfs merge=lfs -text\n"
         "*.pb filter=lfs diff=lfs merge=lfs -text\n"
         "*.pickle filter=lfs diff=lfs merge=lfs -text\n"
         "*.pkl filter=lfs diff=lfs merge=lfs -text\n"
         "*.pt filter=lfs diff=lfs merge=lfs -text\n"
         "*.pth filter=lfs diff=lfs merge=lfs -text\n"
         "*.rar filter=lfs diff=lfs merge=lfs -text\n"
         "*.safetensors filter=lfs diff=lfs merge=lfs -text\n"
         "saved_model/**/* filter=lfs diff=lfs merge=lfs -text\n"
         "*.tar.* filter=lfs diff=lfs merge=lfs -text\n"
         "*.tar filter=lfs diff=lfs merge=lfs -text\n"
         "*.tflite filter=lfs diff=lfs merge=lfs -text\n"
         "*.tgz filter=lfs diff=lfs merge=lfs -text\n"
         "*.wasm filter=lfs diff=lfs merge=lfs -text\n"
         "*.xz filter=lfs diff=lfs merge=lfs -text\n"
         "*.zip filter=lfs diff=lfs merge=lfs -text\n"
         "*.zst filter=lfs diff=lfs merge=lfs -text\n"
         "*tfevents* filter=lfs diff=lfs merge=lfs -text\n";
}

}  // namespace kbuild::server
