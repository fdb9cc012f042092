#include "kbuild/config/build_toml.hpp"

#include "kbuild/config/build_toml_parser.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <regex>
#include <set>
#include <sstream>

#include "kbuild/util/strings.hpp"
#include "kbuild/util/toml_parse.hpp"

namespace kbuild::config {

bool is_valid_kernel_name(std::string_view name) {
  if (name.size() < 2 || name.size() > k_max_kernel_name) return false;
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

std::expected<std::string, std::string> normalize_kernel_path(std::string_view path, bool directory) {
  if (path.empty()) return std::unexpected("an empty path");
  if (std::any_of(path.begin(), path.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; }))
    return std::unexpected("\"" + util::printable(path) + "\" contains a control character");
  if (path.front() == '/')
    return std::unexpected("\"" + std::string(path) + "\" must be a relative path inside the kernel directory");
  std::vector<std::string> parts;
  for (const auto& part : util::split(path, '/')) {
    if (part.empty() || part == ".") continue;
    if (part == "..")
      return std::unexpected("\"" + std::string(path) +
                             "\" must not contain \"..\" (paths stay inside the kernel directory)");
    parts.push_back(part);
  }
  if (parts.empty() && directory) return std::string(".");
  if (parts.empty()) return std::unexpected("\"" + std::string(path) + "\" names the kernel directory itself");
  return util::join(parts, "/");
}

const std::vector<std::string>& known_cuda_capabilities() {
  static const std::vector<std::string> k_known = {"3.0", "3.2",  "3.5",  "3.7",  "5.0",  "5.2",  "5.3", "6.0", "6.1",
                                                   "6.2", "7.0",  "7.2",  "7.5",  "8.0",  "8.6",  "8.7", "8.8", "8.9",
                                                   "9.0", "10.0", "10.1", "10.3", "11.0", "12.0", "12.1"};
  return k_known;
}

bool is_valid_cuda_capability(std::string_view capability) {
  static const std::regex k_pattern(R"(^[0-9]+\.[0-9]+[af]?(\+PTX)?$)");
  return std::regex_match(capability.begin(), capability.end(), k_pattern);
}

namespace detail {

void Parser::run(std::string_view text) {
  toml::table root;
  try {
    root = util::parse_toml(text, m_file);
  } catch (const toml::parse_error& e) {
    m_outcome.diagnostics.push_back(
        {Severity::error, at(e.source()), "invalid TOML: " + std::string(e.description()), ""});
    return;
  }
  KernelConfig config;
  TableReader top(*this, root, "build.toml");
  const toml::table* general_table = nullptr;
  bool edition5 = parse_general_table(root, top, config, general_table);
  const char* framework = parse_framework(root, top, config, edition5);
  parse_components(top, config);
  // A second framework table is named explicitly rather than reported as an unknown key.
  for (const auto& [key, node] : root) {
    std::string name(key.str());
    bool is_framework = name == "torch" || name == "torch-noarch" || name == "tvm-ffi";
    if (is_framework && framework && name != framework) {
      error(at(key.source()), "[" + name + "] conflicts with [" + framework + "]",
            "a build.toml has exactly one framework table");
      top.allow(name);
    }
  }
  top.finish();
  finish(std::move(config), edition5, general_table);
}

// [general]; returns whether the file is edition 5 (else edition-less v4, or v3).
bool Parser::parse_general_table(const toml::table& root, TableReader& top, KernelConfig& config,
                                 const toml::table*& general_table) {
  general_table = top.subtable("general");
  if (!general_table) {
    if (!root.get("general"))
      error({m_file, 1, 1}, "build.toml has no [general] table",
            "add [general] with name, version, edition = 5, license and backends");
    return true;
  }
  bool edition5 = true;
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
  return edition5;
}

// Exactly one of [torch], [torch-noarch], [tvm-ffi]; returns the key of the one read, or nullptr.
const char* Parser::parse_framework(const toml::table& root, TableReader& top, KernelConfig& config, bool edition5) {
  struct FrameworkTable {
    const char* key;
    Framework framework;
  };
  const FrameworkTable frameworks[] = {
      {"torch", Framework::torch}, {"torch-noarch", Framework::torch_noarch}, {"tvm-ffi", Framework::tvm_ffi}};
  for (const auto& framework : frameworks) {
    if (!root.get(framework.key)) continue;
    const toml::table* table = top.subtable(framework.key);
    config.framework = framework.framework;
    if (table) {
      TableReader reader(*this, *table, framework.key);
      if (framework.framework == Framework::torch) parse_torch(reader, edition5, config);
      if (framework.framework == Framework::torch_noarch) parse_noarch(reader, config);
      if (framework.framework == Framework::tvm_ffi) parse_tvm_ffi(reader, config);
    }
    return framework.key;
  }
  error({m_file, 1, 1}, "build.toml has no framework table", "add exactly one of [torch], [torch-noarch] or [tvm-ffi]",
        true);
  return nullptr;
}

void Parser::parse_components(TableReader& top, KernelConfig& config) {
  if (const toml::table* kernels = top.subtable("kernel")) {
    for (const auto& [key, node] : *kernels) {
      std::string name(key.str());
      if (const toml::table* table = node.as_table())
        parse_component(name, *table, config);
      else
        error(at(&node), "kernel." + name + " must be a table", "write it as [kernel." + name + "]");
    }
  }
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
}

// The outcome: a v3 file is named as such; every diagnostic sorted by position; the config when
// there was no error.
void Parser::finish(KernelConfig config, bool edition5, const toml::table* general_table) {
  bool any_error = std::any_of(m_diagnostics.begin(), m_diagnostics.end(),
                               [](const TaggedDiagnostic& d) { return d.diagnostic.severity == Severity::error; });
  bool only_v3 = any_error && std::all_of(m_diagnostics.begin(), m_diagnostics.end(), [](const TaggedDiagnostic& d) {
                   return d.diagnostic.severity != Severity::error || d.v3_tolerable;
                 });
  m_outcome.edition = edition5 ? 5 : only_v3 ? 3 : 4;
  if (!edition5 && only_v3) {
    m_outcome.diagnostics.push_back(
        {Severity::error,
         {m_file, 1, 1},
         "this build.toml is in the old v3 format, which kbuild does not build",
         "convert it with `kbuild update-build` (as `kernel-builder update-build` does), or add edition = 5, version "
         "and license to [general] "
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

}  // namespace detail

using detail::Parser;

ParseOutcome parse_build_toml(std::string_view text, const std::string& file_name) {
  ParseOutcome outcome;
  Parser parser(file_name, outcome);
  parser.run(text);
  return outcome;
}

namespace {
// Whether `path`, symbolic links resolved, is inside `real_root` (the kernel directory, resolved once).
bool inside(const util::FileSystem& fs, const std::optional<std::filesystem::path>& real_root,
            const std::filesystem::path& path) {
  auto real = fs.real_path(path);
  if (!real_root || !real) return false;
  auto [r, p] = std::mismatch(real_root->begin(), real_root->end(), real->begin(), real->end());
  return r == real_root->end();
}
}  // namespace

std::vector<Diagnostic> check_project_files(const ParseOutcome& outcome, const util::FileSystem& fs,
                                            const std::filesystem::path& root, const std::string& file_name) {
  std::vector<Diagnostic> diagnostics;
  if (!outcome.partial) return diagnostics;
  const KernelConfig& config = *outcome.partial;
  std::optional<std::filesystem::path> real_root;
  if (auto resolved = fs.real_path(root)) real_root = *resolved;
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
    const std::string& rel = (*list)[index];  // already normalised by the parser
    std::filesystem::path path(rel);
    util::FileStat st = fs.stat(root / path);
    if (st.exists && !inside(fs, real_root, root / path)) {
      diagnostics.push_back({Severity::error, location,
                             "\"" + rel + "\" leads outside the kernel directory (through a symbolic link)",
                             "copy the file into the kernel directory; builds only read what the kernel holds"});
      continue;
    }
    if (is_include ? !st.is_dir : !st.is_file) {
      std::string what = std::string(is_include ? "include directory" : "source file") + " \"" + rel + "\"";
      diagnostics.push_back(
          {Severity::error, location,
           what + (st.exists ? (is_include ? " is not a directory" : " is not a regular file") : " does not exist"),
           st.exists ? "list files and directories only (not FIFOs, devices or sockets)"
                     : "paths are relative to " + root.string()});
      continue;
    }
    // The object is <name>.o, written as <name>.o.tmp, next to nvcc's intermediates
    // (<name>.o.tmp.cudafe1.stub.c): names a file system refuses (over 255 bytes) fail in the compiler.
    if (constexpr size_t k_max_name = 224; !is_include && path.filename().string().size() > k_max_name)
      diagnostics.push_back({Severity::error, location,
                             "source file name \"" + path.filename().string().substr(0, 40) + "...\" is " +
                                 std::to_string(path.filename().string().size()) + " bytes long; at most " +
                                 std::to_string(k_max_name) + " are usable",
                             "kbuild names the object file and the compiler's intermediates after the source "
                             "(up to 31 more bytes), and file names end at 255 bytes: rename the file"});
  }
  if (is_valid_kernel_name(config.general.name)) {
    std::string package = config.package_dir();
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
  if (auto st = fs.stat(file); st.exists && (!st.is_file || st.size > (1u << 20))) {
    ParseOutcome outcome;
    outcome.diagnostics.push_back({Severity::error,
                                   {file.string(), 0, 0},
                                   st.is_file ? "build.toml is larger than 1 MiB" : "build.toml is not a regular file",
                                   "build.toml is a small text file; check what the path points at"});
    return outcome;
  }
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

namespace {

// A TOML value as JSON: tables become objects (whose keys nlohmann keeps sorted), dates and times
// their TOML text.
nlohmann::json as_json(const toml::node& node) {
  if (const toml::table* table = node.as_table()) {
    nlohmann::json object = nlohmann::json::object();
    for (const auto& [key, value] : *table) object[std::string(key.str())] = as_json(value);
    return object;
  }
  if (const toml::array* array = node.as_array()) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& value : *array) list.push_back(as_json(value));
    return list;
  }
  if (auto text = node.value_exact<std::string>()) return *text;
  if (auto integer = node.value_exact<std::int64_t>()) return *integer;
  if (auto real = node.value_exact<double>()) return *real;
  if (auto flag = node.value_exact<bool>()) return *flag;
  std::ostringstream out;
  node.visit([&](const auto& value) { out << value; });
  return out.str();
}

}  // namespace

std::string build_toml_input_text(std::string_view text) {
  try {
    toml::table table = util::parse_toml(text, "build.toml");
    if (toml::table* general = table["general"].as_table()) general->erase("hub");
    return "kbuild-build-toml 1\n" + as_json(table).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } catch (const toml::parse_error&) {
    return std::string(text);
  }
}

}  // namespace kbuild::config
