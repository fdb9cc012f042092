#include "kbuild/config/build_toml.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <regex>
#include <set>

#include "kbuild/util/strings.hpp"

namespace kbuild::config {

bool is_valid_kernel_name(std::string_view name) {
  if (name.size() < 2) return false;
  if (!(name.front() >= 'a' && name.front() <= 'z')) return false;
  char last = name.back();
  if (!((last >= 'a' && last <= 'z') || (last >= '0' && last <= '9'))) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
}

bool is_valid_git_url(std::string_view url) {
  static const char* k_schemes[] = {"https://",   "http://",      "git://",     "ssh://",
                                    "git+ssh://", "git+https://", "git+http://"};
  for (const char* scheme : k_schemes) {
    std::string_view s(scheme);
    if (url.starts_with(s)) return url.size() > s.size();
  }
  // SCP form: user@host:path, path not starting with '/'.
  size_t at = url.find('@');
  size_t colon = url.find(':');
  return at != std::string_view::npos && at > 0 && colon != std::string_view::npos && colon > at + 1 &&
         colon + 1 < url.size() && url[colon + 1] != '/' && url.find('/') > at;
}

bool is_valid_cuda_capability(std::string_view capability) {
  static const std::regex k_pattern(R"(^[0-9]+\.[0-9]+[af]?(\+PTX)?$)");
  return std::regex_match(capability.begin(), capability.end(), k_pattern);
}

namespace {

const std::vector<std::string> k_kernel_dependencies = {"cutlass_2_10", "cutlass_3_5", "cutlass_3_6", "cutlass_3_8",
                                                        "cutlass_3_9",  "cutlass_4_0", "cutlass_4_4", "cutlass_4_5",
                                                        "metal-cpp",    "sycl_tla",    "torch"};

// kernels' python_depends.json: general entries, then per-backend entries.
const std::vector<std::string> k_general_python_depends = {"einops", "helion", "tvm-ffi"};
const std::map<Backend, std::vector<std::string>> k_backend_python_depends = {
    {Backend::cuda, {"nvidia-cutlass-dsl"}},
    {Backend::xpu, {"onednn"}},
    {Backend::neuron, {"nki"}},
    {Backend::tpu, {}},
};

// A diagnostic that an older (v3) file would also produce; used to recognise v3 files.
struct TaggedDiagnostic {
  Diagnostic diagnostic;
  bool v3_tolerable = false;
};

class Parser;

// Reads one TOML table: every key read is marked as known, the remaining ones are reported as
// unknown (build.toml denies unknown fields everywhere).
class TableReader {
 public:
  TableReader(Parser& parser, const toml::table& table, std::string name)
      : m_parser(parser), m_table(table), m_name(std::move(name)) {}

  const toml::table& table() const { return m_table; }
  const std::string& name() const { return m_name; }
  const toml::node* take(std::string_view key) {
    m_known.insert(std::string(key));
    return m_table.get(key);
  }
  void allow(std::string_view key) { m_known.insert(std::string(key)); }

  std::optional<std::string> string(std::string_view key, bool required = false);
  std::optional<std::int64_t> integer(std::string_view key, bool required = false);
  std::optional<std::vector<std::string>> strings(std::string_view key, bool required = false,
                                                  const char* path_kind = nullptr);
  std::optional<util::Version> version(std::string_view key);
  const toml::table* subtable(std::string_view key);
  void missing(std::string_view key, const std::string& example, bool v3_tolerable = false);
  /// Reports unknown keys; `candidates` are offered as "did you mean" suggestions.
  void finish();

 private:
  Parser& m_parser;
  const toml::table& m_table;
  std::string m_name;
  std::set<std::string> m_known;
};

class Parser {
 public:
  Parser(std::string file, ParseOutcome& outcome) : m_file(std::move(file)), m_outcome(outcome) {}

