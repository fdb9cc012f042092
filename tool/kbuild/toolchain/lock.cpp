#include "kbuild/toolchain/lock.hpp"

#include <nlohmann/json.hpp>

#include <regex>

namespace kbuild::toolchain {

std::string toolchain_name(const std::string& component, const std::string& major_minor) {
  return component + "-" + major_minor;
}

const std::vector<std::string>& cuda_wheel_packages() {
  static const std::vector<std::string> packages = {"nvidia-cuda-nvcc", "nvidia-nvvm", "nvidia-cuda-crt",
                                                    "nvidia-cuda-runtime", "nvidia-cuda-cccl"};
  return packages;
}

// Deterministic bytes (std::map sorts the names, ordered_json keeps the key order): the lock is committed,
// so re-locking the same pins must leave no diff. "url" is written only for source archives; its absence
// is what marks a wheel.
std::string LockFile::serialize() const {
  nlohmann::ordered_json j;
  j["version"] = 1;
  j["python-tag"] = python_tag;
  j["toolchains"] = nlohmann::ordered_json::object();
  for (const auto& [name, artifacts] : toolchains) {
    auto& list = j["toolchains"][name] = nlohmann::ordered_json::array();
    for (const auto& a : artifacts) {
      list.push_back({{"package", a.package}, {"version", a.version}, {"file", a.file}, {"sha256", a.sha256}});
      if (!a.url.empty()) list.back()["url"] = a.url;
    }
  }
  return j.dump(2) + "\n";
}

// Strict, as the lock decides what gets downloaded: only version 1, only known toolchain kinds, lowercase
// hex sha256 (to_hex's form, compared as a string), http(s) URLs. `file` becomes a path component under
// downloads/<sha256>/, so it may hold no '/' and may not start with '.' or '-'.
Result<LockFile> LockFile::parse(std::string_view text, const std::string& file_name) {
  auto bad = [&](const std::string& why) {
    return fail(file_name + ": " + why, "regenerate it with `kbuild toolchains lock`", ExitCode::usage);
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    return bad(std::string("not valid JSON (") + e.what() + ")");
  }
  if (!j.is_object() || j.value("version", 0) != 1) return bad("unsupported lock file version");
  static const std::regex k_name(R"(^(torch|cuda|cutlass|tvm-ffi|gcc)-\d+\.\d+$)");
  static const std::regex k_sha(R"(^[0-9a-f]{64}$)");
  static const std::regex k_file(R"(^[A-Za-z0-9_+][A-Za-z0-9._+~-]*$)");
  static const std::regex k_url(R"(^https?://[^\s]+$)");
  LockFile lock;
  lock.python_tag = j.value("python-tag", "cp312");
  if (!j.contains("toolchains") || !j["toolchains"].is_object()) return bad("missing \"toolchains\"");
  for (const auto& [name, list] : j["toolchains"].items()) {
    if (!std::regex_match(name, k_name)) return bad("unknown toolchain \"" + name + "\"");
    if (!list.is_array() || list.empty()) return bad("toolchain \"" + name + "\" has no artifacts");
    auto& artifacts = lock.toolchains[name];
    for (const auto& entry : list) {
      LockedArtifact a;
      try {
        a.package = entry.at("package");
        a.version = entry.at("version");
        a.file = entry.at("file");
        a.sha256 = entry.at("sha256");
        if (entry.contains("url")) a.url = entry.at("url");
      } catch (const std::exception&) {
        return bad("an artifact of \"" + name + "\" lacks package, version, file or sha256, or one is not a string");
      }
      if (!std::regex_match(a.sha256, k_sha)) return bad("bad sha256 for " + a.file);
      const bool gcc = name.starts_with("gcc-");
      const bool known_kind =
          a.url.empty() ? !gcc && a.file.ends_with(".whl") : a.file.ends_with(gcc ? ".deb" : ".zip");
      if (!std::regex_match(a.file, k_file) || !known_kind) return bad("bad file name " + a.file);
      if (!a.url.empty() && !std::regex_match(a.url, k_url)) return bad("bad url for " + a.file + ": " + a.url);
      artifacts.push_back(std::move(a));
    }
  }
  return lock;
}

const std::vector<LockedArtifact>* LockFile::find(const std::string& name) const {
  auto it = toolchains.find(name);
  return it == toolchains.end() ? nullptr : &it->second;
}

}  // namespace kbuild::toolchain
