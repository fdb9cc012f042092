#include "kbuild/toolchain/provision.hpp"

#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <regex>

#include "kbuild/toolchain/archive.hpp"
#include "kbuild/toolchain/debian.hpp"
#include "kbuild/toolchain/host_toolchain.hpp"
#include "kbuild/toolchain/probe.hpp"
#include "kbuild/util/hash.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::toolchain {

namespace fs = std::filesystem;

std::filesystem::path torch_toolchain_dir(const util::CacheLayout& cache, const LockedArtifact& wheel) {
  return cache.toolchains() / ("torch-" + wheel.version + "-" + wheel.sha256.substr(0, 12));
}

std::filesystem::path cuda_toolchain_dir(const util::CacheLayout& cache, const std::vector<LockedArtifact>& wheels) {
  std::string combined;
  for (const auto& wheel : wheels) combined += wheel.sha256;
  return cache.toolchains() / ("cuda-" + wheels.front().version + "-" + util::sha256_hex(combined).substr(0, 12));
}

bool toolchain_complete(const util::FileSystem& fs, const std::filesystem::path& dir) {
  return fs.stat(dir / ".complete").is_file;
}

fs::path tvm_ffi_toolchain_dir(const util::CacheLayout& cache, const LockedArtifact& wheel) {
  return cache.toolchains() / ("tvm-ffi-" + wheel.version + "-" + wheel.sha256.substr(0, 12));
}

// A toolchain directory is published by renaming a fully unpacked staging directory onto its name,
// with `.complete` written last: a reader that sees the name sees everything. A directory without the
// marker (left by a killed process) is moved aside first; when two processes race, the loser's
// rename fails onto a complete directory and its staging copy is dropped.
Result<void> install_complete_dir(util::FileSystem& fs, const fs::path& staging, const fs::path& dir) {
  if (!toolchain_complete(fs, dir) && fs.stat(dir).exists) {
    fs::path aside = util::temp_sibling(dir);
    if (fs.rename(dir, aside)) (void)fs.remove_all(aside);
  }
  if (toolchain_complete(fs, dir)) {
    (void)fs.remove_all(staging);
    return {};
  }
  if (auto moved = fs.rename(staging, dir); !moved) {
    (void)fs.remove_all(staging);
    if (!toolchain_complete(fs, dir)) return fail(moved.error());  // else another process won the race
  }
  return {};
}

// Only what a build compiles and links against is unpacked from a Torch wheel: headers, the CMake
// config, version.py, and the libraries the binding links; not the Python package or the other
// libraries, which no build reads.
std::optional<std::string> torch_wheel_entry(const std::string& name) {
  if (name.starts_with("torch/include/") || name.starts_with("torch/share/cmake/") || name == "torch/version.py")
    return name;
  static const char* k_libraries[] = {"libc10.so", "libc10_cuda.so", "libtorch.so", "libtorch_cpu.so",
                                      "libtorch_cuda.so"};
  for (const char* library : k_libraries)
    if (name == std::string("torch/lib/") + library) return name;
  return std::nullopt;
}

// What a tvm-ffi kernel compiles and links against: the headers and the shared library (not the
// Python extension, which is CPython-specific).
std::optional<std::string> tvm_ffi_wheel_entry(const std::string& name) {
  if (name.starts_with("tvm_ffi/include/") || name == "tvm_ffi/lib/libtvm_ffi.so") return name;
  return std::nullopt;
}

std::optional<std::string> cuda_wheel_entry(const std::string& name) {
  static const std::string k_prefix = "nvidia/cu13/";
  if (!name.starts_with(k_prefix)) return std::nullopt;
  std::string rest = name.substr(k_prefix.size());
  if (rest.empty() || rest.starts_with("cuda_cccl/")) return std::nullopt;
  return rest;
}

namespace {

Error toolchain_error(std::string message, std::string hint = {}) {
  return Error{ExitCode::toolchain, std::move(message), std::move(hint)};
}

std::string url_file_name(const std::string& url) {
  std::string name = url.substr(url.rfind('/') + 1);
  if (auto hash = name.find('#'); hash != std::string::npos) name.resize(hash);
  std::string decoded;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '%' && i + 2 < name.size()) {
      decoded += static_cast<char>(std::stoi(name.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      decoded += name[i];
    }
  }
  return decoded;
}

}  // namespace

