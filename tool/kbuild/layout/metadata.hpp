#pragma once
// metadata.json of a variant (the schema kernels-data reads; docs/architecture.md). Keys are written in
// kernel-builder's order: name, id, version, license, upstream, source, python-depends, kernel-depends, backend,
// digest, provenance, then kbuild's own "toolchain" (readers ignore unknown top-level keys); pretty-printed with two
// spaces and a trailing newline. The bytes matter (they are what gets signed and what the reproducibility check
// compares), so the writer is deterministic.

#include <optional>
#include <string>
#include <vector>

#include "kbuild/config/model.hpp"
#include "kbuild/layout/digest.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::layout {

struct GitProvenance {
  std::string commit;  ///< 40 (or 64) lowercase hex
  bool dirty = false;
};

/// What compiled a variant, so that anyone can rebuild it (written as the top-level "toolchain"):
///   {"compiler": "gcc 12.2.0", "compiler-origin": "pinned:gcc-12.2",
///    "host-packages": ["g++-12=12.2.0-14+deb12u1", ...],      // pinned host toolchains only
///    "torch": "2.11.0+cu130", "torch-origin": "wheel:torch-2.11.0-cp312-...whl",
///    "cuda": "13.0.88", "cuda-origin": "system"}               // CUDA variants only
/// Origins carry no paths of the building machine; the sha256 of each artifact is in kbuild.lock.
struct ToolchainRecord {
  std::string compiler;
  std::string compiler_origin;
  std::vector<std::string> host_packages;
  std::string torch;
  std::string torch_origin;
  std::string cuda;
  std::string cuda_origin;
  bool operator==(const ToolchainRecord&) const = default;
};

struct Metadata {
  std::string name;
  std::string id;  ///< the ops id
  std::int64_t version = 0;
  std::string license;
  std::optional<std::string> upstream;
  std::optional<std::string> source;
  std::vector<std::string> python_depends;
  std::vector<config::KernelDependency> kernel_depends;
  config::Backend backend = config::Backend::cpu;
  std::vector<std::string> archs;  ///< empty: omitted
  std::optional<Digest> digest;
  std::string digest_algorithm = "sha256";  ///< "sha256" or "sha512" (readers accept both)
  std::string builder_version;              ///< written as provenance."kernel-builder".version
  std::optional<GitProvenance> kernel;
  std::optional<ToolchainRecord> toolchain;

  std::string to_json() const;
  static Result<Metadata> parse(std::string_view text);
};

/// The metadata fields of a config for one backend (no digest, archs or provenance yet).
Metadata metadata_for(const config::KernelConfig& config, config::Backend backend, const std::string& ops_id);

}  // namespace kbuild::layout
