#include "kbuild/layout/install.hpp"

#include <algorithm>

namespace kbuild::layout {

std::vector<std::string> select_python_files(const std::vector<std::string>& package_files,
                                             const std::vector<std::string>& pyext, bool noarch) {
  std::vector<std::string> out;
  for (const auto& rel : package_files) {
    if (!is_digested(rel)) continue;  // bytecode and __pycache__
    size_t dot = rel.rfind('.');
    size_t slash = rel.rfind('/');
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) {
      if (noarch) out.push_back(rel);
      continue;
    }
    std::string ext = rel.substr(dot + 1);
    if (noarch) {
      out.push_back(rel);
    } else if (ext == "py" || (ext != "pyi" && std::find(pyext.begin(), pyext.end(), ext) != pyext.end())) {
      out.push_back(rel);
    }
  }
  return out;
}

FileSet variant_files(const InstallSpec& spec) {
  FileSet set;
  for (const auto& rel : spec.python_files) set.add_file(rel, spec.package_dir / rel);
  set.add_bytes("_ops.py", spec.ops_py);
  if (spec.library) set.add_file(spec.metadata.id + ".abi3.so", *spec.library);
  return set;
}

Result<void> install_variant(util::FileSystem& fs, const InstallSpec& spec) {
  FileSet set = variant_files(spec);
  fs::path staging = util::temp_sibling(spec.variant_dir);
  KB_TRY(fs.make_dirs(staging));
  auto cleanup_on_error = [&](Error error) -> Result<void> {
    (void)fs.remove_all(staging);
    return fail(std::move(error));
  };
  Digest digest;
  for (const auto& [rel, entry] : set.files) {
    std::string bytes;
    bool executable = false;
    if (entry.bytes) {
      bytes = *entry.bytes;
    } else {
      auto content = fs.read_file(*entry.source);
      if (!content) return cleanup_on_error(content.error());
      bytes = std::move(*content);
      executable = rel.ends_with(".so");
    }
    digest[rel] = digest_value(bytes);
    if (auto written = fs.write_file_atomic(staging / rel, bytes, executable); !written)
      return cleanup_on_error(written.error());
  }
  Metadata metadata = spec.metadata;
  metadata.digest = std::move(digest);
  if (auto written = fs.write_file_atomic(staging / "metadata.json", metadata.to_json()); !written)
    return cleanup_on_error(written.error());

  // Swap: old tree aside, new tree in, old tree removed.
  fs::path old = util::temp_sibling(spec.variant_dir);
  bool had_old = fs.stat(spec.variant_dir).exists;
  if (had_old)
    if (auto moved = fs.rename(spec.variant_dir, old); !moved) return cleanup_on_error(moved.error());
  if (auto moved = fs.rename(staging, spec.variant_dir); !moved) {
    if (had_old) (void)fs.rename(old, spec.variant_dir);
    return cleanup_on_error(moved.error());
  }
  if (had_old) KB_TRY(fs.remove_all(old));
  return {};
}

}  // namespace kbuild::layout
