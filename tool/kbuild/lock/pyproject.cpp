#include "kbuild/lock/pyproject.hpp"

#include <toml++/toml.h>

#include <algorithm>

#include "kbuild/net/names.hpp"
#include "kbuild/util/toml_parse.hpp"

namespace kbuild::lock {

namespace {

class Parser {
 public:
  explicit Parser(std::string file) : m_file(std::move(file)) {}

  // Only [tool.kernels.dependencies] is interpreted; the rest of pyproject.toml belongs to other tools. The
  // final sort restores file order: a toml++ table iterates its keys sorted (it is a std::map).
  PyprojectDependencies run(std::string_view text) {
    m_text = text;
    toml::table root;
    try {
      root = util::parse_toml(text, m_file);
    } catch (const toml::parse_error& e) {
      error(at(e.source()), "invalid TOML: " + std::string(e.description()), "");
      return std::move(m_out);
    }
    const toml::node* tool = root.get("tool");
    const toml::node* kernels = tool && tool->is_table() ? tool->as_table()->get("kernels") : nullptr;
    const toml::node* deps = kernels && kernels->is_table() ? kernels->as_table()->get("dependencies") : nullptr;
    if (tool && !tool->is_table()) return expect_table(tool, "tool");
    if (kernels && !kernels->is_table()) return expect_table(kernels, "tool.kernels");
    if (!deps) return std::move(m_out);
    if (!deps->is_table()) return expect_table(deps, "tool.kernels.dependencies");
    m_out.has_table = true;
    // As `kernels lock`, which stops with "No kernels found to lock.": an empty lock would load nothing.
    if (deps->as_table()->empty())
      error(at(deps->source()), "[tool.kernels.dependencies] names no kernels",
            "add one, e.g. \"kernels-community/activation\" = 1, or remove the table");
    for (const auto& [key, value] : *deps->as_table()) requirement(key, value);
    std::stable_sort(m_out.requirements.begin(), m_out.requirements.end(), [](const auto& a, const auto& b) {
      return std::pair(a.location.line, a.location.column) < std::pair(b.location.line, b.location.column);
    });
    return std::move(m_out);
  }

 private:
  config::SourceLocation at(const toml::source_region& region) const {
    return {m_file, static_cast<int>(region.begin.line), static_cast<int>(region.begin.column)};
  }

  void error(config::SourceLocation where, std::string message, std::string hint) {
    m_out.diagnostics.push_back({config::Severity::error, std::move(where), std::move(message), std::move(hint)});
  }

  PyprojectDependencies expect_table(const toml::node* node, const std::string& name) {
    error(at(node->source()), "[" + name + "] must be a table", "");
    return std::move(m_out);
  }

  void requirement(const toml::key& key, const toml::node& value) {
    std::string repo_id(key.str());
    config::SourceLocation where = at(key.source());
    if (!net::is_valid_repo_id(repo_id)) {
      error(where, "\"" + repo_id + "\" is not a Hub repository id",
            "keys of [tool.kernels.dependencies] are \"namespace/name\", e.g. \"kernels-community/activation\"");
      return;
    }
    if (auto spec = version_spec(value, repo_id)) m_out.requirements.push_back({repo_id, std::move(*spec), where});
  }

  // The table forms are build.toml's kernel-depends syntax: exactly one of `version` and `revision`. A
  // commit id is lowercased, as kernels.lock records it.
  std::optional<VersionSpec> version_spec(const toml::node& value, const std::string& repo_id) {
    if (const auto* table = value.as_table()) {
      const toml::node* version = table->get("version");
      const toml::node* revision = table->get("revision");
      bool bad = false;
      for (const auto& [key, node] : *table)
        if (key.str() != "version" && key.str() != "revision") {
          error(at(key.source()), "unknown key \"" + std::string(key.str()) + "\" for " + repo_id,
                "a dependency table has either `version` or `revision`");
          bad = true;
        }
      if ((version != nullptr) == (revision != nullptr)) {
        error(at(value.source()), repo_id + " needs exactly one of `version` and `revision`",
              "e.g. { version = 1 } or { revision = \"v1.2.0\" }");
        return std::nullopt;
      }
      if (bad) return std::nullopt;
      if (version) return plain_spec(*version, repo_id, false);
      if (!revision->is_string()) {
        error(at(revision->source()), "the revision of " + repo_id + " must be a string", "");
        return std::nullopt;
      }
      std::string text = revision->as_string()->get();
      if (!is_commit_id(text) && !net::is_valid_ref_name(text)) {
        error(at(revision->source()), "\"" + text + "\" is not a valid tag, branch or commit name", "");
        return std::nullopt;
      }
      if (is_commit_id(text)) std::transform(text.begin(), text.end(), text.begin(), ::tolower);
      return RevisionSpec{text};
    }
    return plain_spec(value, repo_id, true);
  }

  // An integer is a major version (branch vN), a string bounds or a name (parse_version_string decides).
  // `{ version = "v1.2.0" }` is refused: in the table form a name belongs under `revision`.
  std::optional<VersionSpec> plain_spec(const toml::node& value, const std::string& repo_id, bool allow_revision) {
    const std::string hint =
        "write a major version (1), version bounds (\">=1.2,<2\"), or a tag, branch or commit (\"v1.2.0\")";
    if (const auto* integer = value.as_integer()) {
      if (integer->get() < 0) {
        error(at(value.source()), "the version of " + repo_id + " is negative", hint);
        return std::nullopt;
      }
      return MajorSpec{static_cast<std::uint64_t>(integer->get())};
    }
    if (const auto* string = value.as_string()) {
      auto parsed = parse_version_string(string->get());
      if (!parsed) {
        config::SourceLocation where = at(value.source());
        auto inside = util::toml_string_position(
            m_text, {static_cast<size_t>(where.line), static_cast<size_t>(where.column)}, parsed.error().offset);
        where.line = static_cast<int>(inside.line);
        where.column = static_cast<int>(inside.column);
        error(where, "invalid version of " + repo_id + ": " + parsed.error().message, hint);
        return std::nullopt;
      }
      if (!allow_revision && std::holds_alternative<RevisionSpec>(*parsed)) {
        error(at(value.source()), "`version` of " + repo_id + " must be a major version or bounds",
              "use { revision = \"" + string->get() + "\" } for a tag, branch or commit");
        return std::nullopt;
      }
      return *parsed;
    }
    error(at(value.source()), "the version of " + repo_id + " must be an integer or a string", hint);
    return std::nullopt;
  }

  std::string m_file;
  std::string_view m_text;  ///< the file, for positions inside strings
  PyprojectDependencies m_out;
};

}  // namespace

PyprojectDependencies parse_pyproject_dependencies(std::string_view text, const std::string& file) {
  return Parser(file).run(text);
}

}  // namespace kbuild::lock
