#include "kbuild/toolchain/provision.hpp"

#include <regex>

#include "kbuild/toolchain/archive.hpp"
#include "kbuild/util/hash.hpp"
#include "kbuild/util/strings.hpp"

// CUTLASS, the header library of build.toml's cutlass_* dependencies: from NVIDIA's nvidia-cutlass
// wheels (3.5, 3.6, 3.8) or the release's source archive (the others), pinned in kbuild.lock; the
// rest of the provisioner is in provision.cpp.

namespace kbuild::toolchain {

namespace fs = std::filesystem;

std::string cutlass_mirror_url(const util::Environment& env) { return env.get("KBUILD_CUTLASS_URL").value_or(""); }

std::string expand_archive_url(std::string url_template, const std::string& version) {
  static constexpr std::string_view k_placeholder = "{version}";
  for (size_t at = 0; (at = url_template.find(k_placeholder, at)) != std::string::npos; at += version.size())
    url_template.replace(at, k_placeholder.size(), version);
  return url_template;
}

std::optional<CutlassRelease> cutlass_release(const std::string& dependency) {
  static const CutlassRelease k_releases[] = {{"cutlass_2_10", "2.10.0", false}, {"cutlass_3_5", "3.5.1", true},
                                              {"cutlass_3_6", "3.6.0", true},    {"cutlass_3_8", "3.8.0", true},
                                              {"cutlass_3_9", "3.9.2", false},   {"cutlass_4_0", "4.0.0", false},
                                              {"cutlass_4_4", "4.4.2", false},   {"cutlass_4_5", "4.5.2", false}};
  for (const auto& release : k_releases)
    if (release.dependency == dependency) return release;
  return std::nullopt;
}

std::optional<std::pair<std::string, util::Version>> provided_dependency(const std::string& dependency) {
  auto release = cutlass_release(dependency);
  if (!release) return std::nullopt;
  auto version = util::Version::parse(release->version);
  return std::pair{std::string("cutlass"), *util::Version::parse(version->major_minor())};
}

std::optional<std::string> cutlass_archive_entry(const std::string& name) {
  size_t slash = name.find('/');
  if (slash == std::string::npos || slash == 0) return std::nullopt;
  std::string rest = name.substr(slash + 1);
  if (rest.starts_with("include/") || rest.starts_with("tools/util/include/")) return rest;
  if (rest == "CMakeLists.txt" || rest == "cmake/version.h.in") return rest;
  return std::nullopt;
}

std::optional<std::string> cutlass_cmake_version(std::string_view cmakelists) {
  static const std::regex k_project(R"(project\s*\(\s*CUTLASS\s+VERSION\s+(\d{1,4}\.\d{1,4}\.\d{1,4})[\s)])");
  std::match_results<std::string_view::const_iterator> match;
  if (!std::regex_search(cmakelists.begin(), cmakelists.end(), match, k_project)) return std::nullopt;
  return match[1].str();
}

std::string render_cutlass_version_h(std::string_view version_h_in, const std::string& version) {
  auto parts = util::split(version, '.');
  while (parts.size() < 3) parts.push_back("0");
  // As CUTLASS's CMake configures it from a source tree without git: no build number, no revision.
  return util::replace_at_names(version_h_in, {{"CUTLASS_VERSION_MAJOR", parts[0]},
                                               {"CUTLASS_VERSION_MINOR", parts[1]},
                                               {"CUTLASS_VERSION_PATCH", parts[2]},
                                               {"CUTLASS_VERSION_BUILD", ""},
                                               {"CUTLASS_VERSION", version},
                                               {"CUTLASS_REVISION", ""}});
}

std::optional<std::string> cutlass_header_version(std::string_view version_h) {
  auto number = [&](const std::string& macro) -> std::optional<std::string> {
    static const std::string k_define = "#define ";
    for (size_t start = 0; start < version_h.size();) {
      size_t end = version_h.find('\n', start);
      if (end == std::string_view::npos) end = version_h.size();
      auto text = util::trim(version_h.substr(start, end - start));
      start = end + 1;
      if (!text.starts_with(k_define)) continue;
      text.remove_prefix(k_define.size());
      text = util::trim(text);
      if (!text.starts_with(macro) || text.size() == macro.size() ||
          (text[macro.size()] != ' ' && text[macro.size()] != '\t'))
        continue;
      auto value = util::trim(text.substr(macro.size()));
      if (value.empty() || value.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
      return std::string(value);
    }
    return std::nullopt;
  };
  auto major = number("CUTLASS_MAJOR"), minor = number("CUTLASS_MINOR"), patch = number("CUTLASS_PATCH");
  if (!major || !minor || !patch) return std::nullopt;
  return *major + "." + *minor + "." + *patch;
}

// The headers of nvidia-cutlass: CUTLASS/CuTe and the tools/util headers kernels include.
std::optional<std::string> cutlass_wheel_entry(const std::string& name) {
  if (name.starts_with("cutlass_library/source/include/") ||
      name.starts_with("cutlass_library/source/tools/util/include/"))
    return name;
  return std::nullopt;
}

Result<HeaderLibrary> Provisioner::header_library(const std::string& dependency) {
  auto provided = provided_dependency(dependency);
  if (!provided) return fail("kbuild cannot provide the dependency \"" + dependency + "\"", "", ExitCode::toolchain);
  const std::string name = toolchain_name(provided->first, provided->second.major_minor());
  const bool newly_pinned = m_lock.find(name) == nullptr;
  KB_TRY_ASSIGN(auto artifacts, this->artifacts(provided->first, provided->second));
  const LockedArtifact artifact = artifacts.front();
  const bool wheel = artifact.url.empty();
  fs::path root =
      m_options.cache.toolchains() / (provided->first + "-" + artifact.version + "-" + artifact.sha256.substr(0, 12));
  const fs::path include = wheel ? fs::path("cutlass_library/source/include") : fs::path("include");
  const fs::path util_include =
      wheel ? fs::path("cutlass_library/source/tools/util/include") : fs::path("tools/util/include");
  // A source-archive tree unpacked by an earlier kbuild may lack the cutlass/version.h this one
  // configures: it is unpacked again.
  if (!wheel && toolchain_complete(m_fs, root) && !m_fs.stat(root / include / "cutlass/version.h").is_file) {
    fs::path aside = util::temp_sibling(root);
    if (m_fs.rename(root, aside)) (void)m_fs.remove_all(aside);
  }
  std::function<Result<void>(const fs::path&)> finish;
  if (!wheel) finish = [&](const fs::path& staging) { return complete_cutlass_tree(staging); };
  auto unpacked = unpack_wheel(artifact, root, wheel ? cutlass_wheel_entry : cutlass_archive_entry, "headers",
                               (include / "cutlass/cutlass.h").string(), finish);
  // The archive must hold the release the dependency names, not merely some CUTLASS.
  if (unpacked) {
    auto release = cutlass_release(dependency);
    unpacked = check_cutlass_release(cutlass_tree_version(root, include), artifact, release ? release->version : "",
                                     dependency);
  }
  if (!unpacked) {
    if (newly_pinned) m_lock.toolchains.erase(name);  // a pin that failed its first use is not kept
    return fail(unpacked.error());
  }
  HeaderLibrary library;
  library.dependency = dependency;
  library.version = artifact.version;
  library.root = root;
  library.include_dirs = {root / include, root / util_include};
  library.origin = wheel ? "wheel:" + artifact.file : "archive:" + archive_url(artifact);
  return library;
}

std::optional<std::string> Provisioner::cutlass_tree_version(const fs::path& root, const fs::path& include) const {
  if (auto version_h = m_fs.read_file(root / include / "cutlass/version.h")) return cutlass_header_version(*version_h);
  if (auto cmakelists = m_fs.read_file(root / "CMakeLists.txt")) return cutlass_cmake_version(*cmakelists);
  return std::nullopt;
}

Result<void> Provisioner::complete_cutlass_tree(const fs::path& staging) {
  // CUTLASS 2.x archives carry cutlass/version.h only as cmake/version.h.in, which CUTLASS's CMake
  // install configures; kernel-builder's CUTLASS is such an install, so a kernel may include it.
  if (m_fs.stat(staging / "include/cutlass/version.h").is_file) return {};
  auto in = m_fs.read_file(staging / "cmake/version.h.in");
  auto cmakelists = m_fs.read_file(staging / "CMakeLists.txt");
  auto version = cmakelists ? cutlass_cmake_version(*cmakelists) : std::nullopt;
  if (!in || !version)
    return fail("the CUTLASS archive has neither include/cutlass/version.h nor " +
                    std::string(version ? "cmake/version.h.in" : "a CUTLASS version in CMakeLists.txt") +
                    " to make it from",
                "check that the URL serves CUTLASS's own source archive", ExitCode::toolchain);
  return m_fs.write_file_atomic(staging / "include/cutlass/version.h", render_cutlass_version_h(*in, *version));
}

Result<void> Provisioner::check_cutlass_release(const std::optional<std::string>& found, const LockedArtifact& artifact,
                                                const std::string& release, const std::string& dependency) const {
  const bool wheel = artifact.url.empty();
  auto found_version = found ? util::Version::parse(*found) : std::nullopt;
  auto expected = util::Version::parse(release);
  bool matches = found_version && expected &&
                 (wheel ? found_version->major_minor() == expected->major_minor() : *found == release);
  if (matches) return {};
  const std::string entry = expected ? toolchain_name("cutlass", expected->major_minor()) : "cutlass";
  return fail(Error{
      ExitCode::toolchain,
      artifact.file + " holds " + (found ? "CUTLASS " + *found : "no CUTLASS version (cutlass/version.h)") +
          ", not CUTLASS " + (wheel && expected ? expected->major_minor() : release) + " (" + dependency + ")",
      wheel ? "remove the \"" + entry + "\" entry from kbuild.lock and build again"
            : "check " + archive_url(artifact) + (m_options.cutlass_mirror_url.empty() ? "" : " (KBUILD_CUTLASS_URL)") +
                  ": it must serve CUTLASS " + release + "; if kbuild.lock pins it, remove the \"" + entry +
                  "\" entry and build again"});
}

}  // namespace kbuild::toolchain
