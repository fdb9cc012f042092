#include "kbuild/usecase/test_envs.hpp"

#include "kbuild/toolchain/lock.hpp"
#include "kbuild/util/cache_layout.hpp"
#include "kbuild/util/hash.hpp"
#include "kbuild/util/interrupt.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::usecase {

namespace fs = std::filesystem;

namespace {

// Prints: Torch version, its CUDA version or '-', Python major.minor, tvm_ffi version or '-', GPU 0/1.
constexpr const char* k_probe =
    "import sys, torch\n"
    "try:\n    import tvm_ffi; tvm = tvm_ffi.__version__\nexcept Exception:\n    tvm = '-'\n"
    "gpu = int(torch.cuda.is_available())\n"
    "print(torch.__version__, torch.version.cuda or '-', f'{sys.version_info[0]}.{sys.version_info[1]}', tvm, gpu)";

// Where pip installs Torch from for one environment, and how the environment is named.
struct TorchSource {
  std::vector<std::string> pip_args;  ///< e.g. {"--index-url", URL, "torch==2.15.0"}, or a wheel's path
  std::string version;                ///< "2.15.0", "2.15" or "latest" (names the environment)
  std::string build;                  ///< "cpu", "cu130" or "pypi" (names the environment)
  std::string index;                  ///< the index URL, for messages ("PyPI" for pypi)
};

// The wheel kbuild.lock pins for Torch `minor`, if any.
const toolchain::LockedArtifact* pinned_torch(const util::FileSystem& fs, const fs::path& kernel_dir,
                                              const std::string& minor, std::optional<toolchain::LockFile>& lock) {
  auto text = fs.read_file(kernel_dir / "kbuild.lock");
  auto parsed = text ? toolchain::LockFile::parse(*text, "kbuild.lock") : Result<toolchain::LockFile>(fail("no lock"));
  if (!parsed) return nullptr;
  lock = std::move(*parsed);
  const auto* pinned = lock->find(toolchain::toolchain_name("torch", minor));
  return pinned && !pinned->empty() ? &pinned->front() : nullptr;
}

TorchSource torch_source(const util::FileSystem& fs, const util::Environment& env, const TestEnvRequest& request,
                         const TorchWanted& wanted, const std::string& python_version) {
  if (wanted.minor.empty()) return {{"torch"}, "latest", "pypi", "PyPI"};
  std::optional<toolchain::LockFile> lock;
  const toolchain::LockedArtifact* wheel = pinned_torch(fs, request.kernel_dir, wanted.minor, lock);
  const std::string version = wheel ? wheel->version : wanted.minor;
  const std::string requirement = "torch==" + (wheel ? wheel->version : wanted.minor + ".*");
  if (request.torch_index != "pypi") {
    std::string url = util::replace_all(request.torch_index, "{compute}", wanted.compute);
    return {{"--index-url", url, requirement}, version, wanted.compute, url};
  }
  // PyPI's build: the pinned wheel from kbuild's downloads (verified again) when it fits this Python.
  if (wheel) {
    std::string tag = "cp" + util::replace_all(python_version, ".", "");
    fs::path downloaded = util::CacheLayout::from_environment(env).downloads() / wheel->sha256 / wheel->file;
    if (wheel->file.find("-" + tag + "-" + tag + "-") != std::string::npos && fs.stat(downloaded).is_file)
      if (auto sha = util::sha256_file_hex(fs, downloaded); sha && *sha == wheel->sha256)
        return {{downloaded.string()}, version, "pypi", "PyPI"};
  }
  return {{requirement}, version, "pypi", "PyPI"};
}

// Removes ".<dir name>.tmp<pid>-..." siblings of `dir` whose process no longer runs (util::temp_sibling
// names them so).
void sweep_dead_stagings(util::FileSystem& fs, const fs::path& dir) {
  auto entries = fs.list_dir(dir.parent_path());
  if (!entries) return;
  const std::string prefix = "." + dir.filename().string() + ".tmp";
  for (const auto& entry : *entries) {
    if (!entry.name.starts_with(prefix)) continue;
    std::string digits = entry.name.substr(prefix.size(), entry.name.find('-', prefix.size()) - prefix.size());
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    if (!util::process_alive(std::stoi(digits))) (void)fs.remove_all(dir.parent_path() / entry.name);
  }
}

// pip's verdict that the index has no such distribution, as opposed to an index it could not read.
bool no_such_distribution(const std::string& output) {
  const bool missing = output.find("No matching distribution found") != std::string::npos;
  for (const char* unreachable : {"NewConnectionError", "Failed to establish", "ProxyError", "SSLError",
                                  "ConnectTimeout", "ReadTimeout", "Could not fetch URL", "HTTP error"})
    if (output.find(unreachable) != std::string::npos) return false;
  return missing;
}

std::string tail_of(const util::ProcessResult* result) {
  std::string output = result ? std::string(util::trim(result->out + result->err)) : "";
  return output.substr(output.size() > 4000 ? output.size() - 4000 : 0);
}

// venv + pip into `staging`; an empty string when done, else why the index has no such Torch.
Result<std::string> install_environment(const TestEnvRequest& request, Services& services, const PythonTorch& base,
                                        const TorchSource& torch, const fs::path& staging, bool with_requirements) {
  auto failed = [&](const std::string& what, const util::ProcessResult* result) -> Result<std::string> {
    std::string output = tail_of(result);
    return fail("cannot create the test environment for Torch " + torch.version + " (" + torch.build + "): " + what +
                    (output.empty() ? "" : "\n" + output),
                "check that pip can reach " + torch.index +
                    " (set the Torch index with --torch-index, $KBUILD_TORCH_INDEX or torch-index in the user "
                    "config; \"pypi\" for PyPI's own builds)",
                ExitCode::toolchain);
  };
  auto venv = services.launcher.run({base.python.string(), "-m", "venv", staging.string()});
  if (!venv || venv->exit_code != 0) return failed("python -m venv failed", venv ? &*venv : nullptr);
  util::ProcessOptions quiet;
  quiet.inherit_output = request.pip_progress;
  const std::vector<std::string> pip = {(staging / "bin" / "python").string(), "-m", "pip", "install",
                                        "--disable-pip-version-check"};
  auto torch_step = pip;
  torch_step.insert(torch_step.end(), torch.pip_args.begin(), torch.pip_args.end());
  if (!request.pip_progress) torch_step.push_back("-q");
  auto installed = services.launcher.run(torch_step, quiet);
  if (util::interrupted()) return std::string();
  if (installed && installed->exit_code != 0 && no_such_distribution(installed->out + installed->err))
    return "no Torch " + torch.version + " (" + torch.build + ") at " + torch.index;
  if (!installed || installed->exit_code != 0) return failed("pip install failed", installed ? &*installed : nullptr);
  auto rest = pip;
  rest.insert(rest.end(), {"kernels", "pytest"});
  if (!request.pip_progress) rest.push_back("-q");
  if (with_requirements) rest.insert(rest.end(), {"-r", (request.kernel_dir / "tests" / "requirements.txt").string()});
  installed = services.launcher.run(rest, quiet);
  if (util::interrupted()) return std::string();
  if (!installed || installed->exit_code != 0) return failed("pip install failed", installed ? &*installed : nullptr);
  return std::string();
}

}  // namespace

