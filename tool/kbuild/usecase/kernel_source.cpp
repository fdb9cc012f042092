#include "kbuild/usecase/kernel_source.hpp"

#include <algorithm>
#include <future>
#include <map>
#include <set>

#include <fmt/core.h>

#include "kbuild/config/build_toml.hpp"
#include "kbuild/plan/reproducibility.hpp"
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

// Walks the kernel directory. A symbolic link is followed only when it resolves inside the kernel
// directory (`tree.real_root`) and, for a directory, not to one that contains it (a loop); any other
// link is not followed and is remembered in `tree.refused` with the reason, for the callers to refuse
// when it is one of their inputs.
struct SourceTree {
  std::filesystem::path real_root;
  bool all_entries = false;  ///< also dot-entries, __pycache__ and bytecode (the package as it is)
  std::vector<std::string> files;
  std::map<std::string, std::string> refused;  ///< relative path of a link -> why it was not followed
  std::vector<std::filesystem::path> descent;  ///< real paths of the directories being walked, outermost first
};

std::optional<std::string> refused_link(const util::FileSystem& fs, const SourceTree& tree,
                                        const std::filesystem::path& link, bool is_dir) {
  auto real = fs.real_path(link);
  if (!real) return "a dangling link (or a loop of links)";
  auto inside = [](const std::filesystem::path& path, const std::filesystem::path& root) {
    auto rel = path.lexically_relative(root);
    return !rel.empty() && *rel.begin() != "..";
  };
  if (!inside(*real, tree.real_root) && *real != tree.real_root)
    return "a link to " + real->string() + ", outside the kernel directory";
  // A directory being walked (the link's own, an ancestor, or one reached through another link,
  // x/to_y -> y with y/to_x -> x) at or below the target: following it would walk in circles.
  if (is_dir)
    for (const auto& walked : tree.descent)
      if (walked == *real || inside(walked, *real)) return "a link to a directory that contains it (a loop)";
  return std::nullopt;
}

Result<void> collect_sources(const util::FileSystem& fs, const std::filesystem::path& dir, const std::string& prefix,
                             SourceTree& tree) {
  KB_TRY_ASSIGN(auto entries, fs.list_dir(dir));
  for (const auto& entry : entries) {
    if (!tree.all_entries && !is_source_entry(entry, prefix.empty())) continue;
    std::string rel = prefix.empty() ? entry.name : prefix + "/" + entry.name;
    if (!util::is_valid_utf8(entry.name)) {
      std::string shown;  // printable, and valid in a JSON error
      for (unsigned char c : rel)
        shown += c < 0x80 && c >= 0x20 ? std::string(1, static_cast<char>(c))
                                       : "\\x" + util::to_hex(std::string(1, static_cast<char>(c)));
      tree.refused[shown] = "a name that is not UTF-8 (metadata.json, the Hub and Python need UTF-8 names)";
      continue;
    }
    if (entry.is_symlink) {
      if (auto why = refused_link(fs, tree, dir / entry.name, entry.is_dir)) {
        tree.refused[rel] = *why;
        continue;
      }
    }
    if (entry.is_dir) {
      auto real = fs.real_path(dir / entry.name);
      tree.descent.push_back(real ? *real : dir / entry.name);
      auto walked = collect_sources(fs, dir / entry.name, rel, tree);
      tree.descent.pop_back();
      KB_TRY(walked);
    } else if (entry.is_file) {
      tree.files.push_back(std::move(rel));
    }
  }
  return {};
}

Result<SourceTree> walk_sources(const util::FileSystem& fs, const std::filesystem::path& root,
                                const std::filesystem::path& kernel_dir, bool all_entries) {
  SourceTree tree;
  KB_TRY_ASSIGN(tree.real_root, fs.real_path(kernel_dir));
  tree.all_entries = all_entries;
  KB_TRY_ASSIGN(auto real_start, fs.real_path(root));
  tree.descent.push_back(real_start);
  KB_TRY(collect_sources(fs, root, "", tree));
  std::sort(tree.files.begin(), tree.files.end());
  return tree;
}

