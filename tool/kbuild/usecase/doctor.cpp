#include "kbuild/usecase/doctor.hpp"

#include "kbuild/cache/usage.hpp"
#include "kbuild/config/user_config.hpp"
#include "kbuild/toolchain/gpu.hpp"
#include "kbuild/toolchain/probe.hpp"
#include "kbuild/util/cache_layout.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::usecase {

using Status = Finding::Status;

std::string to_string(Finding::Status status) {
  switch (status) {
    case Status::ok:
      return "ok";
    case Status::warning:
      return "warning";
    case Status::missing:
      return "missing";
  }
  return "missing";
}

namespace {

void python_and_torch(const DoctorRequest& request, Services& services, std::vector<Finding>& out) {
  auto choice = config::choose_python(request.python, services.fs, services.env);
  if (!choice) {
    out.push_back({"python", Status::missing, choice.error().message, choice.error().hint});
    return;
  }
  std::optional<std::filesystem::path> torch_root;
  auto headers = toolchain::probe_python(services.launcher, services.fs, choice->value, torch_root);
  if (!headers) {
    out.push_back({"python", Status::missing, choice->value + " (" + choice->source + "): " + headers.error().message,
                   "pass --python, set KBUILD_PYTHON, or python in ~/.config/kbuild/config.toml"});
    return;
  }
  out.push_back({"python", Status::ok, choice->value + " (" + choice->source + "), Python " + headers->version, ""});
  auto torch = torch_root ? toolchain::read_torch_install(services.fs, *torch_root)
                          : Result<toolchain::TorchInstall>(fail("no torch package"));
  if (!torch) {
    out.push_back({"torch", Status::missing, "not installed for " + choice->value,
                   "pip install torch into that Python (local builds and kbuild test need it; --matrix builds "
                   "fetch their own)"});
    return;
  }
  out.push_back({"torch", Status::ok,
                 torch->version_string + (torch->cuda ? ", CUDA " + torch->cuda->major_minor() : ", CPU only") + ", " +
                     torch->root.string(),
                 ""});
}

void compilers(Services& services, std::vector<Finding>& out) {
  auto cuda = toolchain::probe_cuda(services.launcher, services.fs, services.env.get("CUDA_HOME"));
  if (cuda && *cuda)
    out.push_back({"nvcc", Status::ok, (*cuda)->version.str() + ", " + (*cuda)->nvcc.string(), ""});
  else
    out.push_back({"nvcc", Status::warning,
                   cuda ? "not found (nvcc not on PATH, CUDA_HOME unset)" : cuda.error().message,
                   "CUDA variants are skipped; install the CUDA toolkit or set CUDA_HOME"});
  const std::string cxx = services.env.get_or("CXX", "g++");
  auto host = toolchain::probe_host_compiler(services.launcher, cxx);
  if (host)
    out.push_back(
        {"host compiler", Status::ok, host->cxx.string() + " " + host->version + " (" + host->machine + ")", ""});
  else
    out.push_back({"host compiler", Status::missing, cxx + ": " + host.error().message, "install g++ or set CXX"});
}

void machine(Services& services, const util::CacheLayout& cache, std::vector<Finding>& out) {
  auto gpus = toolchain::detect_gpu_capabilities(services.launcher, services.fs, cache.temp() / "gpus");
  out.push_back(gpus.empty() ? Finding{"gpu", Status::warning, "none found",
                                       "local CUDA builds compile every declared capability; kbuild test cannot "
                                       "run CUDA variants here"}
                             : Finding{"gpu", Status::ok, "compute capability " + util::join(gpus, ", "), ""});
  auto git = services.launcher.find("git");
  out.push_back(git ? Finding{"git", Status::ok, git->string(), ""}
                    : Finding{"git", Status::warning, "not found", "metadata.json records no kernel commit"});
}

}  // namespace

Result<DoctorOutcome> doctor(const DoctorRequest& request, Services& services) {
  std::vector<Finding> out;
  python_and_torch(request, services, out);
  compilers(services, out);
  auto cache = util::CacheLayout::from_environment(services.env);
  machine(services, cache, out);
  auto config_path = config::user_config_path(services.env);
  KB_TRY_ASSIGN(config::UserConfig user, config::load_user_config(services.fs, services.env));
  out.push_back({"user config", Status::ok,
                 user.file.empty() ? "none (" + config_path.string() + ")" : config_path.string(), ""});
  auto usage = cache::cache_usage(services.fs, cache.root);
  out.push_back(
      usage ? Finding{"cache", Status::ok,
                      cache.root.string() + ", " + util::human_size(usage->total_bytes()) + " (kbuild cache stats)", ""}
            : Finding{"cache", Status::warning, cache.root.string() + ": " + usage.error().message, ""});
  return out;
}

}  // namespace kbuild::usecase
