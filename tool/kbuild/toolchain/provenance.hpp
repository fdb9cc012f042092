#pragma once
// What a pin proves, and what kbuild checks before it uses one (docs/matrix.md, "What a pin
// proves"). A sha256 in kbuild.lock proves that the file is the one the lock's author chose; a
// kernel's repository may point a pin at any URL. So before a pinned toolchain is assembled:
//
//   - a .deb must come from an origin kbuild verifies (Debian's archive: deb.debian.org/debian,
//     security.debian.org/debian-security) or one the user allows (allowed_origins: trusted as they
//     are, `--allow-toolchain-origin` / toolchain-origins in the user config); and its sha256 must be
//     listed for that file in the signed index of one of the recipe's suites: dists/<suite>/InRelease,
//     checked with gpgv against the Debian archive keyring, names the SHA256 of
//     main/binary-amd64/Packages.xz, which names the package's Filename and SHA256;
//   - a wheel (Torch, CUDA's nvidia-* packages, tvm-ffi) must be listed with that file name and sha256
//     by PyPI's Simple API (https://pypi.org/simple/<name>/ answered as PEP 691 JSON, over HTTPS; the
//     index pip itself reads).
//
// Verified index files are kept in the download cache (downloads/debian-indices/<suite>/<sha12 of the
// InRelease>/), so a later check, a machine without the network, or a suite that moved on since can
// verify against them; a verified toolchain is never checked again (its .complete marker). Every
// refusal says which pin, why, and how to get past it.

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kbuild/toolchain/debian.hpp"
#include "kbuild/toolchain/lock.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/process.hpp"
#include "kbuild/util/result.hpp"
#include "kbuild/util/system.hpp"

namespace kbuild::toolchain {

struct ProvenanceContext {
  util::ProcessLauncher& launcher;  ///< runs gpgv
  util::FileSystem& fs;
  /// Downloads `url` to `file` (error when it cannot be fetched).
  std::function<Result<void>(const std::string& url, const std::filesystem::path& file)> download = {};
  std::filesystem::path index_cache;              ///< downloads/debian-indices
  std::filesystem::path scratch;                  ///< a private temporary directory
  std::filesystem::path keyring;                  ///< the Debian archive keyring (an OpenPGP keyring file)
  std::vector<std::string> allowed_origins = {};  ///< URL prefixes trusted without verification
  std::string pypi_simple = "https://pypi.org/simple";
  /// Downloads from pypi_simple, asking for PEP 691 JSON (application/vnd.pypi.simple.v1+json).
  std::function<Result<void>(const std::string& url, const std::filesystem::path& file)> download_simple = {};
  std::function<void(const std::string&)> progress = {};
};

/// The keyring: $KBUILD_DEBIAN_KEYRING, else /usr/share/keyrings/debian-archive-keyring.gpg when it
/// exists (Debian's and Ubuntu's debian-archive-keyring package); error with the fix otherwise.
Result<std::filesystem::path> debian_keyring(const util::FileSystem& fs, const util::Environment& env);

/// Whether `url` starts with one of `origins` (each a URL prefix; a trailing '/' is implied).
bool origin_allowed(std::string_view url, const std::vector<std::string>& origins);

/// The SHA256 and size InRelease's SHA256 section gives `path` ("main/binary-amd64/Packages.xz").
struct IndexDigest {
  std::string sha256;
  std::uint64_t size = 0;
};
std::optional<IndexDigest> inrelease_digest(std::string_view signed_text, std::string_view path);

/// A project name as the Simple API spells it (PEP 503: lower case, runs of "-_." as one "-").
std::string simple_project_name(std::string_view name);

/// Whether a project's PEP 691 JSON page lists `file` with `sha256` (in "files"); error when the text
/// is not such a page.
Result<bool> simple_index_lists(std::string_view json_text, const std::string& file, const std::string& sha256);

/// Every .deb pin of the host toolchain is from a verified (or allowed) origin and in a signed index.
Result<void> verify_debian_pins(const std::vector<LockedArtifact>& pins, const HostToolchainRecipe& recipe,
                                ProvenanceContext& context);

/// Whether PyPI's Simple API lists the wheel `pin` names with its sha256 (error: it could not be asked).
Result<bool> wheel_listed(const LockedArtifact& pin, ProvenanceContext& context);

/// Every wheel pin is listed by PyPI's Simple API with its file name and sha256.
Result<void> verify_wheel_pins(const std::vector<LockedArtifact>& pins, ProvenanceContext& context);

}  // namespace kbuild::toolchain
