#include "kbuild/layout/install.hpp"

#include <algorithm>

#include "kbuild/layout/elf.hpp"
#include "kbuild/util/strings.hpp"

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

std::string library_file_name(const config::Variant& variant, const std::string& ops_id) {
  return ops_id + std::string(variant.traits().library_suffix);
}

FileSet variant_files(const InstallSpec& spec) {
  FileSet set;
  for (const auto& rel : spec.python_files) set.add_file(rel, spec.package_dir / rel);
  set.add_bytes("_ops.py", spec.ops_py);
  if (spec.library) set.add_file(spec.library_name, *spec.library);
  return set;
}

namespace {

// "img2gray_cpu/img2gray_cpu.cpp" for <work>/<variant>/obj/img2gray_cpu/img2gray_cpu.cpp.o.
std::string source_of_object(const fs::path& object, const fs::path& obj_dir) {
  std::string rel = object.lexically_relative(obj_dir).generic_string();
  if (rel.empty() || rel.starts_with("..")) rel = object.filename().string();
  return rel.ends_with(".o") ? rel.substr(0, rel.size() - 2) : rel;
}

}  // namespace

Result<void> gate_library(const util::FileSystem& fs, const fs::path& library, const std::string& ops_id,
                          const std::string& variant, const LibraryGate& gate) {
  KB_TRY_ASSIGN(std::string image, fs.read_file(library));
  auto elf = read_elf(image);
  if (!elf) return fail("the linked library of " + variant + " is not a readable ELF file: " + elf.error().message);
  std::vector<CheckIssue> issues = check_library(*elf, variant, ops_id, gate.machine, gate.options);
  if (std::none_of(issues.begin(), issues.end(), [](const CheckIssue& i) { return i.error; })) return {};
  std::map<std::string, std::vector<std::string>> users;  // symbol -> sources referencing it
  for (const auto& issue : issues)
    if (!issue.symbol.empty()) users[issue.symbol];
  if (!users.empty())
    for (const auto& object : gate.objects)
      if (auto bytes = fs.read_file(object))
        if (auto names = undefined_symbols_of_object(*bytes))
          for (const auto& name : *names)
            if (auto it = users.find(name); it != users.end())
              it->second.push_back(source_of_object(object, gate.work_dir / variant / "obj"));
  std::string message = variant + ": the linked library fails the ABI check; nothing was installed";
  for (const auto& issue : issues) {
    if (!issue.error) continue;
    message += "\n  " + issue.message;
    if (auto it = users.find(issue.symbol); it != users.end()) {
      if (issue.rule == CheckIssue::Rule::symbol_version && demangle(issue.symbol) != issue.symbol)
        message += "\n    that is " + demangle(issue.symbol);
      if (!it->second.empty()) message += "\n    used by " + util::join(it->second, ", ");
    }
  }
  auto any = [&](CheckIssue::Rule rule) {
    return std::any_of(issues.begin(), issues.end(), [&](const CheckIssue& i) { return i.error && i.rule == rule; });
  };
  // The hint is part of the message: a failed job prints its message only.
  std::string hint =
      any(CheckIssue::Rule::stable_abi)
          ? "a stable-ABI variant is loaded by every Torch from " + gate.options.torch_stable_abi->str() +
                " on, so it may only use Torch through its stable API (torch/csrc/stable/, torch/headeronly/, "
                "the aoti_torch_* C shim): port the sources named, or drop torch.stable-abi from build.toml to "
                "build one variant per Torch version"
      : any(CheckIssue::Rule::symbol_version)
          ? "the kernels loader and kernel-abi-check reject libraries that need a newer C or C++ runtime than " +
                gate.options.manylinux +
                " allows: avoid those library features in the sources named (kbuild links newer libstdc++ symbols "
                "privately where that is safe, docs/build-toml.md \"Newer libstdc++ symbols\"; C library symbols "
                "never); --manylinux none skips this check for local use"
          : "see docs/cli.md, kbuild check, for each rule";
  return fail(message + "\n  hint: " + hint, "", ExitCode::failure);
}

Result<void> install_variant(util::FileSystem& fs, const InstallSpec& spec) {
  if (spec.library && spec.gate)
    KB_TRY(gate_library(fs, *spec.library, spec.metadata.id, spec.variant_dir.filename().string(), *spec.gate));
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
