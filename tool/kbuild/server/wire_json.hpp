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

/// The JSON value of a body; with `allow_empty`, an empty (or blank) body is {}.
inline Parsed<Json> parse_json(std::string_view text, bool allow_empty = false) {
  if (allow_empty && util::trim(text).empty()) return Json::object();
  Json value = Json::parse(text, nullptr, false);
  if (value.is_discarded()) return std::unexpected("the request body is not valid JSON");
  return value;
}

}  // namespace kbuild::server::wire_json
