#pragma once
// kbuild.lock: the pinned toolchain artifacts of a kernel's matrix (what flake.lock is to Nix).
// Written by `kbuild toolchains lock` (and by a matrix build that needs a toolchain the lock does
// not have yet, unless --locked); read by every matrix build, which verifies each download against
// it. Format (JSON, 2-space indent, sorted, trailing newline):
//
//   {
//     "version": 1,
//     "python-tag": "cp312",                        // Torch wheels are per-CPython; the headers are not
//     "toolchains": {
//       "cuda-13.2": [ {"package": "nvidia-cuda-nvcc", "version": "13.2.86",
//                       "file": "nvidia_cuda_nvcc-13.2.86-py3-none-manylinux...whl",
//                       "sha256": "<64 hex>"}, ... ],    // nvcc, nvvm, crt, runtime, cccl
//       "torch-2.15": [ {"package": "torch", "version": "2.15.0", "file": "...", "sha256": "..."} ],
//       "cutlass-3.6": [ {"package": "nvidia-cutlass", ...} ],   // build.toml depends = ["cutlass_3_6"]
//       "cutlass-4.0": [ {"package": "cutlass-source", "version": "4.0.0", "file": "cutlass-4.0.0.zip",
//                         "sha256": "...", "url": "https://github.com/NVIDIA/cutlass/archive/..."} ],
//       "tvm-ffi-0.1": [ {"package": "apache-tvm-ffi", ...} ],   // tvm-ffi kernels
//       "gcc-12.2": [ {"package": "g++-12", "version": "12.2.0-14+deb12u1",
//                      "file": "g++-12_12.2.0-14+deb12u1_amd64.deb", "sha256": "...",
//                      "url": "https://deb.debian.org/debian/pool/main/g/gcc-12/..."}, ... ]
//     }
//   }
// Names are <component>-<major.minor> with component torch, cuda, cutlass, tvm-ffi or gcc. gcc-X.Y is
// the pinned host toolchain (host_toolchain.hpp): Debian packages (.deb, each with the URL it was
// resolved to from Debian's package indices, whose SHA256 it carries). Otherwise an artifact
// with "url" is a source archive (.zip) downloaded from that URL rather than a wheel from pip's
// index; its sha256 is the one of the first download (kbuild pins what it got, as `nix-prefetch-url`
// does), and every later download must match it.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/util/result.hpp"

namespace kbuild::toolchain {

struct LockedArtifact {
  std::string package;
  std::string version;
  std::string file;
  std::string sha256;
  std::string url = {};  ///< source archives only: where the file is downloaded from; empty for wheels
  bool operator==(const LockedArtifact&) const = default;
};

struct LockFile {
  std::string python_tag = "cp312";
  /// "torch-2.15" / "cuda-13.2" -> artifacts.
  std::map<std::string, std::vector<LockedArtifact>> toolchains;

  std::string serialize() const;
  static Result<LockFile> parse(std::string_view text, const std::string& file_name);
  const std::vector<LockedArtifact>* find(const std::string& name) const;
  bool operator==(const LockFile&) const = default;
};

/// "torch-2.15", "cuda-13.2".
std::string toolchain_name(const std::string& component, const std::string& major_minor);

/// The pip packages a CUDA toolkit is assembled from.
const std::vector<std::string>& cuda_wheel_packages();

}  // namespace kbuild::toolchain