  SourceLocation at(const toml::source_region& region) const {
    return {m_file, static_cast<int>(region.begin.line), static_cast<int>(region.begin.column)};
  }
  SourceLocation at(const toml::node* node) const { return node ? at(node->source()) : SourceLocation{m_file, 1, 1}; }
  void error(SourceLocation where, std::string message, std::string hint = {}, bool v3_tolerable = false) {
    m_diagnostics.push_back({{Severity::error, std::move(where), std::move(message), std::move(hint)}, v3_tolerable});
  }
  void warning(SourceLocation where, std::string message, std::string hint = {}) {
    m_diagnostics.push_back({{Severity::warning, std::move(where), std::move(message), std::move(hint)}});
  }
  void record_path(std::string key, const toml::node& node) {
    m_outcome.path_locations.emplace_back(std::move(key), at(&node));
  }

  void run(std::string_view text);

 private:
  void parse_general(TableReader& general, bool edition5, KernelConfig& config);
  void parse_kernel_depends(TableReader& table, std::vector<KernelDependency>& out);
  void parse_python_depends(TableReader& table, const std::vector<std::string>& allowed, const std::string& list_name,
                            std::vector<std::string>& out);
  void parse_torch(TableReader& torch, bool edition5, KernelConfig& config);
  void parse_noarch(TableReader& noarch, KernelConfig& config);
  void parse_tvm_ffi(TableReader& tvm, KernelConfig& config);
  void parse_component(const std::string& name, const toml::table& table, KernelConfig& config);