Provisioner::Provisioner(util::ProcessLauncher& launcher, util::FileSystem& fs, ProvisionOptions options,
                         LockFile& lock, ProgressSink progress)
    : m_launcher(launcher), m_fs(fs), m_options(std::move(options)), m_lock(lock), m_progress(std::move(progress)) {}

// pip is asked for the wheel of the lock's platform and Python, not of this machine's: `toolchains
// lock` on any host pins what a manylinux_2_28 build needs, and `--only-binary` keeps pip from
// building an sdist. The older manylinux tags come after, for packages that publish only those.
std::vector<std::string> Provisioner::platform_args(bool torch_wheel) const {
  std::vector<std::string> args = {"--only-binary=:all:"};
  for (const char* platform : {"manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
                               "manylinux_2_12_x86_64", "manylinux2010_x86_64"}) {
    args.push_back("--platform");
    args.push_back(platform);
  }
  std::string tag = m_lock.python_tag;  // "cp312"
  args.push_back("--python-version");
  args.push_back(tag.substr(2, 1) + "." + tag.substr(3));
  if (torch_wheel) {
    args.push_back("--implementation");
    args.push_back("cp");
    args.push_back("--abi");
    args.push_back(tag);
  }
  return args;
}

Result<LockedArtifact> Provisioner::resolve(const std::string& package, const std::string& spec, bool torch_wheel) {
  util::ScratchDir scratch(m_fs, m_options.cache.temp(), "resolve");
  fs::path report = scratch.path / "report.json";
  std::vector<std::string> argv = {m_options.python,
                                   "-m",
                                   "pip",
                                   "install",
                                   "--dry-run",
                                   "--ignore-installed",
                                   "--no-deps",
                                   "--quiet",
                                   "--disable-pip-version-check",
                                   "--report",
                                   report.string(),
                                   "--target",
                                   (scratch.path / "target").string()};
  auto platform = platform_args(torch_wheel);
  argv.insert(argv.end(), platform.begin(), platform.end());
  argv.push_back(package + "==" + spec);
  m_progress("resolving " + package + "==" + spec + " with pip");
  auto result = m_launcher.run(argv);
  if (!result)
    return fail(toolchain_error("cannot run pip: " + result.error().message, "pass --python with pip installed"));
  if (result->exit_code != 0)
    return fail(toolchain_error(
        "pip could not resolve " + package + "==" + spec + ":\n" + std::string(util::trim(result->err + result->out)),
        "check the version exists on your package index (pip index versions " + package + ")"));
  KB_TRY_ASSIGN(std::string text, m_fs.read_file(report));
  try {
    auto j = nlohmann::json::parse(text);
    const auto& item = j.at("install").at(0);
    LockedArtifact artifact;
    artifact.package = package;
    artifact.version = item.at("metadata").at("version");
    artifact.file = url_file_name(item.at("download_info").at("url"));
    artifact.sha256 = item.at("download_info").at("archive_info").at("hashes").at("sha256");
    return artifact;
  } catch (const std::exception& e) {
    return fail(toolchain_error("unexpected pip report for " + package + ": " + e.what(),
                                "kbuild needs pip >= 23 (pip install --upgrade pip)"));
  }
}

