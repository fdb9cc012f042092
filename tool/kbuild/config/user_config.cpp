#include "kbuild/config/user_config.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <tuple>

#include "kbuild/util/strings.hpp"
#include "kbuild/util/toml_parse.hpp"

namespace kbuild::config {

namespace fs = std::filesystem;

std::string toml_library_version() {
  return std::to_string(TOML_LIB_MAJOR) + "." + std::to_string(TOML_LIB_MINOR) + "." + std::to_string(TOML_LIB_PATCH);
}

fs::path user_config_path(const util::Environment& env) {
  if (auto xdg = env.get("XDG_CONFIG_HOME"); xdg && !xdg->empty() && fs::path(*xdg).is_absolute())
    return fs::path(*xdg) / "kbuild" / "config.toml";
  if (auto home = env.get("HOME"); home && !home->empty())
    return fs::path(*home) / ".config" / "kbuild" / "config.toml";
  return {};
}

namespace {

// toolchain-origins: an array of http(s) URL prefixes.
template <typename ErrorFn>
void read_origins(const toml::node& node, std::vector<std::string>& out, ErrorFn& error) {
  const toml::array* array = node.as_array();
  if (!array) {
    error(node.source(), "toolchain-origins must be an array of URLs, e.g. [\"https://mirror.internal/debian/\"]");
    return;
  }
  for (const auto& item : *array) {
    auto url = item.value<std::string>();
    if (!item.is_string() || !url || !(url->starts_with("https://") || url->starts_with("http://")))
      error(item.source(), "toolchain-origins entries must be http(s) URLs");
    else
      out.push_back(*url);
  }
}

}  // namespace

UserConfigOutcome parse_user_config(std::string_view text, const std::string& file_name) {
  UserConfigOutcome outcome;
  auto error = [&](const toml::source_region& where, std::string message, std::string hint = {}) {
    outcome.diagnostics.push_back(
        {Severity::error,
         {file_name, static_cast<int>(where.begin.line), static_cast<int>(where.begin.column)},
         std::move(message),
         std::move(hint)});
  };
  toml::table root;
  try {
    root = util::parse_toml(text, file_name);
  } catch (const toml::parse_error& e) {
    error(e.source(), "invalid TOML: " + std::string(e.description()));
    return outcome;
  }
  const std::vector<std::pair<std::string, std::optional<std::string> UserConfig::*>> settings = {
      {"python", &UserConfig::python},
      {"cuda-archs", &UserConfig::cuda_archs},
      {"torch-index", &UserConfig::torch_index}};
  std::vector<std::string> keys;
  for (const auto& setting : settings) keys.push_back(setting.first);
  keys.push_back("toolchain-origins");
  for (const auto& [key, node] : root) {
    std::string name(key.str());
    if (name == "toolchain-origins") {
      read_origins(node, outcome.config.toolchain_origins, error);
      continue;
    }
    auto setting = std::find_if(settings.begin(), settings.end(), [&](const auto& s) { return s.first == name; });
    if (setting == settings.end()) {
      std::string suggestion = util::closest_match(name, keys);
      error(key.source(), "unknown key \"" + name + "\" in the kbuild user config",
            suggestion.empty() ? "keys: " + util::join(keys, ", ") : "did you mean \"" + suggestion + "\"?");
      continue;
    }
    auto value = node.value<std::string>();
    if (!node.is_string() || !value || value->empty()) {
      error(node.source(), name + " must be a non-empty string");
      continue;
    }
    outcome.config.*(setting->second) = *value;
  }
  // In file order (the table iterates by key).
  std::stable_sort(outcome.diagnostics.begin(), outcome.diagnostics.end(), [](const auto& a, const auto& b) {
    return std::tie(a.location.line, a.location.column) < std::tie(b.location.line, b.location.column);
  });
  outcome.config.file = file_name;
  return outcome;
}

Result<UserConfig> load_user_config(const util::FileSystem& fs, const util::Environment& env) {
  fs::path path = user_config_path(env);
  if (path.empty() || !fs.stat(path).exists) return UserConfig{};
  KB_TRY_ASSIGN(std::string text, util::read_input_file(fs, path, 1u << 20));
  auto outcome = parse_user_config(text, path.string());
  if (has_errors(outcome.diagnostics))
    return fail("the kbuild user config is invalid:\n" + format_diagnostics(outcome.diagnostics),
                "fix " + path.string() + " (docs/cli.md, \"Settings\"), or set XDG_CONFIG_HOME elsewhere",
                ExitCode::usage);
  return outcome.config;
}

namespace {

Result<Setting> choose(const std::string& option, const std::string& option_name, const char* variable,
                       std::optional<std::string> UserConfig::*member, const std::string& fallback,
                       const util::FileSystem& fs, const util::Environment& env) {
  if (!option.empty()) return Setting{option, option_name};
  if (auto value = env.get(variable); value && !value->empty()) return Setting{*value, variable};
  KB_TRY_ASSIGN(UserConfig user, load_user_config(fs, env));
  if (user.*member) return Setting{*(user.*member), user.file.string()};
  return Setting{fallback, "default"};
}

}  // namespace

Result<Setting> choose_python(const std::string& option, const util::FileSystem& fs, const util::Environment& env) {
  return choose(option, "--python", "KBUILD_PYTHON", &UserConfig::python, "python3", fs, env);
}

Result<Setting> choose_cuda_archs(const std::string& option, const std::string& fallback, const util::FileSystem& fs,
                                  const util::Environment& env) {
  return choose(option, "--cuda-archs", "KBUILD_CUDA_ARCHS", &UserConfig::cuda_archs, fallback, fs, env);
}

Result<Setting> choose_torch_index(const std::string& option, const util::FileSystem& fs,
                                   const util::Environment& env) {
  KB_TRY_ASSIGN(Setting index, choose(option, "--torch-index", "KBUILD_TORCH_INDEX", &UserConfig::torch_index,
                                      std::string(k_default_torch_index), fs, env));
  if (index.value != "pypi" && !index.value.starts_with("https://") && !index.value.starts_with("http://") &&
      !index.value.starts_with("file://"))
    return fail("the Torch index \"" + index.value + "\" (from " + index.source + ") is not a URL nor \"pypi\"",
                "e.g. https://download.pytorch.org/whl/{compute} ({compute} becomes cpu, cu130, ...), or pypi",
                ExitCode::usage);
  return index;
}

}  // namespace kbuild::config
