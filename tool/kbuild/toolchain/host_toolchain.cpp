#include "kbuild/toolchain/host_toolchain.hpp"

#include <set>

#include "kbuild/toolchain/deb_archive.hpp"
#include "kbuild/toolchain/provision.hpp"
#include "kbuild/util/hash.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::toolchain {

namespace fs = std::filesystem;

fs::path host_toolchain_dir(const util::CacheLayout& cache, const HostToolchainRecipe& recipe,
                            const std::vector<LockedArtifact>& packages) {
  util::Hasher hasher;
  hasher.field("host-toolchain-v1");
  for (const auto& package : packages) hasher.field(package.sha256);
  return cache.toolchains() / (recipe.name + "-" + hasher.finish_hex().substr(0, 12));
}

std::optional<std::string> host_toolchain_entry(const std::string& name) {
  for (const char* skipped : {"usr/share/doc/", "usr/share/man/", "usr/share/info/", "usr/share/locale/",
                              "usr/share/lintian/", "usr/share/bug/", "usr/share/gdb/"})
    if (name.starts_with(skipped)) return std::nullopt;
  return name;
}

std::string debian_mirror_url(const util::Environment& env) { return env.get_or("KBUILD_DEBIAN_MIRROR", ""); }

std::string expand_file_url(std::string url_template, const std::string& file) {
  for (size_t at = url_template.find("{file}"); at != std::string::npos; at = url_template.find("{file}", at))
    url_template.replace(at, 6, file), at += file.size();
  return url_template;
}

std::vector<std::string> package_pins(const std::vector<LockedArtifact>& packages) {
  std::vector<std::string> pins;
  for (const auto& package : packages) pins.push_back(package.package + "=" + package.version);
  return pins;
}

namespace {

Error toolchain_error(std::string message, std::string hint = {}) {
  return Error{ExitCode::toolchain, std::move(message), std::move(hint)};
}

std::string gcc_major(const HostToolchainRecipe& recipe) { return recipe.version.substr(0, recipe.version.find('.')); }

HostCompiler compiler_at(const fs::path& dir, const HostToolchainRecipe& recipe,
                         const std::vector<LockedArtifact>& packages) {
  HostCompiler compiler;
  compiler.cxx = dir / "root" / recipe.driver;
  compiler.version = recipe.version;
  compiler.machine = recipe.triple;
  compiler.sysroot = dir / "root";
  compiler.tool_library_dir = dir / "tool-libs";
  compiler.origin = "pinned:" + recipe.name;
  compiler.pins = package_pins(packages);
  return compiler;
}

// Whether a file a package ships is a shared library its programs may load ("libisl.so.23").
bool shared_library(const std::string& path) {
  const std::string name = fs::path(path).filename().string();
  return name.starts_with("lib") && name.find(".so") != std::string::npos && path.find("/gconv/") == std::string::npos;
}

// The links that make the driver find the pinned as/ld before PATH's, and the tool-libs directory.
Result<void> complete_root(util::FileSystem& fs, const fs::path& staging, const HostToolchainRecipe& recipe,
                           const std::vector<std::string>& tool_libraries) {
  const fs::path gcc_dir = staging / "root" / "usr" / "lib" / "gcc" / recipe.triple / gcc_major(recipe);
  if (!fs.stat(gcc_dir).is_dir) return fail(toolchain_error("the host toolchain's packages lack " + gcc_dir.string()));
  for (const std::string program : {"as", "ld", "ld.bfd"}) {
    (void)fs.remove_all(gcc_dir / program);
    KB_TRY(fs.create_symlink("../../../../bin/" + recipe.triple + "-" + program, gcc_dir / program));
  }
  KB_TRY(fs.make_dirs(staging / "tool-libs"));
  for (const auto& library : tool_libraries) {
    const fs::path link = staging / "tool-libs" / fs::path(library).filename();
    (void)fs.remove_all(link);
    KB_TRY(fs.create_symlink(fs::path("..") / "root" / library, link));
  }
  return {};
}

}  // namespace

Result<std::vector<LockedArtifact>> Provisioner::host_artifacts() {
  const HostToolchainRecipe& recipe = bookworm_gcc12_recipe();
  if (const auto* pinned = m_lock.find(recipe.name)) return *pinned;
  if (m_options.locked)
    return fail(toolchain_error("kbuild.lock has no pin for the host toolchain " + recipe.name + " (--locked)",
                                "run `kbuild toolchains lock` and commit kbuild.lock"));
  if (!m_options.download_url) return fail(toolchain_error("cannot resolve " + recipe.name + ": no downloader"));
  util::ScratchDir scratch(m_fs, m_options.cache.temp(), "debian-index");
  std::vector<std::vector<DebianPackage>> indices;
  for (size_t i = 0; i < recipe.suites.size(); ++i) {
    const std::string url = recipe.suites[i].index_url();
    m_progress("reading " + url);
    const fs::path file = scratch.path / ("Packages-" + std::to_string(i) + ".xz");
    KB_TRY(m_options.download_url(url, file));
    KB_TRY_ASSIGN(std::string text, decompress_file(file, std::uint64_t{1} << 30));
    indices.push_back(parse_packages_index(text));
  }
  KB_TRY_ASSIGN(auto packages, resolve_recipe(recipe, indices));
  m_lock.toolchains[recipe.name] = packages;
  m_lock_changed = true;
  return packages;
}