Result<std::vector<LockedArtifact>> Provisioner::artifacts(const std::string& component,
                                                           const util::Version& major_minor) {
  std::string name = toolchain_name(component, major_minor.major_minor());
  if (const auto* locked = m_lock.find(name)) return *locked;
  if (m_options.locked)
    return fail(toolchain_error("kbuild.lock has no " + name + " toolchain and --locked forbids adding it",
                                "run `kbuild toolchains lock` and commit kbuild.lock"));
  std::vector<LockedArtifact> artifacts;
  std::string spec = major_minor.major_minor() + ".*";
  if (component == "torch") {
    KB_TRY_ASSIGN(auto artifact, resolve("torch", spec, true));
    artifacts.push_back(artifact);
  } else if (component == "cutlass") {
    auto release =
        cutlass_release("cutlass_" + std::to_string(major_minor.major()) + "_" + std::to_string(major_minor.minor()));
    if (!release) return fail(toolchain_error("kbuild does not know CUTLASS " + major_minor.major_minor()));
    KB_TRY_ASSIGN(auto artifact,
                  release->on_pypi ? resolve("nvidia-cutlass", spec, false) : resolve_source_archive(*release));
    artifacts.push_back(artifact);
  } else if (component == "tvm-ffi") {
    KB_TRY_ASSIGN(auto artifact, resolve("apache-tvm-ffi", spec, true));  // a CPython-specific wheel
    artifacts.push_back(artifact);
  } else {
    if (major_minor.major() < 13)
      return fail(toolchain_error(
          "CUDA " + major_minor.major_minor() + " cannot be fetched (NVIDIA publishes nvcc wheels for CUDA 13 only)",
          "install it and pass --cuda-toolkit " + major_minor.major_minor() + "=/path/to/cuda"));
    for (const auto& package : cuda_wheel_packages()) {
      KB_TRY_ASSIGN(auto artifact, resolve(package, spec, false));
      artifacts.push_back(artifact);
    }
  }
  m_lock.toolchains[name] = artifacts;
  m_lock_changed = true;
  return artifacts;
}

Result<fs::path> Provisioner::fetch(const LockedArtifact& artifact) {
  fs::path destination = m_options.cache.downloads() / artifact.sha256 / artifact.file;
  if (!artifact.file.ends_with(".deb")) KB_TRY(verify_wheel_pin(artifact));  // .debs: verify_host_pins
  if (m_fs.stat(destination).is_file) {
    (void)m_fs.touch(destination);  // last used, for `kbuild cache prune`
    KB_TRY(mark_wheel_verified(artifact));
    return destination;  // its sha256 verified when it was stored
  }
  util::ScratchDir scratch(m_fs, m_options.cache.temp(), "download");
  if (!artifact.url.empty()) {
    const std::string url = archive_url(artifact);
    KB_TRY_ASSIGN(fs::path downloaded, download_archive(url, scratch.path, artifact.file));
    auto release = util::Version::parse(artifact.version);
    const std::string entry = artifact.file.ends_with(".deb") ? bookworm_gcc12_recipe().name
                              : release                       ? toolchain_name("cutlass", release->major_minor())
                                                              : artifact.file;
    return store_verified(downloaded, artifact, destination,
                          "the download from " + url +
                              " is corrupt, was tampered with, or is another archive than the pinned one; if the "
                              "change is expected, remove the \"" +
                              entry + "\" entry from kbuild.lock and run `kbuild toolchains lock`");
  }
  std::vector<std::string> argv = {m_options.python,
                                   "-m",
                                   "pip",
                                   "download",
                                   "--no-deps",
                                   "--disable-pip-version-check",
                                   "--dest",
                                   scratch.path.string(),
                                   "--progress-bar",
                                   m_options.progress ? "on" : "off"};
  auto platform = platform_args(artifact.package == "torch");
  argv.insert(argv.end(), platform.begin(), platform.end());
  argv.push_back(artifact.package + "==" + artifact.version);
  m_progress("fetching " + artifact.file);
  util::ProcessOptions process_options;
  process_options.inherit_output = m_options.progress;
  auto result = m_launcher.run(argv, process_options);
  if (!result) return fail(toolchain_error("cannot run pip: " + result.error().message));
  if (result->exit_code != 0)
    return fail(toolchain_error("pip could not download " + artifact.file +
                                    (m_options.progress ? "" : ":\n" + std::string(util::trim(result->err))),
                                "check your network and pip configuration (index, proxy)"));
  fs::path downloaded = scratch.path / artifact.file;
  if (!m_fs.stat(downloaded).is_file)
    return fail(toolchain_error("pip downloaded a different file than " + artifact.file + " (kbuild.lock)",
                                "the index no longer serves this file; run `kbuild toolchains lock` to re-pin"));
  return store_verified(downloaded, artifact, destination);
}

