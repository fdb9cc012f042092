#include "kbuild/toolchain/probe.hpp"

#include <nlohmann/json.hpp>

#include <regex>

#include "kbuild/util/hash.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::toolchain {

using nlohmann::json;

namespace {

constexpr const char* k_python_probe = R"(import importlib.util, json, sys, sysconfig
spec = importlib.util.find_spec("torch")
loc = list(spec.submodule_search_locations) if spec and spec.submodule_search_locations else []
print(json.dumps({"version": "%d.%d" % sys.version_info[:2], "include": sysconfig.get_paths()["include"], "torch": loc[0] if loc else None,
                  "multiarch": sysconfig.get_config_var("MULTIARCH") or ""}))
)";

Error toolchain_error(std::string message, std::string hint) {
  return Error{ExitCode::toolchain, std::move(message), std::move(hint)};
}

// See PythonHeaders::multiarch_header. The redirect is followed only where pyconfig.h names it.
Result<void> read_multiarch_pyconfig(const util::FileSystem& fs, const std::string& multiarch, PythonHeaders& headers) {
  if (multiarch.empty() || multiarch.find('/') != std::string::npos || multiarch.starts_with(".")) return {};
  std::string relative = multiarch + "/python" + headers.version + "/pyconfig.h";
  auto redirect = fs.read_file(headers.include_dir / "pyconfig.h");
  if (!redirect || redirect->find("<" + relative + ">") == std::string::npos) return {};
  std::filesystem::path target = headers.include_dir.parent_path() / relative;
  auto text = fs.read_file(target);
  if (!text)
    return fail(toolchain_error((headers.include_dir / "pyconfig.h").string() + " includes <" + relative +
                                    ">, which is not at " + target.string(),
                                "install the Python development headers of this architecture (e.g. apt install "
                                "python3-dev)"));
  headers.multiarch_header = relative;
  headers.multiarch_pyconfig = std::move(*text);
  return {};
}

}  // namespace

const char* python_probe_script() { return k_python_probe; }

bool parse_torch_version_py(const std::string& text, TorchInstall& out) {
  static const std::regex k_version(R"(__version__\s*=\s*'([^']+)')");
  static const std::regex k_cuda(R"((?:^|\n)cuda(?::\s*Optional\[str\])?\s*=\s*'([^']+)')");
  static const std::regex k_git(R"(git_version\s*=\s*'([^']+)')");
  std::smatch match;
  if (!std::regex_search(text, match, k_version)) return false;
  out.version_string = match[1];
  std::string numeric = out.version_string.substr(0, out.version_string.find_first_of("+ab"));
  auto version = util::Version::parse(numeric);
  if (!version) return false;
  out.version = *version;
  if (std::regex_search(text, match, k_cuda)) out.cuda = util::Version::parse(match[1].str());
  if (std::regex_search(text, match, k_git)) out.git_version = match[1];
  return true;
}

std::optional<util::Version> parse_nvcc_version(const std::string& output) {
  static const std::regex k_release(R"(release [0-9.]+, V([0-9.]+))");
  std::smatch match;
  if (!std::regex_search(output, match, k_release)) return std::nullopt;
  return util::Version::parse(match[1].str());
}

Result<TorchInstall> read_torch_install(const util::FileSystem& fs, const std::filesystem::path& torch_root) {
  auto text = fs.read_file(torch_root / "version.py");
  if (!text)
    return fail(toolchain_error("no Torch installation at " + torch_root.string() + " (version.py missing)",
                                "install torch into the Python environment, or pass --python"));
  TorchInstall torch;
  torch.root = torch_root;
  if (!parse_torch_version_py(*text, torch))
    return fail(toolchain_error("cannot read the Torch version from " + (torch_root / "version.py").string(), ""));
  if (!fs.stat(torch_root / "include" / "torch" / "library.h").is_file)
    return fail(toolchain_error("the Torch at " + torch_root.string() + " has no C++ headers",
                                "kbuild needs a Torch wheel with include/ (the PyPI wheels have it)"));
  // The C++ ABI: libc10 exports std::__cxx11 symbols only when built with _GLIBCXX_USE_CXX11_ABI=1.
  auto c10 = fs.read_file(torch_root / "lib" / "libc10.so");
  if (!c10) return fail(toolchain_error("the Torch at " + torch_root.string() + " has no lib/libc10.so", ""));
  torch.cxx11_abi = c10->find("St7__cxx11") != std::string::npos;
  if (auto config = fs.read_file(torch_root / "include" / "ATen" / "Config.h"))
    torch.openmp = config->find("#define AT_PARALLEL_OPENMP 1") != std::string::npos;
  return torch;
}

