#pragma once
// The build.toml parser's parts (private to config/): a reader per TOML table that reports unknown
// keys, and the Parser that turns a file into a KernelConfig with every diagnostic. The sections are
// parsed in build_toml_sections.cpp, the tables read in build_toml_reader.cpp, the whole in
// build_toml.cpp.

#include <toml++/toml.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kbuild/config/build_toml.hpp"
#include "kbuild/config/diagnostic.hpp"

namespace kbuild::config::detail {

inline const std::vector<std::string> k_kernel_dependencies = {
    "cutlass_2_10", "cutlass_3_5", "cutlass_3_6", "cutlass_3_8", "cutlass_3_9", "cutlass_4_0",
    "cutlass_4_4",  "cutlass_4_5", "metal-cpp",   "sycl_tla",    "torch"};

// kernels' python_depends.json: general entries, then per-backend entries.
inline const std::vector<std::string> k_general_python_depends = {"einops", "helion", "tvm-ffi"};
inline const std::map<Backend, std::vector<std::string>> k_backend_python_depends = {
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
  void check_cuda_capabilities(const std::vector<std::string>& caps, const toml::array& array);
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
  // The steps of run().
  bool parse_general_table(const toml::table& root, TableReader& top, KernelConfig& config,
                           const toml::table*& general_table);
  const char* parse_framework(const toml::table& root, TableReader& top, KernelConfig& config, bool edition5);
  void parse_components(TableReader& top, KernelConfig& config);
  void finish(KernelConfig config, bool edition5, const toml::table* general_table);

 private:
  void parse_general(TableReader& general, bool edition5, KernelConfig& config);
  void parse_backend_tables(TableReader& general, bool edition5, General& g);
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

}  // namespace kbuild::config::detail
