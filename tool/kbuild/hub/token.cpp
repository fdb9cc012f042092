#include "kbuild/hub/token.hpp"

#include "kbuild/util/strings.hpp"

namespace kbuild::hub {

namespace {
std::optional<std::string> env_value(const Environment& env, const std::string& name) {
  auto it = env.find(name);
  if (it == env.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

std::string clean(std::string text) {
  std::string out;
  for (char c : text)
    if (c != '\r' && c != '\n') out += c;
  return std::string(util::trim(out));
}
}  // namespace

std::string resolve_endpoint(const std::optional<std::string>& option, const Environment& env) {
  std::string endpoint = option ? *option : env_value(env, "HF_ENDPOINT").value_or("https://huggingface.co");
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  return endpoint;
}

std::optional<Token> resolve_token(const Environment& env, const util::FileSystem& fs) {
  for (const char* name : {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"}) {
    if (auto value = env_value(env, name)) {
      std::string token = clean(*value);
      if (!token.empty()) return Token{token, name};
    }
  }
  std::vector<std::string> files;
  if (auto path = env_value(env, "HF_TOKEN_PATH")) {
    files.push_back(*path);
  } else if (auto home = env_value(env, "HF_HOME")) {
    files.push_back(*home + "/token");
  } else if (auto xdg = env_value(env, "XDG_CACHE_HOME")) {
    files.push_back(*xdg + "/huggingface/token");
  } else if (auto home_dir = env_value(env, "HOME")) {
    files.push_back(*home_dir + "/.cache/huggingface/token");
  }
  for (const auto& file : files) {
    if (auto text = fs.read_file(file)) {
      std::string token = clean(*text);
      if (!token.empty()) return Token{token, file};
    }
  }
  return std::nullopt;
}

std::string redact(std::string text, const std::optional<Token>& token) {
  if (!token || token->value.empty()) return text;
  for (size_t pos = 0; (pos = text.find(token->value, pos)) != std::string::npos;) {
    text.replace(pos, token->value.size(), "hf_***");
    pos += 6;
  }
  return text;
}

}  // namespace kbuild::hub
