#pragma once
// Obtaining pinned toolchains without Nix, for matrix builds:
//  - Torch X.Y: the PyPI wheel, resolved and downloaded by pip (so pip's configuration, mirrors and
//    proxies apply), verified against kbuild.lock's sha256, and only include/, share/cmake/,
//    version.py and the libraries kernels link against extracted (libarchive) into
//    $KBUILD_CACHE/toolchains/torch-<version>-<sha>/.
//  - CUDA X.Y: the system toolkit when its version is X.Y; otherwise assembled from NVIDIA's wheels
//    (nvcc, nvvm, crt, runtime, cccl) into $KBUILD_CACHE/toolchains/cuda-<version>-<sha>/, and proven
//    to compile and link a kernel before it is used. A user-provided toolkit (--cuda-toolkit
//    12.6=/opt/cuda-12.6) takes precedence; CUDA 12 cannot be fetched.
// Downloads live in $KBUILD_CACHE/downloads/<sha256>/<file>. Every cache entry is assembled in a
// temporary directory and renamed into place, so an interrupted fetch never leaves a half entry.

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/toolchain/lock.hpp"
#include "kbuild/toolchain/toolchain.hpp"
#include "kbuild/util/cache_layout.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/process.hpp"
#include "kbuild/util/result.hpp"
#include "kbuild/util/system.hpp"
#include "kbuild/util/version.hpp"

namespace kbuild::toolchain {

struct ProvenanceContext;  // provenance.hpp

/// What kbuild could show about one kbuild.lock entry's pins (Provisioner::verify_pins).
enum class PinProof {
  debian_signed,  ///< listed with their sha256 by Debian's signed indices
  pypi_listed,    ///< listed with their sha256 by PyPI's Simple API
  allowed,        ///< from an origin the user trusts as it is (--allow-toolchain-origin)
  first_fetch,    ///< a source archive (CUTLASS from GitHub): pinned by its first download, nothing to ask
};

/// Downloads `url` to `destination` (created or truncated); the caller verifies the content.
using UrlDownloader = std::function<Result<void>(const std::string& url, const std::filesystem::path& destination)>;

/// Where CUTLASS source archives come from: "{version}" is replaced by the release ("4.0.0").
/// A mirror can be given with KBUILD_CUTLASS_URL (read by the build and toolchains commands).
inline constexpr const char* k_cutlass_archive_url =
    "https://github.com/NVIDIA/cutlass/archive/refs/tags/v{version}.zip";

/// KBUILD_CUTLASS_URL, or "" when unset or empty.
std::string cutlass_mirror_url(const util::Environment& env);
/// `url_template` with every "{version}" replaced by `version`.
std::string expand_archive_url(std::string url_template, const std::string& version);

struct ProvisionOptions {
  util::CacheLayout cache;         ///< where downloads and toolchains live
  std::string python = "python3";  ///< its pip resolves and downloads
  bool locked = false;             ///< never resolve: everything must come from kbuild.lock
  bool progress = false;           ///< a terminal: let pip draw its progress bar
  /// User-provided toolkits by major.minor ("12.6" -> /opt/cuda-12.6).
  std::map<std::string, std::filesystem::path> user_cuda;
  /// The host compiler nvcc is proven with (a CUDA toolkit assembled from wheels).
  HostCompiler host = {"g++"};
  /// Fetches source archives (CUTLASS releases not on PyPI); empty: such artifacts are an error.
  UrlDownloader download_url = {};
  /// A mirror of CUTLASS source archives (a URL template, see k_cutlass_archive_url) used for new pins
  /// and for fetching pinned ones alike; empty: new pins come from k_cutlass_archive_url and pinned
  /// archives from the URL their pin records. The sha256 of the pin is checked either way.
  std::string cutlass_mirror_url;
  /// Where pinned Debian packages are fetched from instead of the URL their pin records
  /// (KBUILD_DEBIAN_MIRROR, a URL template with "{file}"); the sha256 of the pin is checked either way.
  std::string debian_mirror_url;
  /// What a pin must prove before it is used (provenance.hpp); off only where downloads are faked.
  bool verify_provenance = true;
  std::filesystem::path debian_keyring;  ///< empty: keyring_problem says why there is none
  std::optional<Error> keyring_problem;
  std::vector<std::string> allowed_origins;  ///< URL prefixes whose pins are trusted as they are
  /// PyPI's Simple API (PEP 691 JSON; $KBUILD_PYPI_SIMPLE) and what downloads from it.
  std::string pypi_simple = "https://pypi.org/simple";
  UrlDownloader download_simple_index = {};
};

/// The CUTLASS release kernel-builder pins for a `depends` name, and where kbuild gets it: PyPI's
/// nvidia-cutlass wheel has 3.5, 3.6 and 3.8 (the same releases, 3.5.1, 3.6.0, 3.8.0); 2.10.0, 3.9.2,
/// 4.0.0, 4.4.2 and 4.5.2 are not published there and come from the release's source archive.
struct CutlassRelease {
  std::string dependency;  ///< "cutlass_4_0"
  std::string version;     ///< "4.0.0"
  bool on_pypi = false;
};
std::optional<CutlassRelease> cutlass_release(const std::string& dependency);

/// Lines of progress ("fetching torch-2.15.0-...whl (539 MB)") go here.
using ProgressSink = std::function<void(const std::string&)>;

class Provisioner {
 public:
  Provisioner(util::ProcessLauncher& launcher, util::FileSystem& fs, ProvisionOptions options, LockFile& lock,
              ProgressSink progress);