std::optional<util::Version> release_version(const std::string& text) {
  std::string release = text.substr(0, text.find_first_not_of("0123456789."));
  while (!release.empty() && release.back() == '.') release.pop_back();
  return util::Version::parse(release);
}

std::optional<PythonTorch> probe_python(util::ProcessLauncher& launcher, const fs::path& python) {
  auto result = launcher.run({python.string(), "-c", k_probe});
  if (!result || result->exit_code != 0) return std::nullopt;
  auto fields = util::split(std::string(util::trim(result->out)), ' ');
  if (fields.size() != 5) return std::nullopt;
  auto version = release_version(fields[0]);
  if (!version) return std::nullopt;
  PythonTorch found{python, fields[0], version->major_minor(), std::nullopt, fields[2], std::nullopt, fields[4] == "1"};
  if (fields[1] != "-") found.cuda = fields[1];
  if (fields[3] != "-") found.tvm_ffi = fields[3];
  return found;
}

TorchWanted torch_wanted(const config::Variant& variant, const std::string& minor) {
  if (variant.backend == config::Backend::cuda && variant.cuda)
    return {minor, "cu" + config::flatten_version(*variant.cuda)};
  return {minor, "cpu"};
}

bool serves(const PythonTorch& env, const TorchWanted& wanted) {
  if (env.torch.empty() || (!wanted.minor.empty() && env.torch_minor != wanted.minor)) return false;
  if (wanted.compute == "cpu") return true;
  auto cuda = env.cuda ? util::Version::parse(*env.cuda) : std::nullopt;
  return cuda && "cu" + config::flatten_version(*cuda) == wanted.compute;
}