Result<void> Provisioner::assemble_host_toolchain(const std::vector<LockedArtifact>& packages, const fs::path& dir) {
  const HostToolchainRecipe& recipe = bookworm_gcc12_recipe();
  const std::set<std::string> tool_packages(recipe.tool_library_packages.begin(), recipe.tool_library_packages.end());
  // Before anything is downloaded or run: the pins must be what Debian published (provenance.hpp).
  KB_TRY(verify_host_pins(packages));
  std::vector<fs::path> files;
  for (const auto& package : packages) {
    KB_TRY_ASSIGN(fs::path file, fetch(package));
    files.push_back(file);
  }
  m_progress("unpacking the host toolchain " + recipe.name + " (" + std::to_string(packages.size()) + " packages)");
  const fs::path staging = util::temp_sibling(dir);
  (void)m_fs.remove_all(staging);
  auto assembled = [&]() -> Result<void> {
    std::vector<std::string> tool_libraries;
    for (size_t i = 0; i < packages.size(); ++i) {
      KB_TRY_ASSIGN(UnpackedDeb unpacked, extract_deb(files[i], staging / "root", host_toolchain_entry));
      if (!tool_packages.count(packages[i].package)) continue;
      for (const auto& list : {unpacked.files, unpacked.symlinks})
        for (const auto& path : list)
          if (shared_library(path)) tool_libraries.push_back(path);
    }
    KB_TRY(verify_contained(staging / "root"));
    KB_TRY(complete_root(m_fs, staging, recipe, tool_libraries));
    KB_TRY(prove_host_compiler(compiler_at(staging, recipe, packages)));
    std::string marker;
    for (const auto& package : packages) marker += package.file + " " + package.sha256 + "\n";
    return m_fs.write_file_atomic(staging / ".complete", marker);
  }();
  if (!assembled) {
    (void)m_fs.remove_all(staging);
    return assembled;
  }
  return install_complete_dir(m_fs, staging, dir);
}

Result<void> Provisioner::prove_host_compiler(const HostCompiler& compiler) {
  util::ScratchDir scratch(m_fs, m_options.cache.temp(), "host-check");
  KB_TRY(m_fs.write_file_atomic(
      scratch.path / "probe.cpp",
      "#include <cmath>\n#include <string>\n"
      "extern \"C\" int kbuild_probe(double x) { return std::to_string(std::sqrt(x)).size(); }\n"));
  util::ProcessOptions options;
  options.env = compiler.environment();
  auto run = [&](std::vector<std::string> arguments) {
    std::vector<std::string> argv = {compiler.cxx.string()};
    for (const auto& flag : compiler.driver_flags()) argv.push_back(flag);
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    return m_launcher.run(argv, options);
  };
  const std::string root = compiler.sysroot.string() + "/";
  // gcc names its programs by its own resolved location: a cache reached through a symbolic link
  // (a shared toolchains/ directory) gives paths under the link's target.
  auto resolved = m_fs.real_path(compiler.sysroot);
  const std::string real_root = (resolved ? resolved->string() : compiler.sysroot.string()) + "/";
  for (const std::string program : {"as", "ld"}) {
    auto where = run({"-print-prog-name=" + program});
    std::string path = where ? std::string(util::trim(where->out)) : "";
    if (!where || where->exit_code != 0 || !(path.starts_with(root) || path.starts_with(real_root)))
      return fail(toolchain_error(
          "the pinned host toolchain would run " + (path.empty() ? program : path) + " from outside " + root,
          "delete " + compiler.sysroot.parent_path().string() + " and build again"));
  }
  auto link = run(
      {"-O2", "-fPIC", "-shared", (scratch.path / "probe.cpp").string(), "-o", (scratch.path / "probe.so").string()});
  if (!link || link->exit_code != 0)
    return fail(toolchain_error("the pinned host toolchain at " + compiler.sysroot.string() +
                                    " cannot build a shared library:\n" +
                                    (link ? link->out + link->err : link.error().message),
                                "delete " + compiler.sysroot.parent_path().string() + " and build again"));
  return {};
}

Result<HostCompiler> Provisioner::host_compiler() {
  const HostToolchainRecipe& recipe = bookworm_gcc12_recipe();
  KB_TRY_ASSIGN(auto packages, host_artifacts());
  const fs::path dir = host_toolchain_dir(m_options.cache, recipe, packages);
  if (toolchain_complete(m_fs, dir))
    (void)m_fs.touch(dir / ".complete");  // last used: `kbuild cache prune` goes by it
  else
    KB_TRY(assemble_host_toolchain(packages, dir));
  return compiler_at(dir, recipe, packages);
}

}  // namespace kbuild::toolchain