Result<PythonHeaders> probe_python(util::ProcessLauncher& launcher, const util::FileSystem& fs,
                                   const std::string& python, std::optional<std::filesystem::path>& torch_root) {
  auto result = launcher.run({python, "-c", k_python_probe});
  if (!result)
    return fail(toolchain_error("cannot run Python interpreter \"" + python + "\"",
                                "pass --python /path/to/python3 (an environment with torch installed)"));
  if (result->exit_code != 0)
    return fail(toolchain_error("\"" + python + "\" failed while probing: " + std::string(util::trim(result->err)),
                                "pass --python with a working Python 3 interpreter"));
  json info;
  try {
    info = json::parse(result->out);
  } catch (const std::exception&) {
    return fail(toolchain_error("unexpected output from \"" + python + "\": " + result->out, ""));
  }
  PythonHeaders headers;
  headers.include_dir = info.value("include", "");
  headers.version = info.value("version", "");
  if (!fs.stat(headers.include_dir / "Python.h").is_file)
    return fail(toolchain_error("Python.h not found in " + headers.include_dir.string(),
                                "install the Python development headers (e.g. apt install python3-dev)"));
  KB_TRY(read_multiarch_pyconfig(fs, info.value("multiarch", ""), headers));
  torch_root.reset();
  if (!info["torch"].is_null()) torch_root = info["torch"].get<std::string>();
  return headers;
}

Result<TorchInstall> probe_torch_from_python(util::ProcessLauncher& launcher, const util::FileSystem& fs,
                                             const std::string& python, PythonHeaders& headers_out) {
  std::optional<std::filesystem::path> torch_root;
  KB_TRY_ASSIGN(headers_out, probe_python(launcher, fs, python, torch_root));
  if (!torch_root)
    return fail(toolchain_error("torch is not installed for \"" + python + "\"",
                                "pip install torch, activate the environment that has it, or pass --python"));
  KB_TRY_ASSIGN(TorchInstall torch, read_torch_install(fs, *torch_root));
  torch.origin = "python:" + python;
  return torch;
}

Result<CudaToolkit> identify_cuda(util::ProcessLauncher& launcher, const util::FileSystem& fs,
                                  const std::filesystem::path& root, std::string origin) {
  CudaToolkit cuda;
  cuda.root = root;
  cuda.nvcc = root / "bin" / "nvcc";
  cuda.origin = std::move(origin);
  if (!fs.stat(cuda.nvcc).is_file)
    return fail(toolchain_error("no nvcc in " + (root / "bin").string(), "set CUDA_HOME to a CUDA toolkit"));
  auto result = launcher.run({cuda.nvcc.string(), "--version"});
  if (!result || result->exit_code != 0)
    return fail(toolchain_error("cannot run " + cuda.nvcc.string() + " --version", ""));
  auto version = parse_nvcc_version(result->out);
  if (!version) return fail(toolchain_error("cannot read the CUDA version from nvcc --version", result->out));
  cuda.version = *version;
  for (const char* include : {"include", "targets/x86_64-linux/include"}) {
    if (fs.stat(root / include / "cuda_runtime_api.h").is_file) {
      cuda.include_dir = root / include;
      break;
    }
  }
  for (const char* lib : {"lib64", "lib", "targets/x86_64-linux/lib"}) {
    if (fs.stat(root / lib / "libcudart.so").exists) {
      cuda.lib_dir = root / lib;
      break;
    }
  }
  if (cuda.include_dir.empty() || cuda.lib_dir.empty())
    return fail(toolchain_error("the CUDA toolkit at " + root.string() + " lacks the runtime headers or libcudart.so",
                                "install the CUDA runtime development files"));
  return cuda;
}

