#include "kbuild/exec/depfile.hpp"

#include <set>

namespace kbuild::exec {

Result<std::vector<std::string>> parse_depfile(std::string_view text) {
  std::vector<std::string> deps;
  std::set<std::string> seen;
  std::string token;
  bool in_targets = true;  // tokens before the ':' of a rule are targets
  auto finish_token = [&](bool at_line_end) {
    if (!token.empty()) {
      if (in_targets) {
        if (token.back() == ':') {
          in_targets = false;
        }
      } else if (seen.insert(token).second) {
        deps.push_back(token);
      }
      token.clear();
    }
    if (at_line_end) in_targets = true;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\\' && i + 1 < text.size()) {
      char next = text[i + 1];
      if (next == '\n') {  // continuation
        ++i;
        finish_token(false);
        continue;
      }
      if (next == '\r' && i + 2 < text.size() && text[i + 2] == '\n') {
        i += 2;
        finish_token(false);
        continue;
      }
      if (next == ' ' || next == '#' || next == '\\') {
        token += next;
        ++i;
        continue;
      }
      token += c;
      continue;
    }
    if (c == '$' && i + 1 < text.size() && text[i + 1] == '$') {
      token += '$';
      ++i;
      continue;
    }
    if (c == ':' && in_targets &&
        (i + 1 == text.size() || text[i + 1] == ' ' || text[i + 1] == '\n' || text[i + 1] == '\t' ||
         text[i + 1] == '\r')) {
      token += ':';
      finish_token(false);
      in_targets = false;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      finish_token(false);
      continue;
    }
    if (c == '\n') {
      finish_token(true);
      continue;
    }
    token += c;
  }
  finish_token(true);
  return deps;
}

std::vector<std::string> escaping_prerequisites(const util::FileSystem& fs,
                                                const std::vector<std::string>& prerequisites,
                                                const std::filesystem::path& root) {
  std::vector<std::string> escaping;
  const std::string prefix = root.lexically_normal().string() + "/";
  auto real_root = fs.real_path(root);
  if (!real_root) return escaping;
  const std::string real_prefix = real_root->string() + "/";
  for (const auto& name : prerequisites) {
    if (!std::filesystem::path(name).is_absolute() || !name.starts_with(prefix)) continue;
    auto real = fs.real_path(name);
    if (real && real->string().starts_with(real_prefix)) continue;
    escaping.push_back(name + " is " + (real ? real->string() : std::string("unreadable")) + ", outside " +
                       root.string());
  }
  return escaping;
}

}  // namespace kbuild::exec
