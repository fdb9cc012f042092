#include "kbuild/layout/digest.hpp"

#include "kbuild/util/hash.hpp"

namespace kbuild::layout {

bool is_digested(std::string_view relpath) {
  if (relpath == "metadata.json" || relpath == "metadata.json.sigstore") return false;
  if (relpath.ends_with(".pyc")) return false;
  size_t start = 0;
  while (start <= relpath.size()) {
    size_t slash = relpath.find('/', start);
    std::string_view part = relpath.substr(start, slash == std::string_view::npos ? slash : slash - start);
    if (part == "__pycache__") return false;
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return true;
}

std::string digest_value(std::string_view content) {
  return util::base64_encode(util::Hasher().update(content).finish_raw());
}

Result<Digest> hash_variant_dir(const util::FileSystem& fs, const std::filesystem::path& variant_dir) {
  KB_TRY_ASSIGN(auto files, util::list_files_recursive(fs, variant_dir));
  Digest digest;
  for (const auto& rel : files) {
    if (!is_digested(rel)) continue;
    KB_TRY_ASSIGN(auto content, fs.read_file(variant_dir / rel));
    digest[rel] = digest_value(content);
  }
  return digest;
}

}  // namespace kbuild::layout