Result<TestEnvironment> torch_environment(const TestEnvRequest& request, Services& services, const PythonTorch& base,
                                          const TorchWanted& wanted) {
  const fs::path tests_requirements = request.kernel_dir / "tests" / "requirements.txt";
  const std::string extra = services.fs.read_file(tests_requirements).value_or("");
  const TorchSource torch = torch_source(services.fs, services.env, request, wanted, base.python_version);
  const std::string recipe = util::join(torch.pip_args, " ");
  const std::string key = util::sha256_hex(recipe + "\n" + base.python_version + "\n" + extra).substr(0, 10);
  auto cache = util::CacheLayout::from_environment(services.env);
  const fs::path dir =
      cache.test_envs() / ("torch-" + torch.version + "-" + torch.build + "-py" + base.python_version + "-" + key);
  const fs::path python = dir / "bin" / "python";
  auto probed = [&]() -> Result<TestEnvironment> {
    auto env = probe_python(services.launcher, python);
    if (!env)
      return fail("the test environment at " + dir.string() + " has no working Torch",
                  "delete it; kbuild test creates it again", ExitCode::toolchain);
    return TestEnvironment{*env, ""};
  };
  if (services.fs.stat(dir / ".complete").is_file) {
    (void)services.fs.touch(dir / ".complete");  // last used, for `kbuild cache prune`
    return probed();
  }
  const std::string what = "a test environment for Torch " + torch.version + " (" + torch.build + ", from " +
                           torch.index + "; Python " + base.python_version + ") in " + dir.string() +
                           " (pip downloads Torch: up to several GB)";
  if (!request.create_env && !services.reporter.confirm("create " + what + "?"))
    return fail("kbuild test needs " + what,
                "pass --create-env to create it (once; later runs reuse it), or --python with a Python whose Torch "
                "is " +
                    torch.version,
                ExitCode::toolchain);
  services.reporter.info("kbuild: creating " + what);
  KB_TRY(services.fs.make_dirs(cache.test_envs()));
  const fs::path staging = util::temp_sibling(dir);
  sweep_dead_stagings(services.fs, dir);  // of earlier runs that were killed (SIGKILL, power loss)
  auto made = install_environment(request, services, base, torch, staging, !extra.empty());
  if (util::interrupted()) {
    (void)services.fs.remove_all(staging);
    return fail("interrupted while creating the test environment (nothing was kept)", "", ExitCode::interrupted);
  }
  if (!made || !made->empty()) {
    (void)services.fs.remove_all(staging);
    if (!made) return fail(made.error());
    return TestEnvironment{std::nullopt, *made};
  }
  if (auto marked = services.fs.write_file_atomic(staging / ".complete", recipe + "\n" + extra); !marked) {
    (void)services.fs.remove_all(staging);
    return fail(marked.error());
  }
  if (auto renamed = services.fs.rename(staging, dir); !renamed) {
    (void)services.fs.remove_all(staging);
    if (!services.fs.stat(dir / ".complete").is_file) return fail(renamed.error());  // else: made meanwhile
  }
  if (auto size = util::tree_size(services.fs, dir))
    services.reporter.info("kbuild: created " + dir.string() + " (" + util::human_size(*size) + ")");
  return probed();
}

}  // namespace kbuild::usecase
