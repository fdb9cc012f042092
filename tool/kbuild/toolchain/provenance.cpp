#include "kbuild/toolchain/provenance.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "kbuild/toolchain/deb_archive.hpp"
#include "kbuild/util/hash.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::toolchain {

namespace fs = std::filesystem;

namespace {

constexpr const char* k_packages_path = "main/binary-amd64/Packages.xz";
constexpr std::uint64_t k_max_index_bytes = std::uint64_t{1} << 30;

Error provenance_error(std::string message, std::string hint) {
  return Error{ExitCode::toolchain, std::move(message), std::move(hint)};
}

std::string allow_hint(const std::string& url) {
  const std::string origin = url.substr(0, url.find('/', url.find("://") + 3) + 1);
  return "pin it from Debian's archive (`kbuild toolchains lock --update`), or, if you trust " + origin +
         ", allow it: --allow-toolchain-origin " + origin + " (or toolchain-origins in the user config)";
}

// The packages of one verified index set (InRelease checked with gpgv, Packages.xz against it); an
// error when the set does not verify.
Result<std::vector<DebianPackage>> verified_packages(const fs::path& set, ProvenanceContext& context) {
  const fs::path signed_text = context.scratch / "InRelease.verified";
  (void)context.fs.remove_all(signed_text);
  auto gpgv = context.launcher.run(
      {"gpgv", "--keyring", context.keyring.string(), "--output", signed_text.string(), (set / "InRelease").string()});
  if (!gpgv) return fail(gpgv.error());
  if (gpgv->exit_code != 0)
    return fail(provenance_error((set / "InRelease").string() + " is not signed by a key of " +
                                     context.keyring.string() + ":\n" + std::string(util::trim(gpgv->err)),
                                 "the index was tampered with, or the keyring is not Debian's"));
  KB_TRY_ASSIGN(std::string text, context.fs.read_file(signed_text));
  auto digest = inrelease_digest(text, k_packages_path);
  if (!digest) return fail(provenance_error((set / "InRelease").string() + " names no " + k_packages_path, ""));
  KB_TRY_ASSIGN(std::string sha, util::sha256_file_hex(context.fs, set / "Packages.xz"));
  if (sha != digest->sha256)
    return fail(provenance_error((set / "Packages.xz").string() + " is not the index its InRelease signs", ""));
  KB_TRY_ASSIGN(std::string packages, decompress_file(set / "Packages.xz", k_max_index_bytes));
  return parse_packages_index(packages);
}

// Fetches the current index set of `suite` into the cache (kept by the InRelease's hash); its path.
Result<fs::path> fetch_index_set(const DebianSuite& suite, ProvenanceContext& context) {
  const std::string base = suite.archive + "/dists/" + suite.suite + "/";
  const fs::path staging = context.scratch / ("index-" + suite.suite);
  (void)context.fs.remove_all(staging);
  KB_TRY(context.fs.make_dirs(staging));
  if (context.progress) context.progress("reading " + base + "InRelease");
  KB_TRY(context.download(base + "InRelease", staging / "InRelease"));
  KB_TRY(context.download(base + k_packages_path, staging / "Packages.xz"));
  KB_TRY_ASSIGN(std::string id, util::sha256_file_hex(context.fs, staging / "InRelease"));
  const fs::path set = context.index_cache / suite.suite / id.substr(0, 12);
  if (context.fs.stat(set / "Packages.xz").is_file) return set;
  KB_TRY(context.fs.make_dirs(set.parent_path()));
  if (auto moved = context.fs.rename(staging, set); !moved && !context.fs.stat(set / "Packages.xz").is_file)
    return fail(moved.error());
  return set;
}

// Marks every pin of `waiting` that `packages` lists (the archive's Filename and SHA256) as verified.
void match(const DebianSuite& suite, const std::vector<DebianPackage>& packages,
           std::map<std::string, const LockedArtifact*>& waiting) {
  for (const auto& package : packages) {
    auto it = waiting.find(suite.archive + "/" + package.filename);
    if (it != waiting.end() && it->second->sha256 == package.sha256) waiting.erase(it);
  }
}

}  // namespace

Result<fs::path> debian_keyring(const util::FileSystem& fs, const util::Environment& env) {
  if (auto path = env.get("KBUILD_DEBIAN_KEYRING"); path && !path->empty()) {
    if (!fs.stat(*path).is_file)
      return fail(provenance_error("KBUILD_DEBIAN_KEYRING names " + *path + ", which is no file", ""));
    return fs::path(*path);
  }
  const fs::path system = "/usr/share/keyrings/debian-archive-keyring.gpg";
  if (fs.stat(system).is_file) return system;
  return fail(provenance_error(
      "kbuild verifies the pinned Debian packages against Debian's signed indices, and there is no Debian archive "
      "keyring here",
      "install it (apt install debian-archive-keyring gpgv; on Ubuntu it is in universe), or set "
      "KBUILD_DEBIAN_KEYRING to a copy of /usr/share/keyrings/debian-archive-keyring.gpg"));
}

bool origin_allowed(std::string_view url, const std::vector<std::string>& origins) {
  return std::any_of(origins.begin(), origins.end(), [&](std::string origin) {
    if (origin.empty()) return false;
    if (!origin.ends_with("/")) origin += "/";
    return url.starts_with(origin);
  });
}

