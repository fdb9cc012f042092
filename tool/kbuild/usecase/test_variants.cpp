#include "kbuild/usecase/test_variants.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <regex>

#include "kbuild/cache/usage.hpp"
#include "kbuild/config/variant.hpp"
#include "kbuild/layout/templates.hpp"
#include "kbuild/toolchain/lock.hpp"
#include "kbuild/usecase/freshness.hpp"
#include "kbuild/usecase/kernel_source.hpp"
#include "kbuild/usecase/test_envs.hpp"
#include "kbuild/util/cache_layout.hpp"
#include "kbuild/util/hash.hpp"
#include "kbuild/util/interrupt.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::usecase {

namespace fs = std::filesystem;

namespace {

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
    case VariantTestResult::Status::loaded:
      return "loaded";
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
    std::string suggestion = util::closest_match(name, names);
    return fail("variant " + name + " is not built",
                (suggestion.empty() ? "" : "did you mean " + suggestion + "? ") + "build it (kbuild build --variant " +
                    name + ") or choose one of: " + util::join(names, ", "),
                ExitCode::usage);
  }
  if (selected.empty()) selected.assign(built.begin(), built.end());
  return selected;
}

// The --python interpreter and its Torch (none: it still creates the environments).
Result<PythonTorch> base_python(const TestRequest& request, Services& services) {
  if (auto base = probe_python(services.launcher, request.python)) return *base;
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

constexpr std::string_view k_no_gpu = "no GPU here (torch.cuda.is_available() is False): its CUDA kernels cannot run";

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
  if (!env.gpu) return std::string(k_no_gpu);
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

}  // namespace

std::vector<std::string> pytest_arguments(const TestRequest& request, const std::string& junit_report,
                                          const std::function<bool(const std::string&)>& exists) {
  std::vector<std::string> args = {"-p", "no:cacheprovider", "--junitxml=" + junit_report};
  if (!request.pytest_progress) args.push_back("-q");
  bool names_a_path = false;
  for (const auto& arg : request.pytest_args) {
    args.push_back(arg);
    names_a_path = names_a_path || (!arg.starts_with("-") && exists(arg.substr(0, arg.find("::"))));
  }
  if (!names_a_path) args.push_back("tests");
  return args;
}

namespace {

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
  options.inherit_output = request.pytest_progress;
  std::vector<std::string> argv = {env.python.string(), "-m", "pytest"};
  for (auto& arg : pytest_arguments(request, report.string(), [&](const std::string& path) {
         return services.fs.stat(request.kernel_dir / path).exists;
       }))
    argv.push_back(std::move(arg));
  services.reporter.info("testing " + name + " with Torch " + env.torch + ": " + util::shell_join(argv));
  auto start = services.clock.now();
  auto run = services.launcher.run(argv, options);
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

// A variant whose tests cannot run here (no GPU) imported with `env`'s Torch, its ops checked for a
// kernel of its device (templates/checks/load_variant.py).
Result<void> load_variant(const TestRequest& request, Services& services, const config::KernelConfig& config,
                          const std::string& name, const PythonTorch& env, VariantTestResult& result) {
  auto script = layout::find_template("checks/load_variant.py");
  if (!script) return fail("internal error: the load check is not embedded");
  auto cache = util::CacheLayout::from_environment(services.env);
  fs::path import_dir = util::temp_sibling(cache.temp() / ("pythonpath-" + name));
  KB_TRY(services.fs.make_dirs(import_dir));
  KB_TRY(services.fs.create_symlink(request.kernel_dir / "build" / name, import_dir / config.general.python_name()));
  util::ProcessOptions options;
  options.env = {{"PYTHONPATH", import_dir.string()}, {"PYTHONDONTWRITEBYTECODE", "1"}, {"HF_HUB_OFFLINE", "1"}};
  auto run = services.launcher.run(
      {env.python.string(), "-c", std::string(*script), config.general.python_name(), "CUDA"}, options);
  (void)services.fs.remove_all(import_dir);
  if (!run) return fail(run.error());
  std::string out(util::trim(run->out + (run->exit_code == 0 ? "" : run->err)));
  if (run->exit_code != 0) {
    result.status = VariantTestResult::Status::failed;
    result.reason = "it does not load: " + out.substr(0, out.find('\n'));
    result.output = out;
    return {};
  }
  auto ops = util::split(out, ' ');
  ops.erase(ops.begin());  // the namespace
  result.status = VariantTestResult::Status::loaded;
  result.reason = "no GPU here, its tests were not run; it loads with Torch " + env.torch +
                  " and has a CUDA kernel for every op (" + util::join(ops, ", ") + ")";
  return {};
}

// The Python whose Torch serves `wanted`: the base one, or a test environment (made once per build).
Result<TestEnvironment> python_for(const TestRequest& request, Services& services, const PythonTorch& base,
                                   const TorchWanted& wanted, std::map<std::string, TestEnvironment>& made) {
  if (serves(base, wanted)) return TestEnvironment{base, ""};
  const std::string key = wanted.minor + "/" + wanted.compute;
  if (auto found = made.find(key); found != made.end()) return found->second;
  TestEnvRequest env_request{request.kernel_dir, request.torch_index, request.create_env, request.pip_progress};
  KB_TRY_ASSIGN(TestEnvironment env, torch_environment(env_request, services, base, wanted));
  made[key] = env;
  return env;
}

}  // namespace

Result<TestOutcome> test_variants(const TestRequest& request, Services& services) {
  KB_TRY_ASSIGN(auto selected, select_variants(request, services.fs));
  KB_TRY_ASSIGN(config::KernelConfig config, load_kernel(services.fs, request.kernel_dir, {}));
  // The test environments are in the cache: `kbuild cache prune` waits while tests run.
  KB_TRY_ASSIGN(cache::CacheHold in_use,
                cache::hold_cache_in_use(services.fs, util::CacheLayout::from_environment(services.env).root));
  KB_TRY(require_current(request, services, config, selected));
  KB_TRY_ASSIGN(PythonTorch base, base_python(request, services));
  std::map<std::string, TestEnvironment> made;  // "minor/compute" -> its environment
  std::vector<VariantTestResult> results;
  for (const auto& [name, variant] : selected) {
    // A stable-ABI variant is tested with the oldest Torch it promises to serve.
    // A tvm-ffi variant needs no particular Torch (its tests may use any).
    const bool own_torch = variant.traits().torch_toolchain;
    std::string minor = !request.torch.empty() ? request.torch
                        : own_torch            ? variant.torch.major_minor()
                                               : base.torch_minor;
    KB_TRY_ASSIGN(TestEnvironment found, python_for(request, services, base, torch_wanted(variant, minor), made));
    VariantTestResult result;
    result.variant = name;
    if (!found.env) {
      result.reason = found.unavailable;
      results.push_back(std::move(result));
      continue;
    }
    const PythonTorch& env = *found.env;
    result.torch = env.torch;
    result.python = env.python;
    auto reason = unloadable_reason(variant, env);
    if (reason && *reason == k_no_gpu && request.best_effort && variant.traits().torch_toolchain)
      KB_TRY(load_variant(request, services, config, name, env, result));
    else if (reason)
      result.reason = *reason;
    else
      KB_TRY(run_pytest(request, services, config, name, variant, env, result));
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace kbuild::usecase
