#include "kbuild/usecase/kernel_source.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "kbuild/util/git.hpp"
#include "kbuild/util/hash.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::usecase {

Result<void> require_kernel_dir(const util::FileSystem& fs, const std::filesystem::path& kernel_dir) {
  const char* hint = "pass the kernel directory (the one containing build.toml), or create one with `kbuild init`";
  if (!fs.stat(kernel_dir).is_dir) return fail(kernel_dir.string() + " is not a directory", hint, ExitCode::usage);
  if (!fs.stat(kernel_dir / "build.toml").exists)
    return fail("no build.toml in " + kernel_dir.string(), hint, ExitCode::usage);
  return {};
}

Result<config::KernelConfig> load_kernel(const util::FileSystem& fs, const std::filesystem::path& kernel_dir,
                                         const config::DiagnosticSink& sink) {
  KB_TRY(require_kernel_dir(fs, kernel_dir));
  auto outcome = config::load_kernel_config(fs, kernel_dir);
  if (sink && !outcome.diagnostics.empty()) sink(outcome.diagnostics);
  if (!outcome.config) {
    size_t errors = 0;
    for (const auto& d : outcome.diagnostics) errors += d.severity == config::Severity::error;
    return fail((kernel_dir / "build.toml").string() + " is invalid (" + std::to_string(errors) + " error" +
                    (errors == 1 ? "" : "s") + ")",
                "fix the problems listed above; nothing was built", ExitCode::usage);
  }
  return *outcome.config;
}

