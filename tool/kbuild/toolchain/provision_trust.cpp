// The Provisioner's provenance checks (toolchain/provenance.hpp): a pin is used only once what it
// names is shown to be what upstream published.
#include "kbuild/toolchain/provenance.hpp"
#include "kbuild/toolchain/provision.hpp"

#include <algorithm>

#include "kbuild/util/fs.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::toolchain {

namespace fs = std::filesystem;

ProvenanceContext Provisioner::provenance_context(const fs::path& scratch) {
  return ProvenanceContext{.launcher = m_launcher,
                           .fs = m_fs,
                           .download = m_options.download_url,
                           .index_cache = m_options.cache.downloads() / "debian-indices",
                           .scratch = scratch,
                           .keyring = m_options.debian_keyring,
                           .allowed_origins = m_options.allowed_origins,
                           .pypi_simple = m_options.pypi_simple,
                           .download_simple = m_options.download_simple_index,
                           .progress = m_progress};
}

fs::path Provisioner::provenance_marker(const LockedArtifact& artifact) const {
  return m_options.cache.downloads() / artifact.sha256 / ".provenance";
}

Result<void> Provisioner::verify_wheel_pin(const LockedArtifact& artifact) {
  if (!m_options.verify_provenance || !artifact.url.empty() || m_fs.stat(provenance_marker(artifact)).is_file)
    return {};
  if (!m_options.download_simple_index)
    return fail(Error{ExitCode::toolchain, "cannot ask PyPI about " + artifact.file + ": no downloader", ""});
  util::ScratchDir scratch(m_fs, m_options.cache.temp(), "provenance");
  auto context = provenance_context(scratch.path);
  return verify_wheel_pins({artifact}, context);
}

Result<void> Provisioner::mark_wheel_verified(const LockedArtifact& artifact) {
  const fs::path marker = provenance_marker(artifact);
  if (!m_options.verify_provenance || !artifact.url.empty() || m_fs.stat(marker).is_file) return {};
  return m_fs.write_file_atomic(marker, "listed with this sha256 by " + m_options.pypi_simple + "/" +
                                            simple_project_name(artifact.package) + "/\n");
}

Result<PinProof> Provisioner::verify_pins(const std::vector<LockedArtifact>& artifacts) {
  if (std::all_of(artifacts.begin(), artifacts.end(),
                  [&](const auto& artifact) { return origin_allowed(artifact.url, m_options.allowed_origins); }))
    return PinProof::allowed;
  if (std::any_of(artifacts.begin(), artifacts.end(), [](const auto& a) { return a.file.ends_with(".deb"); })) {
    KB_TRY(verify_host_pins(artifacts));
    return PinProof::debian_signed;
  }
  std::vector<std::string> unlisted;
  bool source_archive = false;
  for (const auto& artifact : artifacts) {
    source_archive = source_archive || !artifact.url.empty();
    if (!artifact.url.empty() || m_fs.stat(provenance_marker(artifact)).is_file) continue;
    util::ScratchDir scratch(m_fs, m_options.cache.temp(), "provenance");
    auto context = provenance_context(scratch.path);
    KB_TRY_ASSIGN(bool listed, wheel_listed(artifact, context));
    if (!listed) unlisted.push_back(artifact.file + " (sha256 " + artifact.sha256.substr(0, 12) + "…)");
  }
  if (!unlisted.empty())
    return fail(Error{ExitCode::toolchain,
                      m_options.pypi_simple + " does not list " + util::join(unlisted, ", ") + " with that sha256",
                      "PyPI did not publish these files; re-pin with `kbuild toolchains lock --update`"});
  return source_archive ? PinProof::first_fetch : PinProof::pypi_listed;
}

Result<void> Provisioner::verify_host_pins(const std::vector<LockedArtifact>& packages) {
  if (!m_options.verify_provenance) return {};
  std::vector<LockedArtifact> unchecked;
  for (const auto& package : packages)
    if (!origin_allowed(package.url, m_options.allowed_origins)) unchecked.push_back(package);
  if (!unchecked.empty() && m_options.keyring_problem) return fail(*m_options.keyring_problem);
  if (!m_options.download_url)
    return fail(Error{ExitCode::toolchain, "cannot read Debian's indices: no downloader", ""});
  util::ScratchDir scratch(m_fs, m_options.cache.temp(), "provenance");
  auto context = provenance_context(scratch.path);
  return verify_debian_pins(packages, bookworm_gcc12_recipe(), context);
}

}  // namespace kbuild::toolchain