Result<fs::path> Provisioner::store_verified(const fs::path& downloaded, const LockedArtifact& artifact,
                                             const fs::path& destination, const std::string& mismatch_hint) {
  KB_TRY_ASSIGN(std::string sha256, util::sha256_file_hex(m_fs, downloaded));
  if (sha256 != artifact.sha256)
    return fail(toolchain_error("sha256 mismatch for " + artifact.file + ": got " + sha256 + ", kbuild.lock pins " +
                                    artifact.sha256 + "; the file was not used",
                                !mismatch_hint.empty() ? mismatch_hint
                                                       : "the download is corrupt or was tampered with; if the "
                                                         "change is expected, re-pin with `kbuild toolchains lock "
                                                         "--update`"));
  KB_TRY(m_fs.make_dirs(destination.parent_path()));
  KB_TRY(m_fs.rename(downloaded, destination));
  KB_TRY(mark_wheel_verified(artifact));
  return destination;
}

Result<fs::path> Provisioner::download_archive(const std::string& url, const fs::path& scratch,
                                               const std::string& file) {
  if (!m_options.download_url)
    return fail(toolchain_error("cannot download " + url + ": this kbuild has no downloader configured"));
  m_progress("fetching " + url);
  fs::path downloaded = scratch / file;
  KB_TRY(m_options.download_url(url, downloaded));
  return downloaded;
}

Result<LockedArtifact> Provisioner::resolve_source_archive(const CutlassRelease& release) {
  const std::string& version = release.version;
  LockedArtifact artifact;
  artifact.package = "cutlass-source";
  artifact.version = version;
  artifact.file = "cutlass-" + version + ".zip";
  artifact.url = expand_archive_url(
      m_options.cutlass_mirror_url.empty() ? std::string(k_cutlass_archive_url) : m_options.cutlass_mirror_url,
      version);
  util::ScratchDir scratch(m_fs, m_options.cache.temp(), "resolve");
  KB_TRY_ASSIGN(fs::path downloaded, download_archive(artifact.url, scratch.path, artifact.file));
  // Nothing is pinned before the archive proves to hold the release's headers: a wrong pin would
  // outlive the run.
  fs::path probe = scratch.path / "probe";
  auto extracted = extract_zip(m_fs, downloaded, probe, [](const std::string& name) -> std::optional<std::string> {
    auto entry = cutlass_archive_entry(name);
    bool wanted = entry && (*entry == "include/cutlass/version.h" || *entry == "include/cutlass/cutlass.h" ||
                            *entry == "CMakeLists.txt" || *entry == "cmake/version.h.in");
    return wanted ? entry : std::nullopt;
  });
  if (!extracted)
    return fail(toolchain_error(
        "the download from " + artifact.url + " is not a readable zip archive: " + extracted.error().message,
        "check the URL (KBUILD_CUTLASS_URL) and try again"));
  auto missing = [&](const std::string& what) {
    return fail(toolchain_error("the download from " + artifact.url + " has no " + what,
                                "check the URL (KBUILD_CUTLASS_URL): it must serve CUTLASS's source archive"));
  };
  if (!m_fs.stat(probe / "include/cutlass/cutlass.h").is_file) return missing("include/cutlass/cutlass.h");
  KB_TRY(check_cutlass_release(cutlass_tree_version(probe, "include"), artifact, release.version, release.dependency));
  if (!m_fs.stat(probe / "include/cutlass/version.h").is_file && !m_fs.stat(probe / "cmake/version.h.in").is_file)
    return missing("include/cutlass/version.h (nor cmake/version.h.in)");
  KB_TRY_ASSIGN(artifact.sha256, util::sha256_file_hex(m_fs, downloaded));
  fs::path destination = m_options.cache.downloads() / artifact.sha256 / artifact.file;
  KB_TRY(m_fs.make_dirs(destination.parent_path()));
  KB_TRY(m_fs.rename(downloaded, destination));
  m_progress("pinned CUTLASS " + version + " by the sha256 of this download, " + artifact.sha256 +
             " (kbuild.lock); compare it with a copy you trust before committing the lock");
  return artifact;
}

