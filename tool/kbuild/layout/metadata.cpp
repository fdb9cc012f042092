#include "kbuild/layout/metadata.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <regex>

namespace kbuild::layout {

using ordered_json = nlohmann::ordered_json;

namespace {
ordered_json dependency_json(const config::KernelDependency& dep) {
  ordered_json j;
  j["repo-id"] = dep.repo_id;
  if (dep.version) j["version"] = *dep.version;
  if (dep.revision) j["revision"] = *dep.revision;
  return j;
}
}  // namespace

std::string Metadata::to_json() const {
  ordered_json j;
  j["name"] = name;
  j["id"] = id;
  j["version"] = version;
  j["license"] = license;
  if (upstream) j["upstream"] = *upstream;
  if (source) j["source"] = *source;
  j["python-depends"] = python_depends;
  j["kernel-depends"] = ordered_json::array();
  for (const auto& dep : kernel_depends) j["kernel-depends"].push_back(dependency_json(dep));
  j["backend"] = {{"type", config::to_string(backend)}};
  if (!archs.empty()) j["backend"]["archs"] = archs;
  if (digest) {
    ordered_json files = ordered_json::object();
    for (const auto& [path, value] : *digest) files[path] = value;
    j["digest"] = {{"algorithm", digest_algorithm}, {"files", files}};
  }
  ordered_json provenance;
  provenance["kernel-builder"] = {{"version", builder_version}};
  if (kernel) provenance["kernel"] = {{"commit", kernel->commit}, {"dirty", kernel->dirty}};
  j["provenance"] = provenance;
  if (toolchain) {
    ordered_json record;
    record["compiler"] = toolchain->compiler;
    record["compiler-origin"] = toolchain->compiler_origin;
    if (!toolchain->host_packages.empty()) record["host-packages"] = toolchain->host_packages;
    if (!toolchain->torch.empty()) {
      record["torch"] = toolchain->torch;
      record["torch-origin"] = toolchain->torch_origin;
    }
    if (!toolchain->cuda.empty()) {
      record["cuda"] = toolchain->cuda;
      record["cuda-origin"] = toolchain->cuda_origin;
    }
    j["toolchain"] = record;
  }
  return j.dump(2) + "\n";
}

namespace {

// nlohmann's message as a sentence: "[json.exception.out_of_range.403] key 'license' not found" is
// "the key "license" is missing".
std::string plain_json_error(const nlohmann::json::exception& e) {
  std::string what = e.what();
  if (auto end = what.find("] "); what.starts_with("[json.exception.") && end != std::string::npos)
    what = what.substr(end + 2);
  static const std::regex k_missing(R"(key '([^']*)' not found)");
  static const std::regex k_type(R"(type must be (\w+), but is (\w+))");
  std::smatch match;
  if (std::regex_search(what, match, k_missing)) return "the key \"" + match[1].str() + "\" is missing";
  if (std::regex_search(what, match, k_type))
    return "a value is " + match[2].str() + " where " + match[1].str() + " is expected";
  if (e.id >= 101 && e.id <= 199) return "it is not valid JSON (" + what + ")";
  return what;
}

}  // namespace

Result<Metadata> Metadata::parse(std::string_view text) {
  try {
    auto j = nlohmann::json::parse(text);
    Metadata m;
    m.name = j.at("name");
    m.id = j.at("id");
    // As the `kernels` package reads it (kernels-data's Metadata): version an unsigned integer (1.0
    // is refused), license required, kernel-depends entries with repo-id and one of version/revision only.
    if (!j.at("version").is_number_unsigned() || j["version"].get<std::uint64_t>() > 1'000'000'000)
      return fail("invalid metadata.json: \"version\" must be a non-negative integer (at most 10^9), not " +
                  j["version"].dump());
    m.version = j["version"];
    m.license = j.at("license").get<std::string>();
    if (j.contains("upstream")) m.upstream = j["upstream"];
    if (j.contains("source")) m.source = j["source"];
    m.python_depends = j.at("python-depends").get<std::vector<std::string>>();
    auto backend = config::parse_backend(j.at("backend").at("type").get<std::string>());
    if (!backend) return fail("unknown backend type in metadata.json");
    m.backend = *backend;
    if (j["backend"].contains("archs")) m.archs = j["backend"]["archs"].get<std::vector<std::string>>();
    if (j.contains("kernel-depends")) {
      for (const auto& dep : j["kernel-depends"]) {
        config::KernelDependency d;
        for (const auto& [key, value] : dep.items())
          if (key != "repo-id" && key != "version" && key != "revision")
            return fail("invalid kernel-depends entry in metadata.json (unknown key \"" + key + "\"): " + dep.dump());
        d.repo_id = dep.at("repo-id").get<std::string>();
        if (dep.contains("version")) {
          if (!dep["version"].is_number_unsigned())
            return fail("invalid kernel-depends entry in metadata.json (version must be a non-negative integer): " +
                        dep.dump());
          d.version = dep["version"].get<std::int64_t>();
        }
        if (dep.contains("revision")) d.revision = dep["revision"].get<std::string>();
        if (d.version.has_value() == d.revision.has_value())
          return fail("invalid kernel-depends entry in metadata.json: " + dep.dump());
        m.kernel_depends.push_back(std::move(d));
      }
    }
    if (j.contains("digest")) {
      m.digest_algorithm = j["digest"].at("algorithm").get<std::string>();
      if (m.digest_algorithm != "sha256" && m.digest_algorithm != "sha512")
        return fail("unsupported digest algorithm \"" + m.digest_algorithm + "\" in metadata.json");
      Digest digest;
      for (const auto& [path, value] : j["digest"].at("files").items()) digest[path] = value;
      m.digest = digest;
    }
    if (j.contains("provenance")) {
      const auto& p = j["provenance"];
      m.builder_version = p.at("kernel-builder").at("version");
      if (p.contains("kernel")) m.kernel = GitProvenance{p["kernel"].at("commit"), p["kernel"].at("dirty")};
    }
    if (j.contains("toolchain") && j["toolchain"].is_object()) {
      const auto& t = j["toolchain"];
      ToolchainRecord record;
      record.compiler = t.value("compiler", "");
      record.compiler_origin = t.value("compiler-origin", "");
      if (t.contains("host-packages")) record.host_packages = t["host-packages"].get<std::vector<std::string>>();
      record.torch = t.value("torch", "");
      record.torch_origin = t.value("torch-origin", "");
      record.cuda = t.value("cuda", "");
      record.cuda_origin = t.value("cuda-origin", "");
      m.toolchain = record;
    }
    return m;
  } catch (const nlohmann::json::exception& e) {
    return fail("invalid metadata.json: " + plain_json_error(e));
  } catch (const std::exception& e) {
    return fail(std::string("invalid metadata.json: ") + e.what());
  }
}

Metadata metadata_for(const config::KernelConfig& config, config::Backend backend, const std::string& ops_id) {
  Metadata m;
  const config::General& g = config.general;
  m.name = g.name;
  m.id = ops_id;
  m.version = g.version;
  m.license = g.license;
  m.upstream = g.upstream;
  m.source = g.source;
  m.python_depends = g.python_depends;
  m.kernel_depends = g.kernel_depends;
  if (auto it = g.backend_depends.find(backend); it != g.backend_depends.end()) {
    m.python_depends.insert(m.python_depends.end(), it->second.python_depends.begin(), it->second.python_depends.end());
    m.kernel_depends.insert(m.kernel_depends.end(), it->second.kernel_depends.begin(), it->second.kernel_depends.end());
  }
  m.backend = backend;
  return m;
}

}  // namespace kbuild::layout