  std::string m_file;
  ParseOutcome& m_outcome;
  std::vector<TaggedDiagnostic> m_diagnostics;
};

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
  bool ok = true;
  for (size_t i = 0; i < array->size(); ++i) {
    const toml::node& element = *array->get(i);
    if (!element.is_string()) {
      m_parser.error(m_parser.at(&element),
                     m_name + "." + std::string(key) + "[" + std::to_string(i) + "] must be a string");
      ok = false;
      continue;
    }
    out.push_back(*element.value<std::string>());
    if (path_kind) m_parser.record_path(m_name + "." + std::string(key) + "[" + std::to_string(i) + "]", element);
  }
  if (!ok) return std::nullopt;
  return out;
}

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

void Parser::parse_python_depends(TableReader& table, const std::vector<std::string>& allowed,
                                  const std::string& list_name, std::vector<std::string>& out) {
  const toml::node* node = table.table().get("python-depends");
  auto values = table.strings("python-depends");
  if (!values) return;
  const toml::array* array = node->as_array();
  for (size_t i = 0; i < values->size(); ++i) {
    const std::string& dep = (*values)[i];
    if (std::find(allowed.begin(), allowed.end(), dep) == allowed.end()) {
      error(at(array->get(i)), "python dependency \"" + dep + "\" is not allowed in [" + table.name() + "]",
            allowed.empty() ? "no python dependencies are allowed for " + list_name
                            : "allowed here: " + util::join(allowed, ", "));
    } else {
      out.push_back(dep);
    }
  }
}

void Parser::parse_kernel_depends(TableReader& table, std::vector<KernelDependency>& out) {
  const toml::node* node = table.take("kernel-depends");
  if (!node) return;
  const toml::array* array = node->as_array();
  if (!array) {
    error(at(node), table.name() + ".kernel-depends must be an array of inline tables",
          "write it as kernel-depends = [{ repo-id = \"org/name\", version = 1 }]");
    return;
  }
  for (const toml::node& element : *array) {
    const toml::table* entry = element.as_table();
    if (!entry) {
      error(at(&element), "kernel-depends entries must be inline tables",
            "write { repo-id = \"org/name\", version = 1 }");
      continue;
    }
    TableReader reader(*this, *entry, table.name() + ".kernel-depends");
    KernelDependency dep;
    auto repo_id = reader.string("repo-id", true);
    dep.version = reader.integer("version");
    dep.revision = reader.string("revision");
    reader.finish();
    if (repo_id) {
      if (std::count(repo_id->begin(), repo_id->end(), '/') != 1 || repo_id->front() == '/' || repo_id->back() == '/')
        error(at(entry->get("repo-id")), "kernel dependency repo-id \"" + *repo_id + "\" is not of the form org/name");
      dep.repo_id = *repo_id;
    }
    if (dep.version.has_value() == dep.revision.has_value())
      error(at(&element), "a kernel dependency needs exactly one of \"version\" and \"revision\"");
    if (dep.version && *dep.version < 0) error(at(entry->get("version")), "kernel dependency version must be >= 0");
    out.push_back(std::move(dep));
  }
}

void Parser::parse_general(TableReader& general, bool edition5, KernelConfig& config) {
  General& g = config.general;
  general.allow("edition");
  if (auto name = general.string("name", true)) {
    if (!is_valid_kernel_name(*name))
      error(at(general.table().get("name")), "general.name: \"" + *name + "\" is not a valid kernel name",
            "use lowercase letters, digits and '-', starting with a letter and ending with a letter or "
            "digit, e.g. \"img2gray\"");
    g.name = *name;
  }
  if (auto version = general.integer("version", true)) {
    if (*version < 0) error(at(general.table().get("version")), "general.version must be >= 0");
    g.version = *version;
  }
  if (const toml::node* license = general.table().get("license"); !license) {
    general.allow("license");
    general.missing("license", "\"Apache-2.0\"", true);
  } else if (auto value = general.string("license")) {
    g.license = *value;
  }
  if (auto backends = general.strings("backends", true)) {
    const toml::array* array = general.table().get("backends")->as_array();
    if (backends->empty())
      error(at(array), "general.backends is empty", "list at least one of: " + util::join(backend_names(), ", "));
    for (size_t i = 0; i < backends->size(); ++i) {
      auto backend = parse_backend((*backends)[i]);
      if (!backend) {
        std::string suggestion = util::closest_match((*backends)[i], backend_names());
        error(at(array->get(i)), "unknown backend \"" + (*backends)[i] + "\" in general.backends",
              suggestion.empty() ? "backends are: " + util::join(backend_names(), ", ")
                                 : "did you mean \"" + suggestion + "\"?");
      } else if (std::find(g.backends.begin(), g.backends.end(), *backend) != g.backends.end()) {
        error(at(array->get(i)), "backend \"" + (*backends)[i] + "\" is listed twice in general.backends");
      } else {
        g.backends.push_back(*backend);
      }
    }
  }
  for (const char* key : {"upstream", "source"}) {
    if (auto url = general.string(key)) {
      if (!is_valid_git_url(*url))
        error(at(general.table().get(key)), std::string("general.") + key + ": \"" + *url + "\" is not a git URL",
              "use https://, ssh://, git:// (optionally git+...) or user@host:path");
      (std::string_view(key) == "upstream" ? g.upstream : g.source) = *url;
    }
  }
  parse_python_depends(general, k_general_python_depends, "[general]", g.python_depends);
  if (edition5) {
    parse_kernel_depends(general, g.kernel_depends);
  }
  if (const toml::table* hub = general.subtable("hub")) {
    TableReader reader(*this, *hub, "general.hub");
    g.hub_repo_id = reader.string("repo-id");
    g.hub_branch = reader.string("branch");
    reader.finish();
    if (g.hub_repo_id && std::count(g.hub_repo_id->begin(), g.hub_repo_id->end(), '/') != 1)
      error(at(hub->get("repo-id")), "general.hub.repo-id \"" + *g.hub_repo_id + "\" is not of the form org/name");
  }
  struct BackendTable {
    const char* key;
    Backend backend;
    bool versions;
    bool kernel_depends;
    bool edition5_only;
  };
  const BackendTable tables[] = {{"cuda", Backend::cuda, true, true, false},
                                 {"xpu", Backend::xpu, false, true, false},
                                 {"neuron", Backend::neuron, false, true, false},
                                 {"tpu", Backend::tpu, false, false, true}};
  for (const auto& spec : tables) {
    if (spec.edition5_only && !edition5) continue;
    const toml::table* sub = general.subtable(spec.key);
    if (!sub) continue;
    TableReader reader(*this, *sub, std::string("general.") + spec.key);
    BackendDepends& deps = g.backend_depends[spec.backend];
    if (spec.versions) {
      g.cuda_minver = reader.version("minver");
      g.cuda_maxver = reader.version("maxver");
      if (g.cuda_minver && g.cuda_maxver && *g.cuda_maxver < *g.cuda_minver)
        error(at(sub), "general.cuda.maxver " + g.cuda_maxver->str() + " is lower than minver " + g.cuda_minver->str());
    }
    parse_python_depends(reader, k_backend_python_depends.at(spec.backend), std::string("[general.") + spec.key + "]",
                         deps.python_depends);
    if (spec.kernel_depends && edition5) parse_kernel_depends(reader, deps.kernel_depends);
    reader.finish();
  }
}

void Parser::parse_torch(TableReader& torch, bool edition5, KernelConfig& config) {
  TorchExtension& t = config.torch;
  if (auto src = torch.strings("src", false, "path")) t.src = *src;
  if (auto include = torch.strings("include", false, "path")) t.include = *include;
  if (auto pyext = torch.strings("pyext")) t.pyext = *pyext;
  t.minver = torch.version("minver");
  t.maxver = torch.version("maxver");
  if (t.minver && t.maxver && *t.maxver < *t.minver)
    error(at(&torch.table()), "torch.maxver " + t.maxver->str() + " is lower than torch.minver " + t.minver->str());
  if (auto flags = torch.strings("cxx-flags")) t.cxx_flags = *flags;
  if (const toml::node* stable = torch.take("stable-abi")) {
    auto parse_one = [&](const toml::node& node) -> std::optional<util::Version> {
      auto text = node.value<std::string>();
      auto version = text ? util::Version::parse(*text) : std::nullopt;
      if (!version) error(at(&node), "torch.stable-abi must be a Torch version string such as \"2.11\"");
      return version;
    };
    if (stable->is_string()) {
      if (auto version = parse_one(*stable))
        for (Backend backend : config.general.backends) t.stable_abi[backend] = *version;
    } else if (const toml::table* table = stable->as_table(); table && edition5) {
      for (const auto& [key, value] : *table) {
        auto backend = parse_backend(key.str());
        if (!backend) {
          error(at(key.source()), "unknown backend \"" + std::string(key.str()) + "\" in torch.stable-abi");
          continue;
        }
        auto version = parse_one(value);
        bool listed = std::find(config.general.backends.begin(), config.general.backends.end(), *backend) !=
                      config.general.backends.end();
        if (version && listed) t.stable_abi[*backend] = *version;
      }
    } else {
      error(at(stable), edition5 ? "torch.stable-abi must be a version string or a table backend -> version"
                                 : "torch.stable-abi must be a version string in an edition-less build.toml");
    }
  }
  torch.finish();
}

void Parser::parse_noarch(TableReader& noarch, KernelConfig& config) {
  TorchNoarch& n = config.noarch;
  if (auto pyext = noarch.strings("pyext")) n.pyext = *pyext;
  // kernel-builder's code spells these in snake_case while its docs use kebab-case: accept both.
  for (const char* key : {"cuda_capabilities", "cuda-capabilities"})
    if (auto caps = noarch.strings(key)) n.cuda_capabilities = *caps;
  for (const char* key : {"rocm_archs", "rocm-archs"})
    if (auto archs = noarch.strings(key)) n.rocm_archs = *archs;
  noarch.finish();
}

void Parser::parse_tvm_ffi(TableReader& tvm, KernelConfig& config) {
  if (auto src = tvm.strings("src", true, "path")) config.torch.src = *src;
  if (auto include = tvm.strings("include", false, "path")) config.torch.include = *include;
  if (auto pyext = tvm.strings("pyext")) config.torch.pyext = *pyext;
  if (auto flags = tvm.strings("cxx-flags")) config.torch.cxx_flags = *flags;
  tvm.finish();
}

void Parser::parse_component(const std::string& name, const toml::table& table, KernelConfig& config) {
  TableReader reader(*this, table, "kernel." + name);
  KernelComponent component;
  component.name = name;
  component.location = at(&table);
  std::optional<Backend> backend;
  if (auto text = reader.string("backend", true)) {
    static const std::vector<std::string> k_component_backends = {"cpu", "cuda", "metal", "rocm", "xpu"};
    if (std::find(k_component_backends.begin(), k_component_backends.end(), *text) == k_component_backends.end()) {
      error(at(table.get("backend")), "kernel." + name + ".backend: \"" + *text + "\" is not a component backend",
            "components are built for one of: " + util::join(k_component_backends, ", "));
    } else {
      backend = parse_backend(*text);
      component.backend = *backend;
    }
  }
  if (auto src = reader.strings("src", true, "path")) {
    if (src->empty()) error(at(table.get("src")), "kernel." + name + ".src is empty", "list the component's sources");
    component.src = *src;
  }
  if (auto depends = reader.strings("depends", true)) {
    const toml::array* array = table.get("depends")->as_array();
    for (size_t i = 0; i < depends->size(); ++i) {
      const std::string& dep = (*depends)[i];
      if (std::find(k_kernel_dependencies.begin(), k_kernel_dependencies.end(), dep) == k_kernel_dependencies.end()) {
        std::string suggestion = util::closest_match(dep, k_kernel_dependencies);
        error(at(array->get(i)), "unknown dependency \"" + dep + "\" in kernel." + name + ".depends",
              suggestion.empty() ? "known dependencies: " + util::join(k_kernel_dependencies, ", ")
                                 : "did you mean \"" + suggestion + "\"?");
      }
    }
    component.depends = *depends;
  }
  if (auto include = reader.strings("include", false, "path")) component.include = *include;
  if (auto flags = reader.strings("cxx-flags")) component.cxx_flags = *flags;
  bool any = !backend.has_value();  // unknown backend: accept every key, report the backend only
  if (any || backend == Backend::cuda) {
    if (auto caps = reader.strings("cuda-capabilities")) {
      const toml::array* array = table.get("cuda-capabilities")->as_array();
      for (size_t i = 0; i < caps->size(); ++i)
        if (!is_valid_cuda_capability((*caps)[i]))
          error(at(array->get(i)), "\"" + (*caps)[i] + "\" is not a CUDA capability",
                "write capabilities as \"9.0\", \"9.0a\", \"10.0f\" or \"12.0+PTX\"");
      component.cuda_capabilities = *caps;
    }
    if (auto flags = reader.strings("cuda-flags")) component.cuda_flags = *flags;
    component.cuda_minver = reader.version("cuda-minver");
  }
  if (any || backend == Backend::rocm) {
    if (auto archs = reader.strings("rocm-archs")) component.rocm_archs = *archs;
    if (auto flags = reader.strings("hip-flags")) component.hip_flags = *flags;
  }
  if (any || backend == Backend::xpu) {
    if (auto flags = reader.strings("sycl-flags")) component.sycl_flags = *flags;
  }
  reader.finish();
  config.kernels.push_back(std::move(component));
}

void Parser::run(std::string_view text) {
  toml::table root;
  try {
    root = toml::parse(text, m_file);
  } catch (const toml::parse_error& e) {
    m_outcome.diagnostics.push_back(
        {Severity::error, at(e.source()), "invalid TOML: " + std::string(e.description()), ""});
    return;
  }
  KernelConfig config;
  TableReader top(*this, root, "build.toml");
  const toml::table* general_table = top.subtable("general");
  bool edition5 = true;
  if (!general_table) {
    if (!root.get("general"))
      error({m_file, 1, 1}, "build.toml has no [general] table",
            "add [general] with name, version, edition = 5, license and backends");
  } else {
    const toml::node* edition = general_table->get("edition");
    if (!edition) {
      edition5 = false;
      config.source_edition = 4;
    } else if (!edition->is_integer()) {
      error(at(edition), "general.edition must be an integer", "set edition = 5");
    } else if (*edition->value<std::int64_t>() != 5) {
      error(at(edition), "unsupported build edition " + std::to_string(*edition->value<std::int64_t>()),
            "kbuild reads edition 5 (and edition-less v4 files); set edition = 5");
    }
    TableReader general(*this, *general_table, "general");
    parse_general(general, edition5, config);
    general.finish();
  }

  struct FrameworkTable {
    const char* key;
    Framework framework;
  };
  const FrameworkTable frameworks[] = {
      {"torch", Framework::torch}, {"torch-noarch", Framework::torch_noarch}, {"tvm-ffi", Framework::tvm_ffi}};
  const FrameworkTable* chosen = nullptr;
  for (const auto& framework : frameworks) {
    const toml::node* node = root.get(framework.key);
    if (!node) continue;
    if (chosen) continue;  // a second framework table is left over and reported as unknown below
    const toml::table* table = top.subtable(framework.key);
    chosen = &framework;
    config.framework = framework.framework;
    if (!table) continue;
    TableReader reader(*this, *table, framework.key);
    if (framework.framework == Framework::torch) parse_torch(reader, edition5, config);
    if (framework.framework == Framework::torch_noarch) parse_noarch(reader, config);
    if (framework.framework == Framework::tvm_ffi) parse_tvm_ffi(reader, config);
  }
  if (!chosen)
    error({m_file, 1, 1}, "build.toml has no framework table",
          "add exactly one of [torch], [torch-noarch] or [tvm-ffi]", true);

  if (const toml::table* kernels = top.subtable("kernel")) {
    for (const auto& [key, node] : *kernels) {
      std::string name(key.str());
      if (const toml::table* table = node.as_table())
        parse_component(name, *table, config);
      else
        error(at(&node), "kernel." + name + " must be a table", "write it as [kernel." + name + "]");
    }
  }
  // Collect unknown top-level keys, naming a second framework table explicitly.
  for (const auto& [key, node] : root) {
    std::string name(key.str());
    bool is_framework = name == "torch" || name == "torch-noarch" || name == "tvm-ffi";
    if (is_framework && chosen && name != chosen->key) {
      error(at(key.source()), "[" + name + "] conflicts with [" + chosen->key + "]",
            "a build.toml has exactly one framework table");
      top.allow(name);
    }
  }
  top.finish();

  if (config.framework == Framework::torch) {
    for (const auto& component : config.kernels) {
      if (std::find(config.general.backends.begin(), config.general.backends.end(), component.backend) ==
          config.general.backends.end())
        warning(component.location,
                "kernel." + component.name + " is a " + to_string(component.backend) +
                    " component but general.backends does not list " + to_string(component.backend) +
                    "; it is not built",
                "add \"" + to_string(component.backend) + "\" to general.backends or remove the component");
    }
  }
  std::sort(config.kernels.begin(), config.kernels.end(),
            [](const KernelComponent& a, const KernelComponent& b) { return a.name < b.name; });

  bool any_error = std::any_of(m_diagnostics.begin(), m_diagnostics.end(),
                               [](const TaggedDiagnostic& d) { return d.diagnostic.severity == Severity::error; });
  bool only_v3 = any_error && std::all_of(m_diagnostics.begin(), m_diagnostics.end(), [](const TaggedDiagnostic& d) {
                   return d.diagnostic.severity != Severity::error || d.v3_tolerable;
                 });
  if (!edition5 && only_v3) {
    m_outcome.diagnostics.push_back(
        {Severity::error,
         {m_file, 1, 1},
         "this build.toml is in the old v3 format, which kbuild does not build",
         "convert it with `kernel-builder update-build`, or add edition = 5, version and license to [general] "
         "and a framework table such as [torch]"});
    return;
  }
  for (auto& tagged : m_diagnostics) m_outcome.diagnostics.push_back(std::move(tagged.diagnostic));
  if (!edition5 && !any_error) {
    m_outcome.diagnostics.push_back({Severity::warning, at(general_table),
                                     "edition-less (v4) build.toml, read as edition 5",
                                     "add edition = 5 to [general] (kernel-builder update-build does the same)"});
  }
  std::stable_sort(m_outcome.diagnostics.begin(), m_outcome.diagnostics.end(),
                   [](const Diagnostic& a, const Diagnostic& b) {
                     return std::tie(a.location.line, a.location.column) < std::tie(b.location.line, b.location.column);
                   });
  m_outcome.partial = config;
  if (!any_error) m_outcome.config = std::move(config);
}

}  // namespace

