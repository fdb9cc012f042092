#include "kbuild/toolchain/debian.hpp"

#include <cctype>
#include <filesystem>
#include <map>

#include "kbuild/util/strings.hpp"

namespace kbuild::toolchain {

namespace {

void assign_field(DebianPackage& package, std::string_view field, std::string_view value) {
  if (field == "Package")
    package.name = value;
  else if (field == "Version")
    package.version = value;
  else if (field == "Architecture")
    package.architecture = value;
  else if (field == "Filename")
    package.filename = value;
  else if (field == "SHA256")
    package.sha256 = value;
  else if (field == "Size")
    package.size = std::strtoull(std::string(value).c_str(), nullptr, 10);
}

bool complete(const DebianPackage& p) {
  return !p.name.empty() && !p.version.empty() && !p.architecture.empty() && !p.filename.empty() &&
         p.sha256.size() == 64;
}

// dpkg's weight of a character of the non-digit part: '~' sorts first (even before the end), then
// the end and digits, then letters, then everything else.
int order(int c) {
  if (std::isdigit(c)) return 0;
  if (std::isalpha(c)) return c;
  if (c == '~') return -1;
  if (c) return c + 256;
  return 0;
}

// dpkg's verrevcmp: alternating non-digit and digit runs.
int compare_part(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    int first_diff = 0;
    while ((i < a.size() && !std::isdigit(a[i])) || (j < b.size() && !std::isdigit(b[j]))) {
      int ac = i < a.size() ? order(a[i]) : 0;
      int bc = j < b.size() ? order(b[j]) : 0;
      if (ac != bc) return ac - bc;
      ++i;
      ++j;
    }
    while (i < a.size() && a[i] == '0') ++i;
    while (j < b.size() && b[j] == '0') ++j;
    while (i < a.size() && std::isdigit(a[i]) && j < b.size() && std::isdigit(b[j])) {
      if (!first_diff) first_diff = a[i] - b[j];
      ++i;
      ++j;
    }
    if (i < a.size() && std::isdigit(a[i])) return 1;
    if (j < b.size() && std::isdigit(b[j])) return -1;
    if (first_diff) return first_diff;
  }
  return 0;
}

struct SplitVersion {
  long epoch = 0;
  std::string_view upstream;
  std::string_view revision;
};

SplitVersion split(std::string_view v) {
  SplitVersion out;
  if (auto colon = v.find(':'); colon != std::string_view::npos) {
    out.epoch = std::strtol(std::string(v.substr(0, colon)).c_str(), nullptr, 10);
    v.remove_prefix(colon + 1);
  }
  if (auto dash = v.rfind('-'); dash != std::string_view::npos) {
    out.revision = v.substr(dash + 1);
    v = v.substr(0, dash);
  }
  out.upstream = v;
  return out;
}

}  // namespace

std::vector<DebianPackage> parse_packages_index(std::string_view text) {
  std::vector<DebianPackage> packages;
  DebianPackage current;
  auto flush = [&] {
    if (complete(current)) packages.push_back(std::move(current));
    current = {};
  };
  for (size_t start = 0; start <= text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {
      flush();
      continue;
    }
    if (line.front() == ' ' || line.front() == '\t') continue;  // continuation of a long field
    auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    assign_field(current, line.substr(0, colon), util::trim(line.substr(colon + 1)));
  }
  flush();
  return packages;
}

int compare_debian_versions(std::string_view a, std::string_view b) {
  SplitVersion x = split(a), y = split(b);
  if (x.epoch != y.epoch) return x.epoch < y.epoch ? -1 : 1;
  if (int c = compare_part(x.upstream, y.upstream)) return c;
  return compare_part(x.revision, y.revision);
}

std::string DebianSuite::index_url() const { return archive + "/dists/" + suite + "/main/binary-amd64/Packages.xz"; }

const HostToolchainRecipe& bookworm_gcc12_recipe() {
  static const HostToolchainRecipe recipe{
      "gcc-12.2",
      "12.2.0",
      "x86_64-linux-gnu",
      "usr/bin/x86_64-linux-gnu-g++-12",
      {{"https://deb.debian.org/debian", "bookworm"},
       {"https://deb.debian.org/debian", "bookworm-updates"},
       {"https://security.debian.org/debian-security", "bookworm-security"}},
      {"gcc-12",           "cpp-12",         "g++-12",      "gcc-12-base", "libgcc-12-dev",
       "libstdc++-12-dev", "libstdc++6",     "libgcc-s1",   "libgomp1",    "binutils-x86-64-linux-gnu",
       "libbinutils",      "libctf0",        "libjansson4", "libisl23",    "libmpc3",
       "libmpfr6",         "libgmp10",       "libzstd1",    "zlib1g",      "libc6",
       "libc6-dev",        "linux-libc-dev", "libcrypt1",   "libcrypt-dev"},
      {"libisl23", "libmpc3", "libmpfr6", "libgmp10", "libzstd1", "zlib1g", "libbinutils", "libctf0", "libjansson4"}};
  return recipe;
}

Result<std::vector<LockedArtifact>> resolve_recipe(const HostToolchainRecipe& recipe,
                                                   const std::vector<std::vector<DebianPackage>>& indices) {
  std::map<std::string, std::pair<const DebianPackage*, const DebianSuite*>> newest;
  for (size_t i = 0; i < indices.size() && i < recipe.suites.size(); ++i)
    for (const auto& package : indices[i]) {
      if (package.architecture != "amd64" && package.architecture != "all") continue;
      auto& best = newest[package.name];
      if (!best.first || compare_debian_versions(package.version, best.first->version) > 0)
        best = {&package, &recipe.suites[i]};
    }
  std::vector<LockedArtifact> artifacts;
  std::vector<std::string> missing;
  for (const auto& name : recipe.packages) {
    auto it = newest.find(name);
    if (it == newest.end() || !it->second.first) {
      missing.push_back(name);
      continue;
    }
    const auto& [package, suite] = it->second;
    LockedArtifact artifact;
    artifact.package = package->name;
    artifact.version = package->version;
    artifact.file = std::filesystem::path(package->filename).filename().string();
    artifact.sha256 = package->sha256;
    artifact.url = suite->archive + "/" + package->filename;
    artifacts.push_back(std::move(artifact));
  }
  if (!missing.empty())
    return fail(
        "Debian's indices lack " + util::join(missing, ", ") + " (needed for the " + recipe.name + " host toolchain)",
        "check that " + recipe.suites.front().index_url() + " is reachable and current");
  return artifacts;
}

}  // namespace kbuild::toolchain
