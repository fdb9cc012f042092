// TableReader: the typed reads of one build.toml table. Every take() marks a key as known, so finish(),
// called after the last read, can report the rest as unknown (kernel-builder denies unknown fields in every
// table). A bad value becomes a diagnostic and nullopt, never an exception: parsing goes on, and the user
// sees every problem of the file at once.

#include <algorithm>
#include <map>

#include "kbuild/config/build_toml_parser.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::config::detail {

std::optional<std::string> TableReader::string(std::string_view key, bool required) {
  const toml::node* node = take(key);
  if (!node) {
    if (required) missing(key, "\"...\"");
    return std::nullopt;
  }
  if (auto value = node->value<std::string>(); node->is_string()) return *value;
  m_parser.error(m_parser.at(node), m_name + "." + std::string(key) + " must be a string");
  return std::nullopt;
}

// A missing `version` is v3-tolerable: v3 files may lack it (update-build writes version = 1), so the
// diagnostic helps tell a v3 file, which gets the update-build hint, from a broken edition-5 one.
std::optional<std::int64_t> TableReader::integer(std::string_view key, bool required) {
  const toml::node* node = take(key);
  if (!node) {
    if (required) missing(key, "1", key == "version");
    return std::nullopt;
  }
  if (node->is_integer()) return node->value<std::int64_t>();
  m_parser.error(m_parser.at(node), m_name + "." + std::string(key) + " must be an integer");
  return std::nullopt;
}

// With `path_kind`, elements are kernel paths: normalised (so "./a.cu" and "a.cu" are one file), de-duplicated,
// and recorded under their original index for later diagnostics (a missing file). Other strings
// (flags, names) only refuse control characters: a NUL would silently cut a C-string argument short.
std::optional<std::vector<std::string>> TableReader::strings(std::string_view key, bool required,
                                                             const char* path_kind) {
  const toml::node* node = take(key);
  if (!node) {
    if (required) missing(key, "[]");
    return std::nullopt;
  }
  const toml::array* array = node->as_array();
  if (!array) {
    m_parser.error(m_parser.at(node), m_name + "." + std::string(key) + " must be an array of strings",
                   "write it as " + std::string(key) + " = [\"...\"]");
    return std::nullopt;
  }
  std::vector<std::string> out;
  std::map<std::string, size_t> seen;  // normalised path -> index, for duplicates
  bool ok = true;
  for (size_t i = 0; i < array->size(); ++i) {
    const toml::node& element = *array->get(i);
    if (!element.is_string()) {
      m_parser.error(m_parser.at(&element),
                     m_name + "." + std::string(key) + "[" + std::to_string(i) + "] must be a string");
      ok = false;
      continue;
    }
    std::string value = *element.value<std::string>();
    if (path_kind) {
      auto normalised = normalize_kernel_path(value, key == "include");
      if (!normalised) {
        m_parser.error(m_parser.at(&element), m_name + "." + std::string(key) + ": " + normalised.error(),
                       "paths are relative to the kernel directory, e.g. \"src/kernel.cu\"");
        ok = false;
        continue;
      }
      if (auto [it, fresh] = seen.emplace(*normalised, i); !fresh) {
        // kernel-builder's CMake adds a repeated source to its target once; so does kbuild.
        m_parser.warning(m_parser.at(&element),
                         m_name + "." + std::string(key) + " lists \"" + *normalised + "\" twice (entries " +
                             std::to_string(it->second + 1) + " and " + std::to_string(i + 1) +
                             "); it is used once, as kernel-builder does",
                         "remove one of them");
        continue;
      }
      value = *normalised;
      m_parser.record_path(m_name + "." + std::string(key) + "[" + std::to_string(i) + "]", element);
    } else if (std::any_of(value.begin(), value.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; })) {
      m_parser.error(m_parser.at(&element), m_name + "." + std::string(key) + " contains a control character");
      ok = false;
      continue;
    }
    out.push_back(std::move(value));
  }
  if (!ok) return std::nullopt;
  return out;
}

// Versions are TOML strings, as kernel-builder requires: a float would read `2.10` as 2.1.
std::optional<util::Version> TableReader::version(std::string_view key) {
  const toml::node* node = take(key);
  if (!node) return std::nullopt;
  if (!node->is_string()) {
    m_parser.error(m_parser.at(node), m_name + "." + std::string(key) + " must be a version string",
                   "write it as " + std::string(key) + " = \"2.11\"");
    return std::nullopt;
  }
  auto parsed = util::Version::parse(*node->value<std::string>());
  if (!parsed)
    m_parser.error(m_parser.at(node),
                   m_name + "." + std::string(key) + ": \"" + *node->value<std::string>() + "\" is not a version",
                   "versions are dot-separated numbers, e.g. \"2.11\" or \"13.0\"");
  return parsed;
}

const toml::table* TableReader::subtable(std::string_view key) {
  const toml::node* node = take(key);
  if (!node) return nullptr;
  if (const toml::table* table = node->as_table()) return table;
  m_parser.error(m_parser.at(node), m_name + "." + std::string(key) + " must be a table");
  return nullptr;
}

void TableReader::missing(std::string_view key, const std::string& example, bool v3_tolerable) {
  m_parser.error(m_parser.at(&m_table), "[" + m_name + "] is missing the required key \"" + std::string(key) + "\"",
                 "add " + std::string(key) + " = " + example, v3_tolerable);
}

void TableReader::finish() {
  std::vector<std::string> known(m_known.begin(), m_known.end());
  for (const auto& [key, node] : m_table) {
    std::string name(key.str());
    if (m_known.count(name)) continue;
    std::string suggestion = util::closest_match(name, known);
    m_parser.error(
        m_parser.at(key.source()), "unknown key \"" + name + "\" in [" + m_name + "]",
        suggestion.empty() ? "known keys here: " + util::join(known, ", ") : "did you mean \"" + suggestion + "\"?");
  }
}

}  // namespace kbuild::config::detail