  /// The artifacts of a toolchain ("torch", "2.15"): from the lock, else resolved with pip and
  /// added to the lock (an error with --locked).
  Result<std::vector<LockedArtifact>> artifacts(const std::string& component, const util::Version& major_minor);
  /// Downloads (if needed) and verifies one artifact; returns its path in the cache.
  Result<std::filesystem::path> fetch(const LockedArtifact& artifact);

  Result<TorchInstall> torch(const util::Version& major_minor);
  /// `system` is the toolkit found locally, if any.
  Result<CudaToolkit> cuda(const util::Version& major_minor, const std::optional<CudaToolkit>& system);

  /// The headers of a build.toml dependency kbuild provides (provided_dependency): CUTLASS from
  /// NVIDIA's nvidia-cutlass wheel, or from the release's source archive where PyPI lacks it, pinned
  /// in kbuild.lock like the toolchains.
  Result<HeaderLibrary> header_library(const std::string& dependency);

  /// apache-tvm-ffi <series>.x from PyPI, pinned in kbuild.lock as tvm-ffi-<series>, for tvm-ffi kernels.
  Result<TvmFfiInstall> tvm_ffi(const util::Version& series);

  /// The pinned host toolchain (host_toolchain.hpp): Debian's GCC, binutils and C library, from the
  /// lock's gcc-X.Y pin (resolved from Debian's indices and added to the lock unless --locked),
  /// unpacked and proven to compile and link with nothing of the system's.
  Result<HostCompiler> host_compiler();
  /// Checks one kbuild.lock entry's pins (all .debs, or all wheels) against Debian's signed indices or
  /// PyPI without downloading them; every pin PyPI does not list is named.
  Result<PinProof> verify_pins(const std::vector<LockedArtifact>& artifacts);
  /// The pins of the host toolchain: from the lock, else resolved from Debian's package indices.
  Result<std::vector<LockedArtifact>> host_artifacts();

  /// The host compiler later steps prove toolkits with (the pinned one, once host_compiler() gave it).
  void set_host(const HostCompiler& host) { m_options.host = host; }

  /// Whether artifacts() added anything to the lock.
  bool lock_changed() const { return m_lock_changed; }

 private:
  Result<LockedArtifact> resolve(const std::string& package, const std::string& spec, bool torch_wheel);
  /// Downloads a CUTLASS release's source archive and pins it by the sha256 of what arrived, once it
  /// holds include/cutlass/cutlass.h and names exactly that release (cutlass/version.h, else the
  /// project() of CMakeLists.txt).
  Result<LockedArtifact> resolve_source_archive(const CutlassRelease& release);
  /// The CUTLASS release of a tree at `root` (an unpacked archive or wheel, `include` below it):
  /// cutlass/version.h's, else the version of CMakeLists.txt's project(); nullopt if neither says.
  std::optional<std::string> cutlass_tree_version(const std::filesystem::path& root,
                                                  const std::filesystem::path& include) const;
  /// Writes include/cutlass/version.h from cmake/version.h.in into an unpacked source archive that
  /// lacks it (CUTLASS 2.x), as CUTLASS's CMake install does.
  Result<void> complete_cutlass_tree(const std::filesystem::path& staging);
  /// Checks that `found` (cutlass_tree_version of `artifact`'s tree) is `release`, the release the
  /// build.toml `dependency` names: for a source archive exactly, for a wheel its major.minor (the
  /// wheel's own version may add a fourth number).
  Result<void> check_cutlass_release(const std::optional<std::string>& found, const LockedArtifact& artifact,
                                     const std::string& release, const std::string& dependency) const;
  /// Where a source-archive artifact is fetched from: the mirror (KBUILD_CUTLASS_URL) when set,
  /// else the URL its pin records.
  std::string archive_url(const LockedArtifact& artifact) const;
  /// Downloads `url` into the cache's temp area and checks it against `sha256` when one is given.
  Result<std::filesystem::path> download_archive(const std::string& url, const std::filesystem::path& scratch,
                                                 const std::string& file);
  Result<void> verify_toolkit(const CudaToolkit& cuda);
  /// Checks that a wheel pin is listed by PyPI, unless a marker beside its downloaded file says so
  /// (provision_trust.cpp, with the host toolchain's check); the marker is written by
  /// mark_wheel_verified once the file with that sha256 is in the download cache, never before.
  Result<void> verify_wheel_pin(const LockedArtifact& artifact);
  Result<void> mark_wheel_verified(const LockedArtifact& artifact);
  std::filesystem::path provenance_marker(const LockedArtifact& artifact) const;
  ProvenanceContext provenance_context(const std::filesystem::path& scratch);
  /// Checks every .deb pin of the host toolchain against Debian's signed indices (provenance.hpp).
  Result<void> verify_host_pins(const std::vector<LockedArtifact>& packages);
  /// Fetches and unpacks the host toolchain's packages into `dir` (staged, proven, then renamed).
  Result<void> assemble_host_toolchain(const std::vector<LockedArtifact>& packages, const std::filesystem::path& dir);
  /// Checks that `compiler` runs only its own as and ld and builds a shared library.
  Result<void> prove_host_compiler(const HostCompiler& compiler);
  /// Checks a downloaded file against the artifact's pinned sha256 and moves it to `destination`.
  Result<std::filesystem::path> store_verified(const std::filesystem::path& downloaded, const LockedArtifact& artifact,
                                               const std::filesystem::path& destination,
                                               const std::string& mismatch_hint = "");
  /// Unpacks the entries of `wheel` that `select` keeps into `root` (staged, then renamed into place
  /// with a .complete marker), unless that was done already; `required` must be among them.
  Result<void> unpack_wheel(const LockedArtifact& wheel, const std::filesystem::path& root,
                            const std::function<std::optional<std::string>(const std::string&)>& select,
                            const std::string& what, const std::string& required,
                            const std::function<Result<void>(const std::filesystem::path&)>& finish = {});
  std::vector<std::string> platform_args(bool torch_wheel) const;

