#include "kbuild/net/http.hpp"

#include <cctype>

namespace kbuild::net {

namespace {
std::string lower(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}
}  // namespace

void Headers::set(std::string_view name, std::string value) { m_values[lower(name)] = std::move(value); }

std::optional<std::string> Headers::get(std::string_view name) const {
  auto it = m_values.find(lower(name));
  if (it == m_values.end()) return std::nullopt;
  return it->second;
}

std::string url_encode(std::string_view text, bool keep_slash) {
  static constexpr char k_hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += k_hex[c >> 4];
      out += k_hex[c & 15];
    }
  }
  return out;
}

Result<std::string> url_decode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size() || !std::isxdigit(static_cast<unsigned char>(text[i + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(text[i + 2])))
      return fail("malformed percent-escape in \"" + std::string(text) + "\"");
    out += static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
    i += 2;
  }
  return out;
}

std::string url_without_credentials(std::string_view url) {
  size_t question = url.find('?');
  if (question == std::string_view::npos) return std::string(url);
  std::string kept(url.substr(0, question));
  char separator = '?';
  std::string_view query = url.substr(question + 1);
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    std::string name = lower(pair.substr(0, pair.find('=')));
    if (name == "token" || name == "signature" || name == "expires" || name == "expiration" ||
        name.starts_with("x-amz-") || pair.empty())
      continue;
    kept += separator;
    kept += pair;
    separator = '&';
  }
  return kept;
}

}  // namespace kbuild::net