// Error (exit code 2) naming every refused link among a caller's inputs.
Result<void> refuse_links(const std::filesystem::path& kernel_dir, const std::vector<std::string>& problems) {
  if (problems.empty()) return {};
  return fail(
      "build inputs in " + kernel_dir.string() + " that kbuild does not read:\n  " + util::join(problems, "\n  "),
      "a build reads only files inside the kernel directory, by UTF-8 names: copy the file in (or point "
      "the link at a file inside it), rename what is not UTF-8",
      ExitCode::usage);
}

}  // namespace

Result<std::vector<std::string>> kernel_source_files(const util::FileSystem& fs,
                                                     const std::filesystem::path& kernel_dir) {
  KB_TRY_ASSIGN(SourceTree tree, walk_sources(fs, kernel_dir, kernel_dir, false));
  return std::move(tree.files);
}

Result<std::vector<std::string>> package_files(const util::FileSystem& fs, const std::filesystem::path& kernel_dir,
                                               const std::string& package_dir) {
  KB_TRY_ASSIGN(SourceTree tree, walk_sources(fs, kernel_dir / package_dir, kernel_dir, true));
  std::vector<std::string> problems;
  for (const auto& [rel, why] : tree.refused) problems.push_back(package_dir + "/" + rel + ": " + why);
  KB_TRY(refuse_links(kernel_dir, problems));
  return std::move(tree.files);
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
  KB_TRY_ASSIGN(SourceTree tree, walk_sources(fs, kernel_dir, kernel_dir, false));
  std::vector<std::string> inputs;
  for (const auto& rel : tree.files) {
    bool input = listed.count(rel) || rel.starts_with(package);
    for (const auto& prefix : include_prefixes) input = input || (rel.starts_with(prefix) && c_family_file(rel));
    if (input) inputs.push_back(rel);
  }
  // A refused link is an error when it is (or may hold) an input: a listed source, in the package, or
  // under an include directory; elsewhere (a test helper, a venv) it is none of the build's business.
  std::vector<std::string> problems;
  for (const auto& [rel, why] : tree.refused) {
    bool input = listed.count(rel) || rel.starts_with(package) || (rel + "/").starts_with(package);
    for (const auto& prefix : include_prefixes)
      input = input || rel.starts_with(prefix) || (rel + "/").starts_with(prefix) || prefix.starts_with(rel + "/");
    for (const auto& source : listed) input = input || source.starts_with(rel + "/");
    if (input) problems.push_back(rel + ": " + why);
  }
  KB_TRY(refuse_links(kernel_dir, problems));
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
  hasher.update("kbuild-source-id-v3\n");
  for (const auto& rel : files) {
    std::string digest;
    if (rel == "build.toml") {
      KB_TRY_ASSIGN(std::string text, fs.read_file(kernel_dir / rel));
      util::Hasher file_hasher;
      digest = file_hasher.update(config::build_toml_input_text(text)).finish_raw();
    } else {
      KB_TRY_ASSIGN(digest, util::sha256_file_raw(fs, kernel_dir / rel));
    }
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
  // `git status` is a process of its own (about 2 ms of a no-op build): it runs while the sources
  // are hashed. The launcher is used by no one else meanwhile.
  auto git = std::async(std::launch::async, [&launcher, &kernel_dir] { return util::git_state(launcher, kernel_dir); });
  auto sources = source_manifest(fs, kernel_dir, config);
  if (auto state = git.get()) identity.kernel_git = layout::GitProvenance{state->commit, state->dirty};
  KB_TRY_ASSIGN(identity.sources, std::move(sources));
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

void warn_reproducibility_hazards(util::FileSystem& fs, exec::Reporter& reporter,
                                  const std::filesystem::path& kernel_dir, const SourceManifest& sources) {
  for (const auto& [path, sha] : sources.files) {
    if (!plan::scanned_for_reproducibility(path)) continue;
    auto text = fs.read_file(kernel_dir / path);
    if (!text) continue;
    for (const auto& hazard : plan::reproducibility_hazards(path, *text))
      reporter.warning(fmt::format("{}:{}:{}: {}; the variants will not be reproducible", path, hazard.line,
                                   hazard.column, hazard.what));
  }
}

}  // namespace kbuild::usecase
