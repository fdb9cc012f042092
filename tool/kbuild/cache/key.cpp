#include "kbuild/cache/key.hpp"

#include <algorithm>
#include <string_view>

#include "kbuild/util/hash.hpp"

namespace kbuild::cache {

std::string normalize_path(const std::string& path, const Roots& roots) {
  for (const auto& [name, root] : roots) {
    std::string prefix = root.string();
    if (prefix.empty()) continue;
    if (prefix.back() != '/') prefix += '/';
    if (path.starts_with(prefix)) return name + "/" + path.substr(prefix.size());
  }
  return path;
}

std::string denormalize_path(const std::string& path, const Roots& roots) {
  for (const auto& [name, root] : roots)
    if (path.starts_with(name + "/")) return (root / path.substr(name.size() + 1)).string();
  return path;
}

namespace {

// `--sysroot=PATH` names the pinned host toolchain's unpacked root, which lies under each machine's
// own cache: only its place relative to a root belongs in the key.
std::string normalize_argument(const std::string& arg, const Roots& roots) {
  constexpr std::string_view sysroot = "--sysroot=";
  if (arg.starts_with(sysroot)) {
    std::string path = arg.substr(sysroot.size());
    std::string normalized = normalize_path(path + "/", roots);  // the root itself normalizes too
    normalized.pop_back();
    return std::string(sysroot) + normalized;
  }
  return normalize_path(arg, roots);
}

}  // namespace

std::vector<std::string> key_arguments(const plan::Job& job) {
  std::vector<std::string> out;
  std::vector<std::string> inputs;
  for (const auto& input : job.inputs) inputs.push_back(input.string());
  const auto argv = job.keyed_argv();
  for (size_t i = 1; i < argv.size(); ++i) {  // argv[0]: the compiler, hashed by identity
    const std::string& arg = argv[i];
    if (arg == "-o" || arg == "-MF" || arg == "-isystem" || arg == "--threads" || arg == "-ccbin") {
      ++i;  // and its value
      continue;
    }
    if (arg == "-MD" || arg == "-c") continue;
    if (arg.starts_with("-I") || arg.starts_with("-L") || arg.starts_with("-ffile-prefix-map=")) continue;
    if (std::find(inputs.begin(), inputs.end(), arg) != inputs.end()) continue;  // source / objects
    if (arg.starts_with("-Xcompiler=")) {
      // Keep host flags, minus the prefix maps inside.
      std::string kept = "-Xcompiler=";
      size_t start = 11;
      bool first = true;
      while (start <= arg.size()) {
        size_t comma = arg.find(',', start);
        std::string part = arg.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (!part.starts_with("-ffile-prefix-map=")) {
          kept += (first ? "" : ",") + normalize_argument(part, job.path_roots);
          first = false;
        }
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      out.push_back(kept);
      continue;
    }
    out.push_back(normalize_argument(arg, job.path_roots));
  }
  return out;
}

std::string manifest_key(const plan::Job& job, const std::string& source_sha256) {
  util::Hasher hasher;
  hasher.field("kbuild-cache-v2").field(plan::to_string(job.kind)).field(job.tool_identity);
  for (const auto& arg : key_arguments(job)) hasher.field(arg);
  hasher.field(source_sha256);
  return hasher.finish_hex();
}

std::string result_key(const std::string& manifest_key, std::vector<std::pair<std::string, std::string>> prerequisites,
                       const std::optional<std::string>& volatile_value) {
  std::sort(prerequisites.begin(), prerequisites.end());
  util::Hasher hasher;
  hasher.field(manifest_key);
  if (volatile_value) hasher.field("volatile-define").field(*volatile_value);
  for (const auto& [path, sha] : prerequisites) hasher.field(path).field(sha);
  return hasher.finish_hex();
}

std::string link_key(const plan::Job& job, const std::vector<std::string>& input_sha256) {
  util::Hasher hasher;
  hasher.field("kbuild-link-v1").field(job.tool_identity);
  for (const auto& arg : key_arguments(job)) hasher.field(arg);
  for (const auto& sha : input_sha256) hasher.field(sha);
  return hasher.finish_hex();
}

}  // namespace kbuild::cache
