#include <algorithm>

#include "kbuild/config/build_toml_parser.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::config::detail {

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
    if (name->size() > k_max_kernel_name)
      error(at(general.table().get("name")),
            "general.name is " + std::to_string(name->size()) + " characters long; kbuild accepts at most " +
                std::to_string(k_max_kernel_name),
            "the library is named after it and a file name has at most 255 bytes; choose a shorter name");
    else if (!is_valid_kernel_name(*name))
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
        warning(at(array->get(i)), "backend \"" + (*backends)[i] + "\" is listed twice in general.backends",
                "remove the second one (kernel-builder ignores it too)");
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
  parse_backend_tables(general, edition5, g);
}

// [general.cuda], [general.xpu], [general.neuron], [general.tpu] (edition 5 only).
void Parser::parse_backend_tables(TableReader& general, bool edition5, General& g) {
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
  // kernel-builder's parser takes these in snake_case while its docs write kebab-case: kbuild takes
  // both, and warns about the spelling kernel-builder (and the Hub's CI) would refuse.
  for (const char* key : {"cuda_capabilities", "cuda-capabilities"})
    if (auto caps = noarch.strings(key)) n.cuda_capabilities = *caps;
  for (const char* key : {"rocm_archs", "rocm-archs"})
    if (auto archs = noarch.strings(key)) n.rocm_archs = *archs;
  for (const auto& [kebab, snake] :
       {std::pair{"cuda-capabilities", "cuda_capabilities"}, std::pair{"rocm-archs", "rocm_archs"}})
    if (const toml::node* node = noarch.take(kebab))
      warning(at(node), std::string("torch-noarch.") + kebab + ": kernel-builder's parser refuses this spelling",
              std::string("write ") + snake + " (kbuild reads both)");
  noarch.finish();
}

void Parser::parse_tvm_ffi(TableReader& tvm, KernelConfig& config) {
  if (auto src = tvm.strings("src", true, "path")) config.torch.src = *src;
  if (auto include = tvm.strings("include", false, "path")) config.torch.include = *include;
  if (auto pyext = tvm.strings("pyext")) config.torch.pyext = *pyext;
  if (auto flags = tvm.strings("cxx-flags")) config.torch.cxx_flags = *flags;
  tvm.finish();
}

// kernel-builder's CMake drops empty elements (an all-empty list means the defaults) and intersects the
// list with each CUDA version's loosely, so a capability of no architecture ("11.8") among real ones
// is dropped there too: both are warnings. A list of unknown capabilities only would build nothing.
void Parser::check_cuda_capabilities(const std::vector<std::string>& caps, const toml::array& array) {
  const auto& known = known_cuda_capabilities();
  auto base_of = [](const std::string& cap) {
    std::string base = cap.substr(0, cap.find('+'));
    if (base.ends_with('a') || base.ends_with('f')) base.pop_back();
    return base;
  };
  bool any_known = std::any_of(caps.begin(), caps.end(), [&](const std::string& cap) {
    return is_valid_cuda_capability(cap) && std::find(known.begin(), known.end(), base_of(cap)) != known.end();
  });
  for (size_t i = 0; i < caps.size(); ++i) {
    const std::string& cap = caps[i];
    if (cap.empty()) {
      warning(at(array.get(i)), "an empty CUDA capability is ignored, as kernel-builder does",
              "remove it (without any capability, the default list of the CUDA version is used)");
    } else if (!is_valid_cuda_capability(cap)) {
      error(at(array.get(i)), "\"" + cap + "\" is not a CUDA capability",
            "write capabilities as \"9.0\", \"9.0a\", \"10.0f\" or \"12.0+PTX\"");
    } else if (std::find(known.begin(), known.end(), base_of(cap)) == known.end()) {
      std::string message = "\"" + cap + "\" is not the capability of any CUDA architecture";
      std::string hint = "known capabilities: " + util::join(known, ", ");
      if (any_known)
        warning(at(array.get(i)), message + "; it is ignored, as kernel-builder does", hint);
      else
        error(at(array.get(i)), message + " (and no other capability is listed: nothing would be built)", hint);
    }
  }
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
      check_cuda_capabilities(*caps, *table.get("cuda-capabilities")->as_array());
      std::erase(*caps, std::string());
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

}  // namespace kbuild::config::detail
