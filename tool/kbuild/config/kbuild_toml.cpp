#include "kbuild/config/kbuild_toml.hpp"

#include <toml++/toml.h>

#include <algorithm>

#include "kbuild/util/strings.hpp"
#include "kbuild/util/toml_parse.hpp"

namespace kbuild::config {

// The table of docs/matrix.md (keep them in step): the ecosystem's last two Torch releases with their CUDA
// versions, CUDA 13 only, because NVIDIA publishes nvcc wheels for 13.x only (12.x needs --cuda-toolkit).
MatrixSpec default_matrix() {
  return {{util::Version({2, 14}), util::Version({2, 15})},
          {util::Version({13, 0}), util::Version({13, 2})},
          true,
          "kbuild default table"};
}

// Unknown tables and keys are errors, as in build.toml. Versions are exactly "major.minor": variant names
// carry only those two (torch215, cu132). In a [matrix], cpu variants need `cpu = true` (the default table
// has them); a repeated version is dropped. The matrix is returned even with errors: callers check them.
KbuildSettingsOutcome parse_kbuild_toml(std::string_view text, const std::string& file_name) {
  KbuildSettingsOutcome outcome;
  auto error = [&](const toml::source_region& where, std::string message, std::string hint = {}) {
    outcome.diagnostics.push_back(
        {config::Severity::error,
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
  for (const auto& [key, node] : root) {
    if (key.str() != "matrix")
      error(key.source(), "unknown table \"" + std::string(key.str()) + "\" in kbuild.toml",
            "kbuild.toml has [matrix]");
  }
  const toml::table* matrix = root["matrix"].as_table();
  if (!matrix) {
    if (root.contains("matrix")) error(root.get("matrix")->source(), "matrix must be a table");
    return outcome;
  }
  MatrixSpec spec;
  spec.origin = file_name;
  spec.cpu = false;
  auto versions = [&](const char* key, std::vector<util::Version>& out, unsigned expected_major_min) {
    const toml::node* node = matrix->get(key);
    if (!node) return;
    const toml::array* array = node->as_array();
    if (!array) {
      error(node->source(), std::string("matrix.") + key + " must be an array of version strings");
      return;
    }
    for (const auto& element : *array) {
      auto text = element.value<std::string>();
      auto version = text ? util::Version::parse(*text) : std::nullopt;
      if (!version || version->components().size() != 2 || version->major() < expected_major_min) {
        error(element.source(), std::string("matrix.") + key + ": expected a \"major.minor\" version",
              std::string(key) == "torch" ? "e.g. \"2.15\"" : "e.g. \"13.2\"");
        continue;
      }
      if (std::find(out.begin(), out.end(), *version) == out.end()) out.push_back(*version);
    }
  };
  versions("torch", spec.torch, 2);
  versions("cuda", spec.cuda, 11);
  if (const toml::node* cpu = matrix->get("cpu")) {
    if (!cpu->is_boolean())
      error(cpu->source(), "matrix.cpu must be true or false");
    else
      spec.cpu = *cpu->value<bool>();
  }
  for (const auto& [key, node] : *matrix) {
    std::string name(key.str());
    if (name != "torch" && name != "cuda" && name != "cpu") {
      std::string suggestion = util::closest_match(name, {"torch", "cuda", "cpu"});
      error(key.source(), "unknown key \"" + name + "\" in [matrix]",
            suggestion.empty() ? "keys: torch, cuda, cpu" : "did you mean \"" + suggestion + "\"?");
    }
  }
  // Not after another error: an invalid torch entry already explains the empty list.
  if (spec.torch.empty() && !config::has_errors(outcome.diagnostics))
    error(matrix->source(), "[matrix] lists no Torch versions", "add torch = [\"2.15\"]");
  outcome.matrix = spec;
  return outcome;
}

}  // namespace kbuild::config
