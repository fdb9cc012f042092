#include "kbuild/server/path_rules.hpp"

#include <unicase.h>
#include <uninorm.h>
#include <unistr.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "kbuild/util/strings.hpp"

namespace kbuild::server {

namespace {

/// Code points HFS+ ignores when it compares names (git's is_hfs_dotgit list) and the other
/// invisible format characters that make two names look alike or text run backwards.
bool is_ignorable(ucs4_t c) {
  return (c >= 0x200B && c <= 0x200F) || (c >= 0x202A && c <= 0x202E) || (c >= 0x2060 && c <= 0x206F) || c == 0xFEFF ||
         c == 0x00AD || c == 0x180E;
}

std::string code_point(ucs4_t c) {
  char text[16];
  std::snprintf(text, sizeof text, "U+%04X", static_cast<unsigned>(c));
  return text;
}

/// `.git` as NTFS reads a component: trailing dots and spaces dropped, any case; or its 8.3 short name.
bool is_dotgit_lookalike(std::string_view part) {
  std::string lower = util::ascii_lowercase(part);
  while (!lower.empty() && (lower.back() == '.' || lower.back() == ' ')) lower.pop_back();
  return lower == ".git" || lower == "git~1";
}

bool is_windows_reserved(std::string_view part) {
  std::string base = util::ascii_lowercase(part.substr(0, part.find('.')));
  while (!base.empty() && base.back() == ' ') base.pop_back();
  if (base == "con" || base == "prn" || base == "aux" || base == "nul") return true;
  return base.size() == 4 && (base.starts_with("com") || base.starts_with("lpt")) && base[3] >= '0' && base[3] <= '9';
}

std::optional<std::string> component_problem(std::string_view part) {
  std::string quoted = "\"" + std::string(part) + "\"";
  if (is_dotgit_lookalike(part)) return quoted + " is .git as some file systems read it";
  if (is_windows_reserved(part)) return quoted + " is a name Windows reserves for a device";
  if (part.back() == '.' || part.back() == ' ') return quoted + " ends in a dot or a space (dropped on Windows)";
  for (unsigned char c : part)
    if (c < 0x20 || c == 0x7f || std::string_view("<>:\"|?*").find(static_cast<char>(c)) != std::string_view::npos)
      return quoted + " holds a character Windows does not allow in file names";
  return std::nullopt;
}

}  // namespace

std::optional<std::string> path_problem(std::string_view path) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(path.data());
  if (u8_check(bytes, path.size()) != nullptr) return "it is not valid UTF-8";
  for (const uint8_t* at = bytes; at < bytes + path.size();) {
    ucs4_t c = 0;
    at += u8_mbtouc(&c, at, bytes + path.size() - at);
    if (is_ignorable(c)) return "it holds an invisible or text-reordering character (" + code_point(c) + ")";
  }
  for (const auto& part : util::split(path, '/'))
    if (auto problem = component_problem(part)) return problem;
  size_t length = 0;
  uint8_t* nfc = u8_normalize(UNINORM_NFC, bytes, path.size(), nullptr, &length);
  if (!nfc) return "it cannot be normalised as Unicode";
  bool normal = length == path.size() && std::equal(nfc, nfc + length, bytes);
  std::free(nfc);
  if (!normal) return "it is not in Unicode NFC (composed) form; send the composed form";
  return std::nullopt;
}

std::string case_fold(std::string_view path) {
  size_t length = 0;
  // Lowercase mapping, not full case folding: NTFS and APFS treat "A" and "a" as one name, but not
  // "ß" and "ss" (full folding would refuse such pairs although no file system merges them).
  uint8_t* folded =
      u8_tolower(reinterpret_cast<const uint8_t*>(path.data()), path.size(), nullptr, UNINORM_NFC, nullptr, &length);
  if (!folded) return util::ascii_lowercase(path);
  std::string out(reinterpret_cast<const char*>(folded), length);
  std::free(folded);
  return out;
}

std::optional<std::pair<std::string, std::string>> case_collision(const std::vector<std::string>& paths) {
  // Files and the folders they imply: "A/x" and "a/y" put two folders in one place too. Each path is
  // folded once: lowercasing keeps every '/', so the folded path's prefixes are its folders' folds.
  std::map<std::string, std::string> seen;  // fold -> the name first seen with it
  for (const auto& path : paths) {
    const std::string folded = case_fold(path);
    for (size_t end = path.find('/'), folded_end = folded.find('/');;
         end = path.find('/', end + 1), folded_end = folded.find('/', folded_end + 1)) {
      std::string name = path.substr(0, end);
      auto [it, inserted] = seen.emplace(folded.substr(0, folded_end), name);
      if (!inserted && it->second != name) return std::pair{it->second, name};
      if (end == std::string::npos) break;
    }
  }
  return std::nullopt;
}

}  // namespace kbuild::server