ParseOutcome parse_build_toml(std::string_view text, const std::string& file_name) {
  ParseOutcome outcome;
  Parser parser(file_name, outcome);
  parser.run(text);
  return outcome;
}

std::vector<Diagnostic> check_project_files(const ParseOutcome& outcome, const util::FileSystem& fs,
                                            const std::filesystem::path& root, const std::string& file_name) {
  std::vector<Diagnostic> diagnostics;
  if (!outcome.partial) return diagnostics;
  const KernelConfig& config = *outcome.partial;
  for (const auto& [key, location] : outcome.path_locations) {
    // key is "<table>.<field>[i]"; look the value up again from the config.
    const std::vector<std::string>* list = nullptr;
    bool is_include = key.find(".include[") != std::string::npos;
    if (key.starts_with("torch.") || key.starts_with("tvm-ffi.")) {
      list = is_include ? &config.torch.include : &config.torch.src;
    } else if (key.starts_with("kernel.")) {
      std::string rest = key.substr(7);
      size_t dot = rest.rfind(is_include ? ".include[" : ".src[");
      std::string name = rest.substr(0, dot);
      for (const auto& component : config.kernels)
        if (component.name == name) list = is_include ? &component.include : &component.src;
    }
    if (!list) continue;
    size_t index = std::stoul(key.substr(key.rfind('[') + 1));
    if (index >= list->size()) continue;
    const std::string& rel = (*list)[index];
    std::filesystem::path path(rel);
    if (path.is_absolute() || rel.find("..") != std::string::npos) {
      diagnostics.push_back(
          {Severity::error, location, "\"" + rel + "\" must be a relative path inside the kernel directory", ""});
      continue;
    }
    util::FileStat st = fs.stat(root / path);
    if (is_include ? !st.is_dir : !st.is_file) {
      diagnostics.push_back(
          {Severity::error, location,
           std::string(is_include ? "include directory" : "source file") + " \"" + rel + "\" does not exist",
           "paths are relative to " + root.string()});
    }
  }
  if (config.framework != Framework::tvm_ffi && is_valid_kernel_name(config.general.name)) {
    std::string package = "torch-ext/" + config.general.python_name();
    if (!fs.stat(root / package / "__init__.py").is_file)
      diagnostics.push_back({Severity::error,
                             {file_name, 0, 0},
                             "the Python package " + package + "/__init__.py is missing",
                             "every kernel ships a Python package named after general.name"});
    if (fs.stat(root / package / config.general.python_name()).exists)
      diagnostics.push_back({Severity::error,
                             {file_name, 0, 0},
                             package + "/" + config.general.python_name() + " must not exist",
                             "it would clash with the compatibility package of the loader"});
  }
  std::stable_sort(diagnostics.begin(), diagnostics.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return std::tie(a.location.line, a.location.column) < std::tie(b.location.line, b.location.column);
  });
  return diagnostics;
}

ParseOutcome load_kernel_config(const util::FileSystem& fs, const std::filesystem::path& root) {
  std::filesystem::path file = root / "build.toml";
  auto text = fs.read_file(file);
  if (!text) {
    ParseOutcome outcome;
    outcome.diagnostics.push_back(
        {Severity::error,
         {file.string(), 0, 0},
         fs.stat(root).is_dir ? "no build.toml in " + root.string() : root.string() + " is not a directory",
         "pass the kernel directory (the one containing build.toml), or run `kbuild init`"});
    return outcome;
  }
  ParseOutcome outcome = parse_build_toml(*text, file.string());
  for (auto& d : check_project_files(outcome, fs, root, file.string())) outcome.diagnostics.push_back(std::move(d));
  if (has_errors(outcome.diagnostics)) outcome.config.reset();
  return outcome;
}

}  // namespace kbuild::config