bool is_valid_unique_id(const std::string& id) {
  return !id.empty() && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

namespace {

// Entries that are not the kernel's sources: outputs, intermediates, bytecode, and dot-files
// (version-control and editor state).
bool is_source_entry(const util::DirEntry& entry, bool top_level) {
  if (entry.name.empty() || entry.name[0] == '.' || entry.name == "__pycache__") return false;
  if (top_level && entry.name == "build") return false;
  return !entry.name.ends_with(".pyc");
}

Result<void> collect_sources(const util::FileSystem& fs, const std::filesystem::path& dir, const std::string& prefix,
                             std::vector<std::string>& out) {
  KB_TRY_ASSIGN(auto entries, fs.list_dir(dir));
  for (const auto& entry : entries) {
    if (!is_source_entry(entry, prefix.empty())) continue;
    std::string rel = prefix.empty() ? entry.name : prefix + "/" + entry.name;
    if (entry.is_dir) {
      KB_TRY(collect_sources(fs, dir / entry.name, rel, out));
    } else if (entry.is_file) {
      out.push_back(std::move(rel));
    }
  }
  return {};
}

}  // namespace

Result<std::vector<std::string>> kernel_source_files(const util::FileSystem& fs,
                                                     const std::filesystem::path& kernel_dir) {
  std::vector<std::string> files;
  KB_TRY(collect_sources(fs, kernel_dir, "", files));
  std::sort(files.begin(), files.end());
  return files;
}

namespace {

bool c_family_file(const std::string& path) {
  for (const char* ext :
       {".h", ".hh", ".hpp", ".hxx", ".cuh", ".inc", ".inl", ".ipp", ".tcc", ".c", ".cc", ".cpp", ".cxx", ".cu"})
    if (path.ends_with(ext)) return true;
  return false;
}

// "dir" -> "dir/"; "." and "" -> "" (the whole kernel directory).
std::string directory_prefix(const std::string& dir) {
  std::string normal = std::filesystem::path(dir).lexically_normal().generic_string();
  if (normal == "." || normal.empty()) return "";
  return normal.ends_with("/") ? normal : normal + "/";
}

}  // namespace

Result<std::vector<std::string>> build_input_files(const util::FileSystem& fs, const std::filesystem::path& kernel_dir,
                                                   const config::KernelConfig& config) {
  std::set<std::string> listed = {"build.toml"};
  std::vector<std::string> include_prefixes;
  auto add = [&](const std::vector<std::string>& src, const std::vector<std::string>& include) {
    for (const auto& file : src) listed.insert(std::filesystem::path(file).lexically_normal().generic_string());
    for (const auto& dir : include) include_prefixes.push_back(directory_prefix(dir));
  };
  add(config.torch.src, config.torch.include);
  for (const auto& component : config.kernels) add(component.src, component.include);
  const std::string package = directory_prefix(config.package_dir());
  KB_TRY_ASSIGN(std::vector<std::string> files, kernel_source_files(fs, kernel_dir));
  std::vector<std::string> inputs;
  for (const auto& rel : files) {
    bool input = listed.count(rel) || rel.starts_with(package);
    for (const auto& prefix : include_prefixes) input = input || (rel.starts_with(prefix) && c_family_file(rel));
    if (input) inputs.push_back(rel);
  }
  return inputs;
}

std::string SourceManifest::render() const {
  std::string out = "kbuild-sources 1 " + id + "\n";
  for (const auto& [rel, sha] : files) out += sha + " " + rel + "\n";
  return out;
}

std::optional<SourceManifest> SourceManifest::parse(std::string_view text) {
  SourceManifest manifest;
  auto lines = util::split(text, '\n');
  if (lines.empty() || !lines[0].starts_with("kbuild-sources 1 ")) return std::nullopt;
  manifest.id = lines[0].substr(17);
  for (size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    if (lines[i].size() < 66 || lines[i][64] != ' ') return std::nullopt;
    manifest.files.emplace_back(lines[i].substr(65), lines[i].substr(0, 64));
  }
  return manifest;
}

std::string SourceManifest::change_since(const SourceManifest& before) const {
  std::map<std::string, std::string> then(before.files.begin(), before.files.end());
  for (const auto& [rel, sha] : files) {
    auto it = then.find(rel);
    if (it == then.end()) return rel + " is a new build input";
    if (it->second != sha) return rel + " changed";
    then.erase(it);
  }
  if (!then.empty()) return then.begin()->first + " is no longer a build input";
  return "";
}

Result<SourceManifest> source_manifest(const util::FileSystem& fs, const std::filesystem::path& kernel_dir,
                                       const config::KernelConfig& config) {
  SourceManifest manifest;
  KB_TRY_ASSIGN(std::vector<std::string> files, build_input_files(fs, kernel_dir, config));
  util::Hasher hasher;
  hasher.update("kbuild-source-id-v2\n");
  for (const auto& rel : files) {
    KB_TRY_ASSIGN(std::string digest, util::sha256_file_raw(fs, kernel_dir / rel));
    hasher.update(rel).update(std::string_view("\0", 1)).update(digest);
    manifest.files.emplace_back(rel, util::to_hex(digest));
  }
  manifest.id = "src" + hasher.finish_hex().substr(0, 8);
  return manifest;
}

Result<std::string> source_content_id(const util::FileSystem& fs, const std::filesystem::path& kernel_dir,
                                      const config::KernelConfig& config) {
  KB_TRY_ASSIGN(SourceManifest manifest, source_manifest(fs, kernel_dir, config));
  return manifest.id;
}

Result<BuildIdentity> build_identity(util::FileSystem& fs, util::ProcessLauncher& launcher,
                                     const std::filesystem::path& kernel_dir, const config::KernelConfig& config,
                                     const std::optional<std::string>& explicit_id) {
  BuildIdentity identity;
  KB_TRY_ASSIGN(identity.sources, source_manifest(fs, kernel_dir, config));
  if (auto git = util::git_state(launcher, kernel_dir))
    identity.kernel_git = layout::GitProvenance{git->commit, git->dirty};
  if (explicit_id) {
    if (!is_valid_unique_id(*explicit_id))
      return fail("--unique-id \"" + *explicit_id + "\" is not usable in a Python identifier",
                  "use letters, digits and '_' only", ExitCode::usage);
    identity.unique_id = *explicit_id;
    return identity;
  }
  identity.unique_id = identity.sources.id;
  return identity;
}

}  // namespace kbuild::usecase
