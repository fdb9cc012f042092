#pragma once
// A built variant directory in a MemFileSystem: __init__.py, _ops.py, the library, and a
// metadata.json whose digest covers them, as `kbuild build` writes it.

#include <cstdint>
#include <string>

#include "kbuild/layout/digest.hpp"
#include "kbuild/layout/metadata.hpp"
#include "support/mem_fs.hpp"

namespace kbuild::fakes {

inline void put_variant(MemFileSystem& fs, const std::string& dir, const std::string& unique_id = "abc1234",
                        std::int64_t version = 1, const std::string& library_bytes = "ELF") {
  std::string name = dir.substr(dir.rfind('/') + 1);
  bool cuda = name.find("-cu") != std::string::npos;
  std::string id = std::string("_relu_") + (cuda ? "cuda" : "cpu") + "_" + unique_id;
  fs.put(dir + "/__init__.py", "from ._ops import ops\n");
  fs.put(dir + "/_ops.py", "ops = torch.ops." + id + "\n");
  fs.put(dir + "/" + id + ".abi3.so", library_bytes);
  layout::Metadata metadata;
  metadata.name = "relu";
  metadata.id = id;
  metadata.version = version;
  metadata.license = "Apache-2.0";
  metadata.backend = cuda ? config::Backend::cuda : config::Backend::cpu;
  metadata.digest = *layout::hash_variant_dir(fs, dir);
  fs.put(dir + "/metadata.json", metadata.to_json());
}

}  // namespace kbuild::fakes
