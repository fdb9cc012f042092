#include "kbuild/plan/matrix.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <set>

#include "kbuild/util/strings.hpp"

namespace kbuild::plan {

MatrixSpec default_matrix() {
  return {{util::Version({2, 14}), util::Version({2, 15})},
          {util::Version({13, 0}), util::Version({13, 2})},
          true,
          "kbuild default table"};
}

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
    root = toml::parse(text, file_name);
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
  if (spec.torch.empty() && !config::has_errors(outcome.diagnostics))
    error(matrix->source(), "[matrix] lists no Torch versions", "add torch = [\"2.15\"]");
  outcome.matrix = spec;
  return outcome;
}

std::vector<MatrixEntry> expand_matrix(const config::KernelConfig& config, const MatrixSpec& spec,
                                       std::vector<std::string>* notes) {
  auto note = [&](std::string text) {
    if (notes) notes->push_back(std::move(text));
  };
  auto listed = [&](config::Backend backend) {
    return std::find(config.general.backends.begin(), config.general.backends.end(), backend) !=
           config.general.backends.end();
  };
  std::vector<MatrixEntry> entries;
  std::vector<util::Version> torch_versions;
  for (const auto& torch : spec.torch) {
    if (config.torch.minver && torch < *config.torch.minver) {
      note("torch " + torch.str() + ": below torch.minver " + config.torch.minver->str());
      continue;
    }
    if (config.torch.maxver && torch > *config.torch.maxver) {
      note("torch " + torch.str() + ": above torch.maxver " + config.torch.maxver->str());
      continue;
    }
    torch_versions.push_back(torch);
  }
  bool noarch_framework = config.framework == config::Framework::torch_noarch;
  for (config::Backend backend : config.general.backends) {
    bool has_components = !config.components_for(backend).empty();
    if (noarch_framework || !has_components) {
      MatrixEntry entry;
      entry.variant.kind = Variant::Kind::noarch;
      entry.variant.backend = backend;
      entries.push_back(entry);
    }
  }
  for (const auto& torch : torch_versions) {
    if (noarch_framework) break;
    if (spec.cpu && listed(config::Backend::cpu) && !config.components_for(config::Backend::cpu).empty()) {
      MatrixEntry entry;
      entry.variant.torch = torch;
      entry.variant.backend = config::Backend::cpu;
      entry.torch = torch;
      entries.push_back(entry);
    }
    if (!listed(config::Backend::cuda) || config.components_for(config::Backend::cuda).empty()) continue;
    for (const auto& cuda : spec.cuda) {
      if (config.general.cuda_minver &&
          cuda < util::Version({config.general.cuda_minver->major(), config.general.cuda_minver->minor()})) {
        note("cuda " + cuda.str() + ": below general.cuda.minver " + config.general.cuda_minver->str());
        continue;
      }
      if (config.general.cuda_maxver && cuda > *config.general.cuda_maxver) {
        note("cuda " + cuda.str() + ": above general.cuda.maxver " + config.general.cuda_maxver->str());
        continue;
      }
      bool any_component = false;
      for (const auto* component : config.components_for(config::Backend::cuda))
        if (!component->cuda_minver ||
            !(cuda < util::Version({component->cuda_minver->major(), component->cuda_minver->minor()})))
          any_component = true;
      if (!any_component) {
        note("cuda " + cuda.str() + ": every CUDA component needs a newer CUDA (cuda-minver)");
        continue;
      }
      MatrixEntry entry;
      entry.variant.torch = torch;
      entry.variant.backend = config::Backend::cuda;
      entry.variant.cuda = cuda;
      entry.torch = torch;
      entry.cuda = cuda;
      entries.push_back(entry);
    }
  }
  std::sort(entries.begin(), entries.end(),
            [](const MatrixEntry& a, const MatrixEntry& b) { return a.variant.name() < b.variant.name(); });
  return entries;
}

Result<std::vector<MatrixEntry>> filter_matrix(const std::vector<MatrixEntry>& entries, const MatrixFilter& filter) {
  std::vector<std::string> names;
  for (const auto& entry : entries) names.push_back(entry.variant.name());
  for (const auto& wanted : filter.variants) {
    if (std::find(names.begin(), names.end(), wanted) == names.end()) {
      std::string suggestion = util::closest_match(wanted, names);
      return fail("unknown variant \"" + wanted + "\"",
                  (suggestion.empty() ? "" : "did you mean " + suggestion + "? ") +
                      "valid variants are: " + util::join(names, ", "),
                  ExitCode::usage);
    }
  }
  std::vector<MatrixEntry> out;
  for (const auto& entry : entries) {
    const Variant& v = entry.variant;
    if (!filter.variants.empty() &&
        std::find(filter.variants.begin(), filter.variants.end(), v.name()) == filter.variants.end())
      continue;
    if (!filter.torch.empty()) {
      if (v.kind == Variant::Kind::noarch) continue;
      bool match = false;
      for (const auto& t : filter.torch)
        if (auto version = util::Version::parse(t); version && *version == entry.torch) match = true;
      if (!match) continue;
    }
    if (!filter.cuda.empty()) {
      bool match = false;
      for (const auto& c : filter.cuda) {
        if (c == "cpu" && v.backend == config::Backend::cpu && v.kind == Variant::Kind::torch) match = true;
        if (auto version = util::Version::parse(c); version && entry.cuda && *version == *entry.cuda) match = true;
      }
      if (!match) continue;
    }
    out.push_back(entry);
  }
  if (out.empty())
    return fail("no variant of the matrix matches the filters", "kbuild variants lists the matrix", ExitCode::usage);
  return out;
}

}  // namespace kbuild::plan
