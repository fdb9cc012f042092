#include "kbuild/hub/inventory.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <type_traits>

#include "kbuild/config/model.hpp"
#include "kbuild/config/variant.hpp"
#include "kbuild/layout/digest.hpp"
#include "kbuild/layout/metadata.hpp"
#include "kbuild/layout/signature.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::hub {

namespace fs = std::filesystem;

namespace {

Error usage(std::string message, std::string hint = {}) {
  return Error{ExitCode::usage, std::move(message), std::move(hint)};
}

// A directory name from an artifact is untrusted: it becomes part of repository paths.
bool is_plain_variant_name(const std::string& name) {
  return !name.empty() && name.size() <= 128 && name.front() != '.' &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
         });
}

// The unique id an ops id ends with: "_<name>_<backend>_<id>" -> "<id>".
std::string unique_id_of(const layout::Metadata& metadata) {
  config::General general;
  general.name = metadata.name;
  std::string prefix = "_" + general.python_name() + "_" + config::to_string(metadata.backend) + "_";
  return metadata.id.starts_with(prefix) ? metadata.id.substr(prefix.size()) : metadata.id;
}

template <typename Key>
std::string describe_groups(const std::map<Key, std::vector<std::string>>& groups) {
  std::vector<std::string> parts;
  for (const auto& [key, names] : groups) {
    if constexpr (std::is_same_v<Key, std::string>)
      parts.push_back(key + ": " + util::join(names, ", "));
    else
      parts.push_back(std::to_string(key) + ": " + util::join(names, ", "));
  }
  return util::join(parts, "; ");
}

struct FoundVariant {
  fs::path dir;
  layout::Metadata metadata;
};

// The variant directories of one source, by name.
Result<std::vector<std::pair<std::string, fs::path>>> variant_dirs(const util::FileSystem& fs, const fs::path& source,
                                                                   const std::string& shown) {
  std::vector<std::pair<std::string, fs::path>> dirs;
  if (fs.stat(source / "metadata.json").is_file) {
    dirs.emplace_back(source.filename().string(), source);
    return dirs;
  }
  auto entries = fs.list_dir(source);
  if (!entries)
    return fail(usage("cannot read " + shown, shown.starts_with("build")
                                                  ? "run kbuild build first"
                                                  : "pass a variant directory or a directory of them"));
  for (const auto& entry : *entries)
    if (entry.is_dir && !entry.name.starts_with(".")) dirs.emplace_back(entry.name, source / entry.name);
  return dirs;
}

Result<FoundVariant> read_variant(const util::FileSystem& fs, const fs::path& dir, const std::string& shown) {
  auto text = fs.read_file(dir / "metadata.json");
  if (!text) return fail(usage(shown + " has no metadata.json", "rebuild it with kbuild build"));
  auto metadata = layout::Metadata::parse(*text);
  if (!metadata) return fail(usage(shown + "/metadata.json: " + metadata.error().message, "rebuild it"));
  if (!metadata->digest) return fail(usage(shown + "/metadata.json has no digest", "rebuild it"));
  KB_TRY_ASSIGN(auto actual, layout::hash_variant_dir(fs, dir));
  if (actual != *metadata->digest)
    return fail(usage(shown + " does not match the digest in its metadata.json (modified after the build?)",
                      "rebuild it with kbuild build; kbuild check shows which files differ"));
  return FoundVariant{dir, std::move(*metadata)};
}

}  // namespace

