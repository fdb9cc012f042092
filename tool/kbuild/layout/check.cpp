#include "kbuild/layout/check.hpp"

#include <cctype>
#include <map>
#include <regex>

#include "kbuild/config/variant.hpp"
#include "kbuild/layout/digest.hpp"
#include "kbuild/layout/install.hpp"
#include "kbuild/layout/metadata.hpp"
#include "kbuild/layout/signature.hpp"
#include "kbuild/util/version.hpp"

namespace kbuild::layout {

namespace {

// Maximum symbol versions per library family (PyPA's auditwheel policy for manylinux_2_28).
const std::map<std::string, std::map<std::string, std::string>> k_policies = {
    {"manylinux_2_28",
     {{"GLIBC", "2.28"},
      {"GLIBCXX", "3.4.24"},
      {"CXXABI", "1.3.11"},
      {"GCC", "7.0.0"},
      {"LIBATOMIC", "1.2"},
      {"ZLIB", "1.2.9"}}},
};

// Libraries a kernel may link: Torch, the CUDA runtime, and the C/C++ runtime.
bool allowed_library(const std::string& name) {
  static const std::regex k_allowed(
      R"(^(libc10(_cuda)?\.so|libtorch(_cpu|_cuda|_python)?\.so|libcudart\.so\.\d+|libcuda\.so\.1|)"
      R"(libc\.so\.6|libm\.so\.6|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libgomp\.so\.1|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|)"
      R"(ld-linux-x86-64\.so\.2|ld-linux-aarch64\.so\.1)$)");
  return std::regex_match(name, k_allowed);
}

// Private CPython symbols that are nevertheless part of the stable ABI.
bool stable_private_symbol(const std::string& name) {
  static const char* k_names[] = {"_Py_Dealloc",
                                  "_Py_NoneStruct",
                                  "_Py_TrueStruct",
                                  "_Py_FalseStruct",
                                  "_Py_NotImplementedStruct",
                                  "_Py_EllipsisObject",
                                  "_Py_IncRef",
                                  "_Py_DecRef",
                                  "_PyArg_ParseTuple_SizeT",
                                  "_PyArg_Parse_SizeT",
                                  "_Py_BuildValue_SizeT",
                                  "_PyArg_ParseTupleAndKeywords_SizeT",
                                  "_PyArg_VaParse_SizeT",
                                  "_Py_VaBuildValue_SizeT",
                                  "_PyObject_CallFunction_SizeT",
                                  "_PyObject_CallMethod_SizeT"};
  for (const char* n : k_names)
    if (name == n) return true;
  return false;
}

// The first two names of the scope of a mangled C++ symbol ("_ZN3c105ErrorD2Ev" -> {"c10", "Error"};
// typeinfo, vtables and function templates included), or {} when it has none.
std::vector<std::string> mangled_scope(const std::string& symbol) {
  std::vector<std::string> names;
  size_t at = 2;  // after "_Z"
  if (symbol.compare(at, 1, "T") == 0 && at + 1 < symbol.size() &&
      std::string("IVST").find(symbol[at + 1]) != std::string::npos)
    at += 2;  // typeinfo, vtable, typeinfo name, VTT
  if (at >= symbol.size() || symbol[at] != 'N') return names;
  ++at;
  while (at < symbol.size() && (symbol[at] == 'K' || symbol[at] == 'V' || symbol[at] == 'r')) ++at;
  while (names.size() < 2 && at < symbol.size() && std::isdigit(static_cast<unsigned char>(symbol[at]))) {
    size_t length = 0;
    while (at < symbol.size() && std::isdigit(static_cast<unsigned char>(symbol[at])))
      length = length * 10 + static_cast<size_t>(symbol[at++] - '0');
    if (length == 0 || at + length > symbol.size()) break;
    names.push_back(symbol.substr(at, length));
    at += length;
  }
  return names;
}

// kernel-abi-check's Torch stable-ABI rule: an undefined C++ symbol of Torch (c10, at, torch, and
// caffe2's TypeMeta) outside torch::stable ties the library to one Torch build. Which aoti_torch_*
// shim functions exist in the targeted version is settled at compile time: TORCH_TARGET_VERSION
// hides newer ones in Torch's headers.
void check_stable_abi(const ElfInfo& elf, const std::string& where, const util::Version& stable_abi,
                      std::vector<CheckIssue>& issues) {
  for (const auto& symbol : elf.dynamic_symbols) {
    if (symbol.defined || !symbol.name.starts_with("_Z")) continue;
    auto scope = mangled_scope(symbol.name);
    if (scope.empty()) continue;
    bool torch = scope[0] == "c10" || scope[0] == "at" || scope[0] == "torch" || scope[0] == "caffe2";
    bool stable = scope[0] == "torch" && scope.size() > 1 && scope[1] == "stable";
    if (!torch || stable || issues.size() >= 1000) continue;
    issues.push_back({true, where,
                      "uses " + demangle(symbol.name) + ", which is not in Torch's stable ABI (torch-stable-abi" +
                          config::flatten_version(stable_abi) +
                          " variants must load with any Torch >= " + stable_abi.str() + ")",
                      CheckIssue::Rule::stable_abi, symbol.name});
  }
}

}  // namespace

bool is_known_manylinux_policy(const std::string& policy) { return policy == "none" || k_policies.count(policy); }

std::vector<CheckIssue> check_library(const ElfInfo& elf, const std::string& where, const std::string& ops_id,
                                      const std::string& expected_machine, const CheckOptions& options) {
  std::vector<CheckIssue> issues;
  auto error = [&](std::string message) {
    issues.push_back({true, where, std::move(message), CheckIssue::Rule::other, ""});
  };
  if (!elf.shared_object) error("not a shared object");
  if (elf.machine != expected_machine) error("built for " + elf.machine + ", the variant says " + expected_machine);
  bool exports_entry = false;
  for (const auto& symbol : elf.dynamic_symbols)
    if (symbol.defined && symbol.global && symbol.function &&
        (options.tvm_ffi ? symbol.name.starts_with("__tvm_ffi_") : symbol.name == "PyInit_" + ops_id))
      exports_entry = true;
  if (!exports_entry)
    error(options.tvm_ffi ? "exports no tvm-ffi function (__tvm_ffi_*; TVM_FFI_DLL_EXPORT_TYPED_FUNC defines them)"
                          : "does not export PyInit_" + ops_id + " (the loader imports it as module " + ops_id + ")");
  for (const auto& library : elf.needed)
    if (!allowed_library(library) && !(options.tvm_ffi && library == "libtvm_ffi.so"))
      error("links " + library + "; kernels may only link Torch, the CUDA runtime and the C/C++ runtime");
  for (const auto& symbol : elf.dynamic_symbols)
    if (symbol.defined && (symbol.name == "__cxa_throw" || symbol.name == "__gxx_personality_v0"))
      error("contains its own copy of the C++ runtime (" + symbol.name +
            "); exceptions crossing into Torch would crash. Link libstdc++ dynamically");
  for (const auto& symbol : elf.dynamic_symbols)
    if (!symbol.defined && symbol.name == "_Unwind_RaiseException")
      error(
          "raises exceptions through a statically linked C++ runtime (_Unwind_RaiseException is referenced); "
          "link libstdc++ dynamically");
  if (elf.rpath) error("has an RPATH (" + *elf.rpath + "); Torch loads its libraries before the kernel");
  if (elf.runpath) error("has a RUNPATH (" + *elf.runpath + "); Torch loads its libraries before the kernel");
  for (const auto& symbol : elf.dynamic_symbols) {
    if (symbol.defined) continue;
    if (options.tvm_ffi && (symbol.name.starts_with("Py") || symbol.name.starts_with("_Py")))
      error("uses " + symbol.name + "; a tvm-ffi library is loaded by tvm_ffi, not by Python, and must not use Python");
    else if (symbol.name.starts_with("_Py") && !stable_private_symbol(symbol.name))
      error("uses " + symbol.name + ", which is not in the Python 3.9 limited API (abi3)");
  }
  if (options.manylinux != "none") {
    const auto& policy = k_policies.at(options.manylinux);
    std::map<std::string, std::string> worst;  // family -> highest version beyond the policy
    for (const auto& symbol : elf.dynamic_symbols) {
      if (symbol.defined || symbol.version.empty()) continue;
      size_t underscore = symbol.version.find('_');
      if (underscore == std::string::npos) continue;
      std::string family = symbol.version.substr(0, underscore);
      auto limit = policy.find(family);
      auto version = util::Version::parse(symbol.version.substr(underscore + 1));
      if (limit == policy.end() || !version) continue;
      if (*version > *util::Version::parse(limit->second)) {
        auto& current = worst[family];
        if (current.empty() || *version > *util::Version::parse(current))
          current = symbol.version.substr(underscore + 1);
        if (current == symbol.version.substr(underscore + 1) && issues.size() < 1000)
          issues.push_back({true, where,
                            "needs " + symbol.name + "@" + symbol.version + ", newer than " + options.manylinux +
                                " allows (" + family + " <= " + limit->second + ")",
                            CheckIssue::Rule::symbol_version, symbol.name});
      }
    }
  }
  if (options.torch_stable_abi) check_stable_abi(elf, where, *options.torch_stable_abi, issues);
  return issues;
}

std::vector<CheckIssue> check_variant(const util::FileSystem& fs, const std::filesystem::path& variant_dir,
                                      const CheckOptions& options) {
  std::vector<CheckIssue> issues;
  const std::string name = variant_dir.filename().string();
  auto error = [&](std::string where, std::string message) {
    issues.push_back({true, std::move(where), std::move(message), CheckIssue::Rule::other, ""});
  };
  auto variant = config::Variant::parse(name);
  if (!variant) error(name, "is not a variant name kbuild produces; the kernels loader may ignore it");

  auto files = util::list_files_recursive(fs, variant_dir);
  if (!files) {
    error(name, files.error().message);
    return issues;
  }
  for (const auto& rel : *files)
    if (!is_digested(rel) && rel != "metadata.json" && rel != "metadata.json.sigstore")
      error(name + "/" + rel, "bytecode must not be shipped");
  auto text = fs.read_file(variant_dir / "metadata.json");
  if (!text) {
    error(name, "metadata.json is missing");
    return issues;
  }
  auto metadata = Metadata::parse(*text);
  if (!metadata) {
    error(name + "/metadata.json", metadata.error().message);
    return issues;
  }
  if (!fs.stat(variant_dir / "__init__.py").is_file) error(name, "__init__.py is missing");
  if (!fs.stat(variant_dir / "_ops.py").is_file) error(name, "_ops.py is missing");
  static const std::regex k_identifier(R"(^[A-Za-z_][A-Za-z0-9_]*$)");
  if (!std::regex_match(metadata->id, k_identifier))
    error(name + "/metadata.json", "id \"" + metadata->id + "\" is not a Python identifier");
  if (variant && variant->backend != metadata->backend)
    error(name + "/metadata.json", "backend.type is " + config::to_string(metadata->backend) +
                                       " but the variant name says " + config::to_string(variant->backend));

  if (auto signature = signature_status(fs, variant_dir); signature.state == SignatureStatus::State::invalid)
    error(name + "/metadata.json.sigstore", signature.detail);
  if (!metadata->digest) {
    issues.push_back(
        {false, name + "/metadata.json", "has no digest; kbuild build always writes one", CheckIssue::Rule::other, ""});
  } else if (auto actual = hash_variant_dir(fs, variant_dir)) {
    for (const auto& [path, value] : *metadata->digest) {
      auto it = actual->find(path);
      if (it == actual->end())
        error(name + "/" + path, "is listed in the digest but missing");
      else if (it->second != value)
        error(name + "/" + path, "does not match its digest (modified after the build?)");
    }
    for (const auto& [path, value] : *actual)
      if (!metadata->digest->count(path)) error(name + "/" + path, "is not listed in the digest");
  }

  if (variant && variant->compiled()) {
    CheckOptions library_options = options;
    if (variant->traits().stable_abi_gate) library_options.torch_stable_abi = variant->torch;
    library_options.tvm_ffi = variant->traits().tvm_ffi_toolchain;
    std::string library = library_file_name(*variant, metadata->id);
    auto image = fs.read_file(variant_dir / library);
    if (!image) {
      error(name, library + " is missing");
    } else if (auto elf = read_elf(*image); !elf) {
      error(name + "/" + library, elf.error().message);
    } else {
      auto found = check_library(*elf, name + "/" + library, metadata->id, variant->cpu, library_options);
      issues.insert(issues.end(), found.begin(), found.end());
    }
  }
  return issues;
}

}  // namespace kbuild::layout