Result<std::optional<CudaToolkit>> probe_cuda(util::ProcessLauncher& launcher, const util::FileSystem& fs,
                                              const std::optional<std::string>& cuda_home) {
  std::filesystem::path root;
  if (cuda_home && !cuda_home->empty()) {
    root = *cuda_home;
  } else {
    auto nvcc = launcher.find("nvcc");
    if (!nvcc) return std::optional<CudaToolkit>();
    std::error_code ec;
    auto resolved = std::filesystem::canonical(*nvcc, ec);
    root = (ec ? *nvcc : resolved).parent_path().parent_path();
  }
  KB_TRY_ASSIGN(CudaToolkit cuda, identify_cuda(launcher, fs, root, "system"));
  return std::optional<CudaToolkit>(std::move(cuda));
}

Result<HostCompiler> probe_host_compiler(util::ProcessLauncher& launcher, const std::string& cxx) {
  auto path = launcher.find(cxx);
  if (!path) return fail(toolchain_error("C++ compiler \"" + cxx + "\" not found", "install g++ or set CXX"));
  auto version = launcher.run({path->string(), "-dumpfullversion"});
  auto machine = launcher.run({path->string(), "-dumpmachine"});
  if (!version || !machine || version->exit_code != 0 || machine->exit_code != 0)
    return fail(toolchain_error("cannot run " + path->string(), "install g++ or set CXX"));
  return HostCompiler{*path, std::string(util::trim(version->out)), std::string(util::trim(machine->out))};
}