std::optional<IndexDigest> inrelease_digest(std::string_view signed_text, std::string_view path) {
  bool in_sha256 = false;
  for (const auto& line : util::split(signed_text, '\n')) {
    if (!line.empty() && line[0] != ' ') {
      in_sha256 = line.starts_with("SHA256:");
      continue;
    }
    if (!in_sha256) continue;
    std::vector<std::string> fields;
    for (const auto& word : util::split(std::string(util::trim(line)), ' '))
      if (!word.empty()) fields.push_back(word);
    if (fields.size() == 3 && fields[2] == path && fields[0].size() == 64 &&
        fields[1].find_first_not_of("0123456789") == std::string::npos && fields[1].size() < 19)
      return IndexDigest{fields[0], std::stoull(fields[1])};
  }
  return std::nullopt;
}

std::string simple_project_name(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      if (out.empty() || out.back() != '-') out += '-';
    } else {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

Result<bool> simple_index_lists(std::string_view json_text, const std::string& file, const std::string& sha256) {
  auto json = nlohmann::json::parse(json_text, nullptr, false);
  if (!json.is_object() || !json.contains("files") || !json["files"].is_array())
    return fail(provenance_error("the package index's answer is not a PEP 691 JSON project page",
                                 "KBUILD_PYPI_SIMPLE must name an index that answers "
                                 "application/vnd.pypi.simple.v1+json, like https://pypi.org/simple"));
  for (const auto& entry : json["files"]) {
    if (!entry.is_object() || !entry["filename"].is_string() || entry["filename"] != file) continue;
    const auto& hashes = entry.contains("hashes") ? entry["hashes"] : nlohmann::json();
    return hashes.is_object() && hashes.contains("sha256") && hashes["sha256"] == sha256;
  }
  return false;
}

Result<void> verify_debian_pins(const std::vector<LockedArtifact>& pins, const HostToolchainRecipe& recipe,
                                ProvenanceContext& context) {
  std::vector<std::string> archives;
  for (const auto& suite : recipe.suites) archives.push_back(suite.archive);
  std::map<std::string, const LockedArtifact*> waiting;  // by URL
  for (const auto& pin : pins) {
    if (origin_allowed(pin.url, context.allowed_origins)) continue;  // the user vouches for it
    if (pin.url.empty() || !origin_allowed(pin.url, archives))
      return fail(provenance_error("kbuild.lock pins " + pin.file + " from " +
                                       (pin.url.empty() ? std::string("nowhere") : pin.url) +
                                       ", which is not Debian's archive: kbuild cannot verify it",
                                   allow_hint(pin.url)));
    waiting[pin.url] = &pin;
  }
  for (const auto& suite : recipe.suites) {
    if (waiting.empty()) return {};
    // Index sets kept from earlier checks first (also offline), then the suite's current one.
    std::vector<fs::path> sets;
    if (auto kept = context.fs.list_dir(context.index_cache / suite.suite))
      for (const auto& entry : *kept)
        if (entry.is_dir) sets.push_back(context.index_cache / suite.suite / entry.name);
    for (const auto& set : sets) {
      KB_TRY_ASSIGN(auto packages, verified_packages(set, context));
      match(suite, packages, waiting);
    }
    bool needs_suite = std::any_of(waiting.begin(), waiting.end(),
                                   [&](const auto& entry) { return entry.first.starts_with(suite.archive + "/"); });
    if (!needs_suite) continue;
    KB_TRY_ASSIGN(fs::path fresh, fetch_index_set(suite, context));
    KB_TRY_ASSIGN(auto packages, verified_packages(fresh, context));
    match(suite, packages, waiting);
  }
  if (waiting.empty()) return {};
  std::vector<std::string> files;
  for (const auto& [url, pin] : waiting) files.push_back(pin->file + " (sha256 " + pin->sha256.substr(0, 12) + "…)");
  std::vector<std::string> suites;
  for (const auto& suite : recipe.suites) suites.push_back(suite.suite);
  return fail(provenance_error(
      "kbuild.lock pins " + util::count_of(files.size(), "Debian package") + " that the signed indices of " +
          util::join(suites, ", ") + " do not list with that sha256: " + util::join(files, ", "),
      "Debian did not publish these files (or replaced them since: `kbuild toolchains lock --update` pins the "
      "current ones); kbuild does not run them"));
}

Result<bool> wheel_listed(const LockedArtifact& pin, ProvenanceContext& context) {
  const std::string project = simple_project_name(pin.package);
  const std::string url = context.pypi_simple + "/" + project + "/";
  const fs::path answer = context.scratch / ("simple-" + project + ".json");
  if (context.progress) context.progress("reading " + url);
  KB_TRY(context.download_simple(url, answer));
  KB_TRY_ASSIGN(std::string text, context.fs.read_file(answer));
  return simple_index_lists(text, pin.file, pin.sha256);
}

Result<void> verify_wheel_pins(const std::vector<LockedArtifact>& pins, ProvenanceContext& context) {
  for (const auto& pin : pins) {
    if (!pin.url.empty()) continue;  // a source archive: pinned as first fetched (docs/matrix.md)
    KB_TRY_ASSIGN(bool listed, wheel_listed(pin, context));
    if (!listed)
      return fail(provenance_error("kbuild.lock pins " + pin.file + " with sha256 " + pin.sha256.substr(0, 12) +
                                       "…, which " + context.pypi_simple + " does not list for " + pin.package,
                                   "PyPI did not publish this file; re-pin with `kbuild toolchains lock --update`"));
  }
  return {};
}

}  // namespace kbuild::toolchain