Result<void> Provisioner::unpack_wheel(const LockedArtifact& wheel, const fs::path& root,
                                       const std::function<std::optional<std::string>(const std::string&)>& select,
                                       const std::string& what, const std::string& required,
                                       const std::function<Result<void>(const fs::path&)>& finish) {
  if (toolchain_complete(m_fs, root)) {
    (void)m_fs.touch(root / ".complete");  // last used: `kbuild cache prune` goes by it
    return {};
  }
  KB_TRY_ASSIGN(fs::path file, fetch(wheel));
  m_progress("extracting " + wheel.file + " (" + what + ")");
  fs::path staging = util::temp_sibling(root);
  (void)m_fs.remove_all(staging);
  auto stats = extract_zip(m_fs, file, staging, select);
  if (!stats || !m_fs.stat(staging / required).is_file) {
    (void)m_fs.remove_all(staging);
    return stats ? fail(toolchain_error(wheel.file + " has no " + required + "; is it the right " +
                                        (wheel.url.empty() ? "wheel?" : "archive?")))
                 : fail(stats.error());
  }
  if (finish) {
    if (auto finished = finish(staging); !finished) {
      (void)m_fs.remove_all(staging);
      return fail(finished.error());
    }
  }
  KB_TRY(m_fs.write_file_atomic(staging / ".complete", wheel.file + " " + wheel.sha256 + "\n"));
  return install_complete_dir(m_fs, staging, root);
}

Result<TorchInstall> Provisioner::torch(const util::Version& major_minor) {
  KB_TRY_ASSIGN(auto artifacts, this->artifacts("torch", major_minor));
  const LockedArtifact& wheel = artifacts.front();
  fs::path root = torch_toolchain_dir(m_options.cache, wheel);
  KB_TRY(unpack_wheel(wheel, root, torch_wheel_entry, "headers and link libraries", "torch/version.py"));
  KB_TRY_ASSIGN(TorchInstall install, read_torch_install(m_fs, root / "torch"));
  install.origin = "wheel:" + wheel.file;
  return install;
}

std::string Provisioner::archive_url(const LockedArtifact& artifact) const {
  if (artifact.file.ends_with(".deb"))
    return m_options.debian_mirror_url.empty() ? artifact.url
                                               : expand_file_url(m_options.debian_mirror_url, artifact.file);
  const bool mirrored = artifact.package == "cutlass-source" && !m_options.cutlass_mirror_url.empty();
  return mirrored ? expand_archive_url(m_options.cutlass_mirror_url, artifact.version) : artifact.url;
}

Result<TvmFfiInstall> Provisioner::tvm_ffi(const util::Version& series) {
  KB_TRY_ASSIGN(auto artifacts, this->artifacts("tvm-ffi", series));
  const LockedArtifact& wheel = artifacts.front();
  fs::path root = tvm_ffi_toolchain_dir(m_options.cache, wheel);
  KB_TRY(unpack_wheel(wheel, root, tvm_ffi_wheel_entry, "headers and libtvm_ffi.so", "tvm_ffi/lib/libtvm_ffi.so"));
  if (!m_fs.stat(root / "tvm_ffi/include/tvm/ffi/function.h").is_file)
    return fail(toolchain_error(wheel.file + " has no tvm/ffi headers; is it the right wheel?"));
  TvmFfiInstall install;
  install.version = wheel.version;
  install.root = root;
  install.include_dir = root / "tvm_ffi/include";
  install.lib_dir = root / "tvm_ffi/lib";
  install.origin = "wheel:" + wheel.file;
  return install;
}

