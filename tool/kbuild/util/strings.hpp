#pragma once
// Small string helpers shared by several modules.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kbuild::util {

std::vector<std::string> split(std::string_view text, char separator);
std::string join(const std::vector<std::string>& parts, std::string_view separator);
/// `text` with every occurrence of `from` (non-empty) replaced by `to`, left to right.
std::string replace_all(std::string text, std::string_view from, std::string_view to);
std::string_view trim(std::string_view text);
/// `text` with A-Z turned into a-z (bytes outside ASCII unchanged).
std::string ascii_lowercase(std::string_view text);
/// `text` with a-z turned into A-Z.
std::string ascii_uppercase(std::string_view text);
/// Quotes one argument for a POSIX shell, only when needed ("-O2" stays as is, "a b" -> 'a b').
std::string shell_quote(std::string_view arg);
/// Renders argv as one copy-pasteable shell command line.
std::string shell_join(const std::vector<std::string>& argv);
/// A byte count as people read it, in decimal units: "46.0 kB", "539.1 MB", "4.7 GB".
std::string human_size(std::uint64_t bytes);
/// The inverse of shell_join (words separated by spaces, '...' quoting, backslash escapes).
std::vector<std::string> shell_split(std::string_view text);
/// `text` with control characters and bytes >= 0x7f shown as \xNN, for messages.
std::string printable(std::string_view text);
/// `text` with each @NAME@ (NAME of A-Z, 0-9, _), as CMake's configure_file @ONLY does in one pass,
/// replaced by its value in `vars`. A NAME without a value is left as it is and, when `unknown` is
/// given, appended to it.
std::string replace_at_names(std::string_view text, const std::map<std::string, std::string, std::less<>>& vars,
                             std::vector<std::string>* unknown = nullptr);
/// Edit distance, for "did you mean" suggestions.
size_t edit_distance(std::string_view a, std::string_view b);
/// The candidate closest to `word` if it is close enough to be a plausible typo, else "".
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

/// "1 job", "2 jobs": a count with its noun, plural by appending "s" (or `plural_form`).
std::string count_of(std::size_t count, std::string_view noun, std::string_view plural_form = {});

/// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
bool is_valid_utf8(std::string_view text);

/// A size: a number (decimals allowed) with an optional unit K, M, G or T, each optionally followed
/// by "B" or "iB"; all units are binary (1G = 1GB = 1GiB = 2^30 bytes). nullopt when malformed or
/// beyond 2^63.
std::optional<std::uint64_t> parse_byte_size(std::string_view text);

}  // namespace kbuild::util
