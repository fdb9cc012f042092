#include "kbuild/toolchain/toolchain.hpp"

#include "kbuild/util/hash.hpp"

namespace kbuild::toolchain {

std::vector<fs::path> TorchInstall::include_dirs() const {
  return {root / "include", root / "include" / "torch" / "csrc" / "api" / "include"};
}

std::string Toolchain::identity() const {
  util::Hasher hasher;
  hasher.field("toolchain-v1");
  hasher.field(torch.version_string).field(torch.git_version).field(torch.cxx11_abi ? "cxx11" : "cxx98");
  hasher.field(cuda ? cuda->version.str() : "nocuda");
  hasher.field(cxx.version).field(cxx.machine);
  hasher.field(python.version);
  return hasher.finish_hex().substr(0, 16);
}

std::string cxx_standard_for(const util::Version& torch) { return torch >= util::Version({2, 12}) ? "c++20" : "c++17"; }

}  // namespace kbuild::toolchain
