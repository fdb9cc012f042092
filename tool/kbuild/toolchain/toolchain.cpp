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
  if (cxx.pinned()) {  // a system compiler of the same version is another build of it
    hasher.field(cxx.origin);
    for (const auto& pin : cxx.pins) hasher.field(pin);
  }
  hasher.field(python.version);
  return hasher.finish_hex().substr(0, 16);
}

std::vector<std::string> HostCompiler::driver_flags() const {
  if (!pinned()) return {};
  return {"--sysroot=" + sysroot.string()};
}

std::map<std::string, std::string> HostCompiler::environment() const {
  if (tool_library_dir.empty()) return {};
  return {{"LD_LIBRARY_PATH", tool_library_dir.string()}};
}

std::string HostCompiler::binutil(const std::string& name) const {
  if (!pinned()) return name;
  return (sysroot / "usr" / "bin" / (machine + "-" + name)).string();
}

std::string cxx_standard_for(const util::Version& torch) { return torch >= util::Version({2, 12}) ? "c++20" : "c++17"; }

}  // namespace kbuild::toolchain