namespace {

json to_json(const Toolchain& t) {
  json j;
  j["torch"] = {{"version", t.torch.version_string},
                {"git", t.torch.git_version},
                {"root", t.torch.root},
                {"cxx11", t.torch.cxx11_abi},
                {"openmp", t.torch.openmp},
                {"cuda", t.torch.cuda ? t.torch.cuda->str() : ""},
                {"origin", t.torch.origin}};
  if (t.cuda)
    j["cuda"] = {{"version", t.cuda->version.str()}, {"root", t.cuda->root},   {"nvcc", t.cuda->nvcc},
                 {"include", t.cuda->include_dir},   {"lib", t.cuda->lib_dir}, {"origin", t.cuda->origin}};
  j["cxx"] = {{"path", t.cxx.cxx}, {"version", t.cxx.version}, {"machine", t.cxx.machine}};
  j["python"] = {{"include", t.python.include_dir}, {"version", t.python.version}};
  if (!t.python.multiarch_header.empty()) {
    j["python"]["multiarch-header"] = t.python.multiarch_header;
    j["python"]["multiarch-pyconfig"] = t.python.multiarch_pyconfig;
  }
  return j;
}

std::optional<Toolchain> from_json(const json& j) {
  try {
    Toolchain t;
    const auto& torch = j.at("torch");
    t.torch.version_string = torch.at("version");
    if (!t.torch.version_string.empty())
      t.torch.version =
          *util::Version::parse(t.torch.version_string.substr(0, t.torch.version_string.find_first_of("+ab")));
    t.torch.git_version = torch.at("git");
    t.torch.root = torch.at("root").get<std::string>();
    t.torch.cxx11_abi = torch.at("cxx11");
    t.torch.openmp = torch.value("openmp", false);
    if (auto cuda = torch.at("cuda").get<std::string>(); !cuda.empty()) t.torch.cuda = util::Version::parse(cuda);
    t.torch.origin = torch.at("origin");
    if (j.contains("cuda")) {
      const auto& c = j.at("cuda");
      CudaToolkit cuda;
      cuda.version = *util::Version::parse(c.at("version").get<std::string>());
      cuda.root = c.at("root").get<std::string>();
      cuda.nvcc = c.at("nvcc").get<std::string>();
      cuda.include_dir = c.at("include").get<std::string>();
      cuda.lib_dir = c.at("lib").get<std::string>();
      cuda.origin = c.at("origin");
      t.cuda = cuda;
    }
    t.cxx.cxx = j.at("cxx").at("path").get<std::string>();
    t.cxx.version = j.at("cxx").at("version");
    t.cxx.machine = j.at("cxx").at("machine");
    t.python.include_dir = j.at("python").at("include").get<std::string>();
    t.python.version = j.at("python").at("version");
    t.python.multiarch_header = j.at("python").value("multiarch-header", "");
    t.python.multiarch_pyconfig = j.at("python").value("multiarch-pyconfig", "");
    return t;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Files whose change invalidates a memoised probe.
std::vector<std::filesystem::path> consulted_files(const Toolchain& t) {
  std::vector<std::filesystem::path> files = {t.python.include_dir / "patchlevel.h"};
  if (!t.python.multiarch_header.empty())
    files.push_back(t.python.include_dir.parent_path() / t.python.multiarch_header);
  if (!t.cxx.cxx.empty()) files.push_back(t.cxx.cxx);
  if (!t.torch.root.empty()) {
    files.push_back(t.torch.root / "version.py");
    files.push_back(t.torch.root / "lib" / "libc10.so");
  }
  if (t.cuda) files.push_back(t.cuda->nvcc);
  return files;
}

std::string memo_key(const util::ProcessLauncher& launcher, const ProbeOptions& options) {
  util::Hasher hasher;
  hasher.field("probe-v4").field(options.python).field(options.cuda_home.value_or("")).field(options.cxx);
  hasher.field(options.need_torch ? "torch" : "no-torch").field(options.need_cxx ? "cxx" : "no-cxx");
  // Which programs PATH resolves to is part of the key: switching environments re-probes.
  for (const auto& program : {options.python, std::string("nvcc"), options.need_cxx ? options.cxx : "-"}) {
    auto found = launcher.find(program);
    std::error_code ec;
    hasher.field(found ? std::filesystem::weakly_canonical(*found, ec).string() : "-");
  }
  return hasher.finish_hex();
}

}  // namespace

Result<Toolchain> probe_local_toolchain(util::ProcessLauncher& launcher, util::FileSystem& fs,
                                        const ProbeOptions& options) {
  std::string key = options.memo_file.empty() ? "" : memo_key(launcher, options);
  if (!options.memo_file.empty()) {
    if (auto text = fs.read_file(options.memo_file)) {
      try {
        json memo = json::parse(*text);
        if (memo.at("key") == key) {
          bool fresh = true;
          for (const auto& entry : memo.at("files")) {
            util::FileStat st = fs.stat(entry.at("path").get<std::string>());
            if (!st.exists || st.mtime_ns != entry.at("mtime").get<std::int64_t>() ||
                st.size != entry.at("size").get<std::uint64_t>()) {
              fresh = false;
              break;
            }
          }
          if (fresh)
            if (auto toolchain = from_json(memo.at("toolchain"))) {
              if (!options.need_cuda || toolchain->cuda) return *toolchain;
            }
        }
      } catch (const std::exception&) {
        // A damaged memo is simply ignored and rewritten.
      }
    }
  }
  Toolchain toolchain;
  if (options.need_torch) {
    KB_TRY_ASSIGN(toolchain.torch, probe_torch_from_python(launcher, fs, options.python, toolchain.python));
  } else {
    std::optional<std::filesystem::path> ignored;
    KB_TRY_ASSIGN(toolchain.python, probe_python(launcher, fs, options.python, ignored));
  }
  KB_TRY_ASSIGN(toolchain.cuda, probe_cuda(launcher, fs, options.cuda_home));
  if (options.need_cuda && !toolchain.cuda)
    return fail(
        toolchain_error("no CUDA toolkit found (nvcc is not on PATH and CUDA_HOME is not set)",
                        "install the CUDA toolkit, set CUDA_HOME, or build only the cpu backend with --backend cpu"));
  if (options.need_cxx) {
    KB_TRY_ASSIGN(toolchain.cxx, probe_host_compiler(launcher, options.cxx));
  }
  if (!options.memo_file.empty()) {
    json memo;
    memo["key"] = key;
    memo["files"] = json::array();
    for (const auto& file : consulted_files(toolchain)) {
      util::FileStat st = fs.stat(file);
      memo["files"].push_back({{"path", file.string()}, {"mtime", st.mtime_ns}, {"size", st.size}});
    }
    memo["toolchain"] = to_json(toolchain);
    (void)fs.write_file_atomic(options.memo_file, memo.dump(1) + "\n");  // best effort
  }
  return toolchain;
}

}  // namespace kbuild::toolchain
