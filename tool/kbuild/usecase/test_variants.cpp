#include "kbuild/usecase/test_variants.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <regex>

#include "kbuild/cache/usage.hpp"
#include "kbuild/config/variant.hpp"
#include "kbuild/toolchain/lock.hpp"
#include "kbuild/usecase/freshness.hpp"
#include "kbuild/usecase/kernel_source.hpp"
#include "kbuild/util/cache_layout.hpp"
#include "kbuild/util/hash.hpp"
#include "kbuild/util/interrupt.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::usecase {

namespace fs = std::filesystem;

namespace {

// What a Python's Torch is: "2.15.0+cu130 13.0 3.11" (the CUDA field empty for a CPU build).
// Prints: Torch version, its CUDA version or '-', Python major.minor, tvm_ffi version or '-'.
constexpr const char* k_probe =
    "import sys, torch\n"
    "try:\n    import tvm_ffi; tvm = tvm_ffi.__version__\nexcept Exception:\n    tvm = '-'\n"
    "gpu = int(torch.cuda.is_available())\n"
    "print(torch.__version__, torch.version.cuda or '-', f'{sys.version_info[0]}.{sys.version_info[1]}', tvm, gpu)";

struct PythonTorch {
  fs::path python;
  std::string torch;                   ///< "2.15.0+cu130"
  std::string torch_minor;             ///< "2.15"
  std::optional<std::string> cuda;     ///< "13.0"
  std::string python_version;          ///< "3.11"
  std::optional<std::string> tvm_ffi;  ///< apache-tvm-ffi's version, when installed
  bool gpu = false;                    ///< torch.cuda.is_available()
};

// The release part of a Python package version: "2.9.0.dev20250801+cu130" and "2.6.0a0+ecf3bae" (NGC)
// are 2.9.0 and 2.6.0, "0.1.15.post2" is 0.1.15.
std::optional<util::Version> release_version(const std::string& text) {
  std::string release = text.substr(0, text.find_first_not_of("0123456789."));
  while (!release.empty() && release.back() == '.') release.pop_back();
  return util::Version::parse(release);
}

std::optional<PythonTorch> probe(util::ProcessLauncher& launcher, const fs::path& python) {
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

// What pip installs as Torch for major.minor: the wheel kbuild.lock pins, from the downloads kbuild
// made (verified again), when it fits this Python; else that version from the index; without a pin,
// the newest patch release.
struct TorchSource {
  std::string requirement;  ///< for pip: a wheel's path, or "torch==2.15.0"
  std::string version;      ///< "2.15.0" (names the environment)
};

TorchSource torch_source(const util::FileSystem& fs, const util::Environment& env, const fs::path& kernel_dir,
                         const std::string& minor, const std::string& python_version) {
  auto text = fs.read_file(kernel_dir / "kbuild.lock");
  auto lock = text ? toolchain::LockFile::parse(*text, "kbuild.lock") : Result<toolchain::LockFile>(fail("no lock"));
  const auto* pinned = lock ? lock->find(toolchain::toolchain_name("torch", minor)) : nullptr;
  if (!pinned || pinned->empty()) return {"torch==" + minor + ".*", minor};
  const toolchain::LockedArtifact& wheel = pinned->front();
  std::string tag =
      "cp" + python_version.substr(0, python_version.find('.')) + python_version.substr(python_version.find('.') + 1);
  fs::path downloaded = util::CacheLayout::from_environment(env).downloads() / wheel.sha256 / wheel.file;
  if (wheel.file.find("-" + tag + "-" + tag + "-") != std::string::npos && fs.stat(downloaded).is_file)
    if (auto sha = util::sha256_file_hex(fs, downloaded); sha && *sha == wheel.sha256)
      return {downloaded.string(), wheel.version};
  return {"torch==" + wheel.version, wheel.version};
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

// The environment for `requirement` ("torch==2.15.0"), created when missing.
Result<fs::path> test_environment(const TestRequest& request, Services& services, const PythonTorch& base,
                                  const TorchSource& torch) {
  const std::string& requirement = torch.requirement;
  const fs::path tests_requirements = request.kernel_dir / "tests" / "requirements.txt";
  std::string extra = services.fs.read_file(tests_requirements).value_or("");
  std::string key = util::sha256_hex(requirement + "\n" + base.python_version + "\n" + extra).substr(0, 10);
  const std::string& version = torch.version;
  auto cache = util::CacheLayout::from_environment(services.env);
  fs::path dir = cache.test_envs() / ("torch-" + version + "-py" + base.python_version + "-" + key);
  fs::path python = dir / "bin" / "python";
  if (services.fs.stat(dir / ".complete").is_file) {
    (void)services.fs.touch(dir / ".complete");  // last used, for `kbuild cache prune`
    return python;
  }

  const std::string what = "a test environment for " + requirement + " (Python " + base.python_version + ") in " +
                           dir.string() + " (pip downloads Torch: several GB)";
  if (!request.create_env && !services.reporter.confirm("create " + what + "?"))
    return fail("kbuild test needs " + what,
                "pass --create-env to create it (once; later runs reuse it), or --python with a Python whose Torch "
                "is " +
                    version,
                ExitCode::toolchain);
  services.reporter.info("kbuild: creating " + what);
  KB_TRY(services.fs.make_dirs(cache.test_envs()));
  fs::path staging = util::temp_sibling(dir);
  // Stagings of earlier runs that were killed (SIGKILL, power loss): their processes are gone.
  sweep_dead_stagings(services.fs, dir);
  auto failed = [&](const std::string& what, const util::ProcessResult* result) -> Result<fs::path> {
    (void)services.fs.remove_all(staging);
    std::string output = result ? std::string(util::trim(result->out + result->err)) : "";
    return fail("cannot create the test environment for " + requirement + ": " + what +
                    (output.empty() ? "" : "\n" + output.substr(output.size() > 4000 ? output.size() - 4000 : 0)),
                "check that pip can reach PyPI (or your index) and that the version exists", ExitCode::toolchain);
  };
  util::ProcessOptions quiet;
  quiet.inherit_output = request.pip_progress;
  auto venv = services.launcher.run({base.python.string(), "-m", "venv", staging.string()});
  if (!venv || venv->exit_code != 0) return failed("python -m venv failed", venv ? &*venv : nullptr);
  std::vector<std::string> pip = {(staging / "bin" / "python").string(), "-m",        "pip",     "install",
                                  "--disable-pip-version-check",         requirement, "kernels", "pytest"};
  if (!request.pip_progress) pip.push_back("-q");
  if (!extra.empty()) {
    pip.push_back("-r");
    pip.push_back(tests_requirements.string());
  }
  auto installed = services.launcher.run(pip, quiet);
  if (util::interrupted()) {
    (void)services.fs.remove_all(staging);
    return fail("interrupted while creating the test environment (nothing was kept)", "", ExitCode::interrupted);
  }
  if (!installed || installed->exit_code != 0) return failed("pip install failed", installed ? &*installed : nullptr);
  if (auto marked = services.fs.write_file_atomic(staging / ".complete", requirement + "\n" + extra); !marked) {
    (void)services.fs.remove_all(staging);
    return fail(marked.error());
  }
  if (auto renamed = services.fs.rename(staging, dir); !renamed) {
    (void)services.fs.remove_all(staging);
    if (!services.fs.stat(dir / ".complete").is_file) return fail(renamed.error());  // else: made meanwhile
  }
  if (auto size = util::tree_size(services.fs, dir))
    services.reporter.info("kbuild: created " + dir.string() + " (" + util::human_size(*size) + ")");
  return python;
}

// A variant name's backend as the tests see it.
std::string backend_of(const config::Variant& variant) { return config::to_string(variant.backend); }

}  // namespace

std::string to_string(VariantTestResult::Status status) {
  switch (status) {
    case VariantTestResult::Status::passed:
      return "passed";
    case VariantTestResult::Status::failed:
      return "failed";
    case VariantTestResult::Status::not_tested:
      return "not tested";
  }
  return "failed";
}

TestCounts parse_junit_counts(const std::string& xml) {
  TestCounts counts;
  static const std::regex k_suite(R"(<testsuite\b([^>]*)>)");
  static const std::regex k_attribute(R"re(\b(tests|failures|errors|skipped)="(\d{1,9})")re");
  for (std::sregex_iterator suite(xml.begin(), xml.end(), k_suite), end; suite != end; ++suite) {
    std::string attributes = (*suite)[1];
    for (std::sregex_iterator it(attributes.begin(), attributes.end(), k_attribute); it != end; ++it) {
      int value = std::stoi((*it)[2]);
      std::string name = (*it)[1];
      (name == "tests"      ? counts.tests
       : name == "failures" ? counts.failures
       : name == "errors"   ? counts.errors
                            : counts.skipped) += value;
    }
  }
  return counts;
}

namespace {

// The variants in build/ to test, by name: those of the request, or all.
Result<std::vector<std::pair<std::string, config::Variant>>> select_variants(const TestRequest& request,
                                                                             const util::FileSystem& fs) {
  KB_TRY(require_kernel_dir(fs, request.kernel_dir));
  if (!fs.stat(request.kernel_dir / "tests").is_dir)
    return fail("no tests/ in " + request.kernel_dir.string(), "kbuild test runs the kernel's pytest suite in tests/",
                ExitCode::usage);
  auto entries = fs.list_dir(request.kernel_dir / "build");
  std::map<std::string, config::Variant> built;
  if (entries)
    for (const auto& entry : *entries)
      if (entry.is_dir)
        if (auto variant = config::Variant::parse(entry.name)) built.emplace(entry.name, *variant);
  if (built.empty())
    return fail("build/ in " + request.kernel_dir.string() + " holds no variants", "run kbuild build first",
                ExitCode::usage);
  std::vector<std::pair<std::string, config::Variant>> selected;
  for (const auto& name : request.variants) {
    if (built.count(name)) {
      selected.emplace_back(name, built.at(name));
      continue;
    }
    std::vector<std::string> names;
    for (const auto& entry : built) names.push_back(entry.first);
    return fail("variant " + name + " is not built",
                "build it (kbuild build --variant " + name + ") or choose one of: " + util::join(names, ", "),
                ExitCode::usage);
  }
  if (selected.empty()) selected.assign(built.begin(), built.end());
  return selected;
}

// The --python interpreter and its Torch (none: it still creates the environments).
Result<PythonTorch> base_python(const TestRequest& request, Services& services) {
  if (auto base = probe(services.launcher, request.python)) return *base;
  auto python = services.launcher.find(request.python);
  if (!python)
    return fail("cannot run Python interpreter \"" + request.python + "\"", "pass --python /path/to/python3",
                ExitCode::toolchain);
  auto version = services.launcher.run(
      {python->string(), "-c", "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"});
  if (!version || version->exit_code != 0)
    return fail("\"" + request.python + "\" does not run", "pass --python /path/to/python3", ExitCode::toolchain);
  return PythonTorch{*python, "", "", std::nullopt, std::string(util::trim(version->out)), std::nullopt};
}

// Why `env` cannot load `variant`, if it cannot: a Torch variant needs its Torch version, a stable-ABI
// variant a Torch at least as new as its version, a CUDA variant a Torch built for its CUDA.
std::optional<std::string> unloadable_reason(const config::Variant& variant, const PythonTorch& env) {
  if (!variant.compiled()) return std::nullopt;
  if (variant.traits().tvm_ffi_toolchain) {
    // The loader takes a tvm-ffi variant only for a tvm_ffi of its major.minor.
    auto installed = env.tvm_ffi ? release_version(*env.tvm_ffi) : std::nullopt;
    if (!installed)
      return "apache-tvm-ffi is not installed with " + env.python.string() + " (tvm-ffi variants need tvm_ffi " +
             variant.tvm_ffi.major_minor() + "; add apache-tvm-ffi to tests/requirements.txt or to that Python)";
    if (installed->major_minor() != variant.tvm_ffi.major_minor())
      return "tvm_ffi " + *env.tvm_ffi + " here cannot load a tvm-ffi " + variant.tvm_ffi.major_minor() + " variant";
  }
  auto env_minor = util::Version::parse(env.torch_minor);
  if (variant.traits().loads_with == config::TorchMatch::exact && env.torch_minor != variant.torch.major_minor())
    return "the variant is built for Torch " + variant.torch.major_minor() + "; Torch " + env.torch + " cannot load it";
  if (variant.traits().loads_with == config::TorchMatch::at_least && env_minor && *env_minor < variant.torch)
    return "the variant needs Torch " + variant.torch.major_minor() + " or newer; Torch " + env.torch +
           " cannot load it";
  if (variant.backend != config::Backend::cuda) return std::nullopt;
  auto env_cuda = env.cuda ? util::Version::parse(*env.cuda) : std::nullopt;
  if (!env_cuda || !variant.cuda || env_cuda->major_minor() != variant.cuda->major_minor())
    return "Torch " + env.torch + " here is " +
           (env.cuda ? "built for CUDA " + *env.cuda : std::string("a CPU build")) +
           "; the variant needs one built for CUDA " + (variant.cuda ? variant.cuda->major_minor() : "?");
  // Its tests would pass by skipping every CUDA test: that is not a tested CUDA variant.
  if (!env.gpu) return "no GPU here (torch.cuda.is_available() is False): its CUDA kernels cannot run";
  return std::nullopt;
}

// The test run's environment: what kernel-builder's testshell sets (LOCAL_KERNELS, PYTHONPATH), offline
// unless asked, and kbuild's own variables. `import_dir` holds <python_name> -> the variant.
std::map<std::string, std::string> test_run_environment(const TestRequest& request, const util::Environment& env,
                                                        const std::string& name, const config::Variant& variant,
                                                        const std::string& repo_id, const fs::path& import_dir) {
  const fs::path variant_dir = request.kernel_dir / "build" / name;
  std::string pythonpath = import_dir.string() + ":" + variant_dir.string();
  if (auto inherited = env.get("PYTHONPATH"); inherited && !inherited->empty()) pythonpath += ":" + *inherited;
  std::map<std::string, std::string> vars = {{"KBUILD_TEST_VARIANT", name},
                                             {"KBUILD_TEST_VARIANT_DIR", variant_dir.string()},
                                             {"KBUILD_TEST_BACKEND", backend_of(variant)},
                                             {"PYTHONDONTWRITEBYTECODE", "1"},
                                             {"PYTHONPATH", pythonpath},
                                             {"LOCAL_KERNELS", repo_id + "=" + variant_dir.string()}};
  if (!request.online) vars["HF_HUB_OFFLINE"] = "1";
  return vars;
}

// Runs pytest for one variant with `env` and reads its JUnit report into `result`.
Result<void> run_pytest(const TestRequest& request, Services& services, const config::KernelConfig& config,
                        const std::string& name, const config::Variant& variant, const PythonTorch& env,
                        VariantTestResult& result) {
  auto cache = util::CacheLayout::from_environment(services.env);
  KB_TRY(services.fs.make_dirs(cache.temp()));
  fs::path report = util::temp_sibling(cache.temp() / ("junit-" + name + ".xml"));
  fs::path import_dir = util::temp_sibling(cache.temp() / ("pythonpath-" + name));
  KB_TRY(services.fs.make_dirs(import_dir));
  KB_TRY(services.fs.create_symlink(request.kernel_dir / "build" / name, import_dir / config.general.python_name()));
  util::ProcessOptions options;
  options.cwd = request.kernel_dir;
  options.env = test_run_environment(request, services.env, name, variant,
                                     config.general.hub_repo_id.value_or(config.general.name), import_dir);
  auto start = services.clock.now();
  auto run = services.launcher.run(
      {env.python.string(), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml=" + report.string(), "tests"},
      options);
  result.seconds = services.clock.seconds_since(start);
  (void)services.fs.remove_all(import_dir);
  if (!run) return fail(run.error());
  TestCounts counts = parse_junit_counts(services.fs.read_file(report).value_or(""));
  (void)services.fs.remove_all(report);
  result.tests = counts.tests;
  result.failures = counts.failures;
  result.errors = counts.errors;
  result.skipped = counts.skipped;
  if (run->exit_code == 0 && counts.tests > counts.skipped) {
    result.status = VariantTestResult::Status::passed;
    return {};
  }
  result.status = VariantTestResult::Status::failed;
  result.reason = run->exit_code == 5   ? "pytest collected no tests"
                  : run->exit_code == 0 ? "every test was skipped"
                                        : "pytest exit code " + std::to_string(run->exit_code);
  result.output = run->out + run->err;
  return {};
}

// Refuses variants older than their sources (unless allowed); says which cannot be compared.
Result<void> require_current(const TestRequest& request, Services& services, const config::KernelConfig& config,
                             const std::vector<std::pair<std::string, config::Variant>>& selected) {
  std::vector<std::string> names;
  for (const auto& [name, variant] : selected) names.push_back(name);
  KB_TRY_ASSIGN(auto freshness, variant_freshness(services.fs, request.kernel_dir, config, names));
  for (const auto& entry : freshness) {
    if (entry.state == VariantFreshness::State::unknown)
      services.reporter.warning("build/" + entry.variant + " is not compared with the sources: " + entry.reason);
    else if (entry.state == VariantFreshness::State::stale && request.allow_stale)
      services.reporter.warning("build/" + entry.variant + " is older than the sources (" + entry.reason +
                                "); testing it anyway (--allow-stale)");
  }
  if (request.allow_stale) return {};
  return refuse_stale(freshness, "test", request.kernel_dir);
}

}  // namespace

Result<TestOutcome> test_variants(const TestRequest& request, Services& services) {
  KB_TRY_ASSIGN(auto selected, select_variants(request, services.fs));
  KB_TRY_ASSIGN(config::KernelConfig config, load_kernel(services.fs, request.kernel_dir, {}));
  // The test environments are in the cache: `kbuild cache prune` waits while tests run.
  KB_TRY_ASSIGN(auto in_use,
                cache::hold_cache_in_use(services.fs, util::CacheLayout::from_environment(services.env).root));
  KB_TRY(require_current(request, services, config, selected));
  KB_TRY_ASSIGN(PythonTorch base, base_python(request, services));
  std::map<std::string, PythonTorch> by_minor;  // Torch major.minor -> the Python that has it
  std::vector<VariantTestResult> results;
  for (const auto& [name, variant] : selected) {
    // A stable-ABI variant is tested with the oldest Torch it promises to serve.
    // A tvm-ffi variant needs no particular Torch (its tests may use any).
    const bool own_torch = variant.traits().torch_toolchain;
    std::string minor = !request.torch.empty() ? request.torch
                        : own_torch            ? variant.torch.major_minor()
                                               : base.torch_minor;
    if (!by_minor.count(minor)) {
      if (!minor.empty() && minor == base.torch_minor) {
        by_minor[minor] = base;
      } else {
        TorchSource torch =
            minor.empty() ? TorchSource{"torch", "latest"}
                          : torch_source(services.fs, services.env, request.kernel_dir, minor, base.python_version);
        KB_TRY_ASSIGN(fs::path python, test_environment(request, services, base, torch));
        auto env = probe(services.launcher, python);
        if (!env)
          return fail(
              "the test environment at " + python.parent_path().parent_path().string() + " has no working Torch",
              "delete it; kbuild test creates it again", ExitCode::toolchain);
        by_minor[minor] = *env;
      }
    }
    const PythonTorch& env = by_minor.at(minor);
    VariantTestResult result;
    result.variant = name;
    result.torch = env.torch;
    result.python = env.python;
    if (auto reason = unloadable_reason(variant, env))
      result.reason = *reason;
    else
      KB_TRY(run_pytest(request, services, config, name, variant, env, result));
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace kbuild::usecase