  util::ProcessLauncher& m_launcher;
  util::FileSystem& m_fs;
  ProvisionOptions m_options;
  LockFile& m_lock;
  ProgressSink m_progress;
  bool m_lock_changed = false;
};

/// For a build.toml `depends` name kbuild can provide: the toolchain component and its version
/// ("cutlass_3_6" -> {"cutlass", 3.6}); nullopt otherwise.
std::optional<std::pair<std::string, util::Version>> provided_dependency(const std::string& dependency);

/// Which entries of a CUTLASS source archive ("cutlass-4.0.0/include/cute/tensor.hpp") form the
/// headers, mapped below the install root ("include/cute/tensor.hpp"), with the top-level
/// CMakeLists.txt and cmake/version.h.in (the release of archives without cutlass/version.h); the
/// top directory's name is whatever the archive has.
std::optional<std::string> cutlass_archive_entry(const std::string& name);
/// CUTLASS_MAJOR.CUTLASS_MINOR.CUTLASS_PATCH as cutlass/version.h defines them; nullopt if absent.
std::optional<std::string> cutlass_header_version(std::string_view version_h);
/// The X.Y.Z of `project(CUTLASS VERSION X.Y.Z ...)` in CUTLASS's top-level CMakeLists.txt.
std::optional<std::string> cutlass_cmake_version(std::string_view cmakelists);
/// cmake/version.h.in configured for `version` ("2.10.0") as CUTLASS's CMake does without git.
std::string render_cutlass_version_h(std::string_view version_h_in, const std::string& version);

/// The directory of an unpacked Torch wheel in the cache: toolchains/torch-<version>-<sha12>.
std::filesystem::path torch_toolchain_dir(const util::CacheLayout& cache, const LockedArtifact& wheel);
/// The directory of a CUDA toolkit assembled from `wheels`: toolchains/cuda-<version>-<sha12 of all>.
std::filesystem::path cuda_toolchain_dir(const util::CacheLayout& cache, const std::vector<LockedArtifact>& wheels);
/// The directory of an unpacked apache-tvm-ffi wheel: toolchains/tvm-ffi-<version>-<sha12>.
std::filesystem::path tvm_ffi_toolchain_dir(const util::CacheLayout& cache, const LockedArtifact& wheel);
/// Whether a toolchain directory was completely unpacked (its .complete marker exists).
bool toolchain_complete(const util::FileSystem& fs, const std::filesystem::path& dir);
/// Moves a fully assembled `staging` directory (with its .complete marker) to `dir`, safe against
/// other processes doing the same: a complete `dir` is never replaced (the other process's equal
/// result is kept and `staging` removed); an incomplete one (a crashed run) is moved aside first.
Result<void> install_complete_dir(util::FileSystem& fs, const std::filesystem::path& staging,
                                  const std::filesystem::path& dir);

/// Which entries of a Torch wheel a build needs, mapped to their place under the install root.
std::optional<std::string> torch_wheel_entry(const std::string& name);
/// Which entries of an apache-tvm-ffi wheel a tvm-ffi kernel's build needs.
std::optional<std::string> tvm_ffi_wheel_entry(const std::string& name);
/// Which entries of an NVIDIA CUDA wheel form the toolkit ("nvidia/cu13/bin/nvcc" -> "bin/nvcc").
std::optional<std::string> cuda_wheel_entry(const std::string& name);

}  // namespace kbuild::toolchain
