#pragma once
// Private to wire*.cpp: reading members of parsed JSON bodies.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "kbuild/server/wire.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::server::wire_json {

using Json = nlohmann::ordered_json;

inline const Json* member(const Json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(std::string(key));
  return it == object.end() ? nullptr : &*it;
}

inline std::optional<std::string> string_member(const Json& object, std::string_view key) {
  const Json* value = member(object, key);
  if (!value || !value->is_string()) return std::nullopt;
  return value->get<std::string>();
}

inline std::optional<std::int64_t> integer_member(const Json& object, std::string_view key) {
  const Json* value = member(object, key);
  if (!value || !value->is_number_integer()) return std::nullopt;
  return value->get<std::int64_t>();
}

inline std::optional<bool> boolean_member(const Json& object, std::string_view key) {
  const Json* value = member(object, key);
  if (!value || !value->is_boolean()) return std::nullopt;
  return value->get<bool>();
}

/// Bounds on the shape of request JSON, checked before it is parsed: a body's size bounds its bytes,
/// not the memory of its tree (16 MiB of "[" parse into 16 M nested arrays, over 1 GB). With these, a
/// parsed body holds at most k_max_json_values values (tens of bytes each) however it is nested.
inline constexpr std::size_t k_max_json_depth = 64;
inline constexpr std::size_t k_max_json_values = 1'000'000;

/// Why `text` must not be parsed (nested deeper than k_max_json_depth, or more than
/// k_max_json_values values, counting containers, strings and separators outside strings), or nullopt.
inline std::optional<std::string> json_shape_problem(std::string_view text) {
  std::size_t depth = 0, values = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
      ++values;
    } else if (c == '[' || c == '{') {
      ++values;
      if (++depth > k_max_json_depth)
        return "JSON nested deeper than " + std::to_string(k_max_json_depth) + " levels is refused";
    } else if (c == ']' || c == '}') {
      depth -= depth > 0;
    } else if (c == ',') {
      ++values;
    }
    if (values > k_max_json_values)
      return "JSON with more than " + std::to_string(k_max_json_values) + " values is refused";
  }
  return std::nullopt;
}

/// The JSON value of a body; with `allow_empty`, an empty (or blank) body is {}.
inline Parsed<Json> parse_json(std::string_view text, bool allow_empty = false) {
  if (allow_empty && util::trim(text).empty()) return Json::object();
  if (auto problem = json_shape_problem(text)) return std::unexpected("the request body: " + *problem);
  Json value = Json::parse(text, nullptr, false);
  if (value.is_discarded()) return std::unexpected("the request body is not valid JSON");
  return value;
}

}  // namespace kbuild::server::wire_json