Result<void> Provisioner::verify_toolkit(const CudaToolkit& cuda) {
  util::ScratchDir scratch(m_fs, m_options.cache.temp(), "cuda-check");
  KB_TRY(m_fs.write_file_atomic(
      scratch.path / "probe.cu",
      "#include <cuda_runtime.h>\n__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n"
      "extern \"C\" int kbuild_probe(float* x) { k<<<1, 32>>>(x); return cudaGetLastError(); }\n"));
  const HostCompiler& host = m_options.host;
  util::ProcessOptions options;
  options.env = host.environment();
  std::string xcompiler = "-Xcompiler=-fPIC";
  for (const auto& flag : host.driver_flags()) xcompiler += "," + flag;
  auto compile = m_launcher.run({cuda.nvcc.string(), "-ccbin", host.cxx.string(), xcompiler, "-arch=sm_90", "-c",
                                 (scratch.path / "probe.cu").string(), "-o", (scratch.path / "probe.o").string()},
                                options);
  if (!compile || compile->exit_code != 0)
    return fail(toolchain_error("the CUDA " + cuda.version.str() + " toolkit at " + cuda.root.string() +
                                    " cannot compile a kernel:\n" + (compile ? compile->out + compile->err : ""),
                                "delete " + cuda.root.string() + " and build again"));
  std::vector<std::string> link_argv = {host.cxx.string()};
  for (const auto& flag : host.driver_flags()) link_argv.push_back(flag);
  for (const std::string& arg :
       {std::string("-shared"), std::string("-o"), (scratch.path / "probe.so").string(),
        (scratch.path / "probe.o").string(), "-L" + cuda.lib_dir.string(), std::string("-lcudart")})
    link_argv.push_back(arg);
  auto link = m_launcher.run(link_argv, options);
  if (!link || link->exit_code != 0)
    return fail(toolchain_error("the CUDA " + cuda.version.str() + " toolkit at " + cuda.root.string() +
                                    " cannot link a kernel:\n" + (link ? link->out + link->err : ""),
                                "delete " + cuda.root.string() + " and build again"));
  return {};
}

Result<CudaToolkit> Provisioner::cuda(const util::Version& major_minor, const std::optional<CudaToolkit>& system) {
  if (auto user = m_options.user_cuda.find(major_minor.major_minor()); user != m_options.user_cuda.end()) {
    KB_TRY_ASSIGN(CudaToolkit toolkit, identify_cuda(m_launcher, m_fs, user->second, "user"));
    if (toolkit.version.major_minor() != major_minor.major_minor())
      return fail(toolchain_error("--cuda-toolkit " + major_minor.major_minor() + "=" + user->second.string() +
                                  " is CUDA " + toolkit.version.str()));
    return toolkit;
  }
  if (system && system->version.major_minor() == major_minor.major_minor()) return *system;
  KB_TRY_ASSIGN(auto artifacts, this->artifacts("cuda", major_minor));
  fs::path root = cuda_toolchain_dir(m_options.cache, artifacts);
  if (toolchain_complete(m_fs, root)) (void)m_fs.touch(root / ".complete");
  if (!toolchain_complete(m_fs, root)) {
    fs::path staging = util::temp_sibling(root);
    (void)m_fs.remove_all(staging);
    for (const auto& artifact : artifacts) {
      KB_TRY_ASSIGN(fs::path file, fetch(artifact));
      auto stats = extract_zip(m_fs, file, staging, cuda_wheel_entry);
      if (!stats) {
        (void)m_fs.remove_all(staging);
        return fail(stats.error());
      }
    }
    m_progress("assembled CUDA " + artifacts.front().version + " from " + std::to_string(artifacts.size()) + " wheels");
    // The wheels ship only the versioned runtime; the linker looks for libcudart.so.
    (void)m_fs.create_symlink("libcudart.so.13", staging / "lib" / "libcudart.so");
    auto toolkit = identify_cuda(m_launcher, m_fs, staging, "wheels");
    Result<void> verified = toolkit ? verify_toolkit(*toolkit) : Result<void>(fail(toolkit.error()));
    if (!verified) {
      (void)m_fs.remove_all(staging);
      return fail(verified.error());
    }
    KB_TRY(m_fs.write_file_atomic(staging / ".complete", toolkit->version.str() + "\n"));
    KB_TRY(install_complete_dir(m_fs, staging, root));
  }
  // Assembled and verified once; later builds read the version recorded then instead of running nvcc.
  KB_TRY_ASSIGN(std::string recorded, m_fs.read_file(root / ".complete"));
  auto recorded_version = util::Version::parse(util::trim(recorded));
  if (!recorded_version) return identify_cuda(m_launcher, m_fs, root, "wheels");
  CudaToolkit toolkit;
  toolkit.version = *recorded_version;
  toolkit.root = root;
  toolkit.nvcc = root / "bin" / "nvcc";
  toolkit.include_dir = root / "include";
  toolkit.lib_dir = root / "lib";
  toolkit.origin = "wheels";
  return toolkit;
}

}  // namespace kbuild::toolchain