Result<BuildInventory> inventory_build(const util::FileSystem& fs, const fs::path& kernel_dir,
                                       const std::vector<fs::path>& sources) {
  std::vector<std::pair<fs::path, std::string>> roots;  // (path, as shown in messages)
  if (sources.empty()) roots.emplace_back(kernel_dir / "build", "build");
  for (const auto& source : sources) {
    fs::path root = source.lexically_normal();  // "art/v/" and "art/v/." name the directory "v"
    if (!root.has_filename() && root != root.root_path()) root = root.parent_path();
    roots.emplace_back(root, root.string());
  }
  std::map<std::string, FoundVariant> found;
  for (const auto& [root, shown_root] : roots) {
    KB_TRY_ASSIGN(auto dirs, variant_dirs(fs, root, shown_root));
    for (const auto& [name, dir] : dirs) {
      std::string shown = sources.empty() ? "build/" + name : dir.string();
      if (!is_plain_variant_name(name))
        return fail(usage("\"" + name + "\" (in " + shown_root + ") is not a variant name",
                          "variant directories are named like torch211-cxx11-cu130-x86_64-linux"));
      KB_TRY_ASSIGN(FoundVariant variant, read_variant(fs, dir, shown));
      // The directory's name is what the loader selects by: it must say what was built.
      auto parsed = config::Variant::parse(name);
      if (!parsed || parsed->backend != variant.metadata.backend)
        return fail(usage(shown + ": the directory name does not match its metadata.json (backend " +
                              config::to_string(variant.metadata.backend) + ")",
                          "gather each artifact under the variant name it was built as"));
      auto [it, inserted] = found.emplace(name, variant);
      if (!inserted && it->second.metadata.digest != variant.metadata.digest)
        return fail(usage("variant " + name + " is in " + it->second.dir.string() + " and " + dir.string() +
                              " with different contents",
                          "gather each variant once, from the build you mean to publish"));
    }
  }
  if (found.empty()) {
    std::vector<std::string> shown;
    for (const auto& root : roots) shown.push_back(root.second + (sources.empty() ? "/" : ""));
    return fail(usage(util::join(shown, ", ") + " holds no variants", "run kbuild build first"));
  }

  BuildInventory inventory;
  std::map<std::int64_t, std::vector<std::string>> by_version;
  std::map<std::string, std::vector<std::string>> by_id;
  for (const auto& [name, variant] : found) {
    by_version[variant.metadata.version].push_back(name);
    by_id[unique_id_of(variant.metadata)].push_back(name);
  }
  if (by_version.size() > 1)
    return fail(usage("the variants have different kernel versions (" + describe_groups(by_version) + ")",
                      "remove stale variants (kbuild clean --all) and build again"));
  if (by_id.size() > 1)
    return fail(
        usage("the variants were built from different sources: their ops ids differ (" + describe_groups(by_id) + ")",
              "build every variant from the same commit (or pass the same --unique-id everywhere)"));
  inventory.version = by_version.begin()->first;
  inventory.unique_id = by_id.begin()->first;
  for (const auto& [name, variant] : found) {
    inventory.variants.push_back(name);
    auto signature = layout::signature_status(fs, variant.dir);
    if (signature.state == layout::SignatureStatus::State::invalid)
      return fail(usage(name + "/metadata.json.sigstore: " + signature.detail,
                        "sign the variant's current metadata.json again, or remove the bundle to publish it unsigned"));
    if (signature.state != layout::SignatureStatus::State::unsigned_variant) inventory.signed_variants.push_back(name);
    KB_TRY_ASSIGN(auto files, util::list_files_recursive(fs, variant.dir));
    for (const auto& rel : files) {
      if (!layout::is_digested(rel) && rel != "metadata.json" && rel != "metadata.json.sigstore") continue;
      KB_TRY_ASSIGN(auto file, describe_file(fs, variant.dir / rel, "build/" + name + "/" + rel));
      inventory.files.push_back(std::move(file));
    }
  }
  if (auto benchmarks = fs.list_dir(kernel_dir / "benchmarks")) {
    for (const auto& entry : *benchmarks) {
      if (!entry.is_file || !entry.name.starts_with("benchmark") || !entry.name.ends_with(".py")) continue;
      KB_TRY_ASSIGN(auto file, describe_file(fs, kernel_dir / "benchmarks" / entry.name, "benchmarks/" + entry.name));
      inventory.files.push_back(std::move(file));
    }
  }
  return inventory;
}

std::vector<std::string> missing_variants(const std::vector<std::string>& expected,
                                          const std::vector<std::string>& present) {
  std::set<std::string> have(present.begin(), present.end());
  std::vector<std::string> missing;
  for (const auto& name : expected)
    if (!have.count(name)) missing.push_back(name);
  return missing;
}

}  // namespace kbuild::hub
