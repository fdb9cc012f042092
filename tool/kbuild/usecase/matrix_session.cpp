#include "kbuild/usecase/matrix_session.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "kbuild/config/diagnostic.hpp"
#include "kbuild/config/user_config.hpp"
#include "kbuild/toolchain/host_toolchain.hpp"
#include "kbuild/toolchain/provenance.hpp"
#include "kbuild/util/hash.hpp"

namespace kbuild::usecase {

Result<MatrixSession> open_matrix(const util::FileSystem& fs, const config::KernelConfig& config,
                                  const std::filesystem::path& kernel_dir, const plan::MatrixFilter& filter,
                                  bool locked, const config::DiagnosticSink& sink, bool allow_empty) {
  MatrixSession session;
  session.kernel_dir = kernel_dir;
  session.spec = config::default_matrix();
  auto settings_path = kernel_dir / "kbuild.toml";
  if (fs.stat(settings_path).exists) {
    KB_TRY_ASSIGN(std::string text, util::read_input_file(fs, settings_path, 1u << 20));
    auto outcome = config::parse_kbuild_toml(text, settings_path.string());
    if (sink && !outcome.diagnostics.empty()) sink(outcome.diagnostics);
    if (config::has_errors(outcome.diagnostics))
      return fail(settings_path.string() + " is invalid", "fix the problems listed above", ExitCode::usage);
    if (outcome.matrix) session.spec = *outcome.matrix;
  }
  session.lock_path = kernel_dir / "kbuild.lock";
  if (fs.stat(session.lock_path).exists) {
    KB_TRY_ASSIGN(std::string text, util::read_input_file(fs, session.lock_path, 16u << 20));
    KB_TRY_ASSIGN(session.lock, toolchain::LockFile::parse(text, session.lock_path.string()));
    session.lock_existed = true;
  } else if (locked) {
    return fail("--locked but " + session.lock_path.string() + " does not exist",
                "create it with `kbuild toolchains lock` and commit it", ExitCode::usage);
  }
  session.all = plan::expand_matrix(config, session.spec, &session.notes);
  if (session.all.empty() && allow_empty) return session;
  if (session.all.empty())
    return fail("the kernel's matrix is empty (" + session.spec.origin + ")",
                "check build.toml's backends and version bounds against the matrix", ExitCode::usage);
  KB_TRY_ASSIGN(session.selected, plan::filter_matrix(session.all, filter));
  return session;
}

Result<std::vector<std::string>> matrix_variant_names(const util::FileSystem& fs, const config::KernelConfig& config,
                                                      const std::filesystem::path& kernel_dir) {
  KB_TRY_ASSIGN(MatrixSession session, open_matrix(fs, config, kernel_dir, {}, false, {}, true));
  std::vector<std::string> names;
  for (const auto& entry : session.all) names.push_back(entry.variant.name());
  return names;
}

Result<std::map<std::string, std::filesystem::path>> parse_cuda_toolkits(const std::vector<std::string>& options) {
  std::map<std::string, std::filesystem::path> out;
  for (const auto& option : options) {
    size_t eq = option.find('=');
    auto version = eq == std::string::npos ? std::nullopt : util::Version::parse(option.substr(0, eq));
    if (!version || version->components().size() != 2)
      return fail("--cuda-toolkit " + option + ": expected MAJOR.MINOR=PATH",
                  "e.g. --cuda-toolkit 12.6=/usr/local/cuda-12.6", ExitCode::usage);
    out[version->major_minor()] = option.substr(eq + 1);
  }
  return out;
}

Result<std::vector<plan::VariantBuild>> provision_variants(const std::vector<plan::MatrixEntry>& entries,
                                                           toolchain::Provisioner& provisioner,
                                                           toolchain::Toolchain& base,
                                                           std::deque<toolchain::Toolchain>& storage) {
  KB_TRY_ASSIGN(base.cxx, provisioner.host_compiler());
  provisioner.set_host(base.cxx);
  std::map<std::string, toolchain::TorchInstall> torches;
  std::map<std::string, toolchain::CudaToolkit> cudas;
  std::map<std::string, const toolchain::Toolchain*> combos;
  std::vector<plan::VariantBuild> builds;
  // CUDA first: its wheels are small, so a network or pin problem shows before the big Torch downloads.
  for (const auto& entry : entries) {
    if (!entry.variant.compiled() || !entry.cuda) continue;
    if (!cudas.count(entry.cuda->major_minor())) {
      KB_TRY_ASSIGN(auto cuda, provisioner.cuda(*entry.cuda, base.cuda));
      cudas[entry.cuda->major_minor()] = cuda;
    }
  }
  for (const auto& entry : entries) {
    if (!entry.variant.compiled()) {
      builds.push_back({entry.variant, nullptr});
      continue;
    }
    std::string cuda_key = entry.cuda ? entry.cuda->major_minor() : "";
    const bool needs_torch = entry.variant.traits().torch_toolchain;
    std::string torch_key = needs_torch ? entry.torch.major_minor() : "none";
    if (!needs_torch) {
      torches[torch_key] = base.torch;  // a tvm-ffi variant is compiled without Torch
    } else if (!torches.count(torch_key)) {
      KB_TRY_ASSIGN(auto torch, provisioner.torch(entry.torch));
      torches[torch_key] = torch;
    }
    std::string combo = torch_key + "/" + cuda_key;
    if (!combos.count(combo)) {
      toolchain::Toolchain tc = base;
      tc.torch = torches[torch_key];
      tc.cuda = entry.cuda ? std::optional<toolchain::CudaToolkit>(cudas[cuda_key]) : std::nullopt;
      storage.push_back(std::move(tc));
      combos[combo] = &storage.back();
    }
    config::Variant variant = entry.variant;
    variant.cxx11_abi = combos[combo]->torch.cxx11_abi;
    builds.push_back({variant, combos[combo]});
  }
  return builds;
}

std::set<std::string> provided_header_dependencies(const config::KernelConfig& config,
                                                   const std::vector<plan::MatrixEntry>& entries) {
  std::set<std::string> needed;
  for (const auto& entry : entries) {
    if (!entry.variant.compiled()) continue;
    for (const auto* component : config.components_for(entry.variant.backend))
      for (const auto& dep : component->depends)
        if (dep != "torch" && toolchain::provided_dependency(dep)) needed.insert(dep);
  }
  return needed;
}

bool needs_tvm_ffi(const std::vector<plan::MatrixEntry>& entries) {
  return std::any_of(entries.begin(), entries.end(),
                     [](const plan::MatrixEntry& e) { return e.variant.traits().tvm_ffi_toolchain; });
}

Result<void> pin_matrix_toolchains(const std::vector<plan::MatrixEntry>& entries,
                                   const std::set<std::string>& header_dependencies,
                                   toolchain::Provisioner& provisioner, toolchain::LockFile& lock) {
  // Every Torch and CUDA version of the matrix is pinned, including CUDA versions this machine has,
  // so the lock also serves machines without them.
  std::set<std::string> torch, cuda, headers;
  bool compiled = false;
  for (const auto& entry : entries) {
    if (!entry.variant.compiled()) continue;
    compiled = true;
    if (entry.variant.traits().torch_toolchain) torch.insert(entry.torch.major_minor());
    if (entry.cuda && entry.cuda->major() >= 13) cuda.insert(entry.cuda->major_minor());
  }
  if (compiled) KB_TRY(provisioner.host_artifacts());
  for (const auto& version : torch) KB_TRY(provisioner.artifacts("torch", *util::Version::parse(version)));
  const bool tvm_ffi = needs_tvm_ffi(entries);
  if (tvm_ffi) KB_TRY(provisioner.artifacts("tvm-ffi", toolchain::k_tvm_ffi_series));
  for (const auto& version : cuda) KB_TRY(provisioner.artifacts("cuda", *util::Version::parse(version)));
  for (const auto& dependency : header_dependencies) {
    auto provided = toolchain::provided_dependency(dependency);
    if (!provided) continue;
    KB_TRY(provisioner.artifacts(provided->first, provided->second));
    headers.insert(toolchain::toolchain_name(provided->first, provided->second.major_minor()));
  }
  for (auto it = lock.toolchains.begin(); it != lock.toolchains.end();) {
    std::string version = it->first.substr(it->first.find('-') + 1);
    bool used = it->first.starts_with("torch-")     ? torch.count(version) > 0
                : it->first.starts_with("cuda-")    ? cuda.count(version) > 0
                : it->first.starts_with("cutlass-") ? headers.count(it->first) > 0
                : it->first.starts_with("tvm-ffi-") ? tvm_ffi
                : it->first.starts_with("gcc-")     ? compiled
                                                    : true;
    it = used ? std::next(it) : lock.toolchains.erase(it);
  }
  return {};
}

toolchain::LockFile pins_kept_by_update(const toolchain::LockFile& lock) {
  toolchain::LockFile kept = lock;
  std::erase_if(kept.toolchains, [](const auto& pin) {
    return !std::all_of(pin.second.begin(), pin.second.end(),
                        [](const toolchain::LockedArtifact& artifact) { return artifact.package == "cutlass-source"; });
  });
  return kept;
}

bool toolchains_present(const plan::MatrixEntry& entry, const toolchain::LockFile& lock, const util::CacheLayout& cache,
                        const std::optional<toolchain::CudaToolkit>& system,
                        const std::map<std::string, std::filesystem::path>& user_cuda, const util::FileSystem& fs) {
  if (!entry.variant.compiled()) return true;
  const auto& host = toolchain::bookworm_gcc12_recipe();
  const auto* host_pins = lock.find(host.name);
  if (!host_pins || !toolchain::toolchain_complete(fs, toolchain::host_toolchain_dir(cache, host, *host_pins)))
    return false;
  if (entry.variant.traits().tvm_ffi_toolchain) {
    const auto* tvm_ffi = lock.find(toolchain::toolchain_name("tvm-ffi", toolchain::k_tvm_ffi_series.major_minor()));
    if (!tvm_ffi || !toolchain::toolchain_complete(fs, toolchain::tvm_ffi_toolchain_dir(cache, tvm_ffi->front())))
      return false;
  } else {
    const auto* torch = lock.find(toolchain::toolchain_name("torch", entry.torch.major_minor()));
    if (!torch || !toolchain::toolchain_complete(fs, toolchain::torch_toolchain_dir(cache, torch->front())))
      return false;
  }
  if (!entry.cuda) return true;
  std::string version = entry.cuda->major_minor();
  if (user_cuda.count(version)) return true;
  if (system && system->version.major_minor() == version) return true;
  const auto* cuda = lock.find(toolchain::toolchain_name("cuda", version));
  return cuda && toolchain::toolchain_complete(fs, toolchain::cuda_toolchain_dir(cache, *cuda));
}

Result<void> apply_provenance_settings(toolchain::ProvisionOptions& options, const util::FileSystem& fs,
                                       const util::Environment& env, const std::vector<std::string>& allowed) {
  auto keyring = toolchain::debian_keyring(fs, env);
  if (keyring)
    options.debian_keyring = *keyring;
  else
    options.keyring_problem = keyring.error();
  if (auto simple = env.get("KBUILD_PYPI_SIMPLE"); simple && !simple->empty()) options.pypi_simple = *simple;
  options.allowed_origins = allowed;
  KB_TRY_ASSIGN(config::UserConfig user, config::load_user_config(fs, env));
  options.allowed_origins.insert(options.allowed_origins.end(), user.toolchain_origins.begin(),
                                 user.toolchain_origins.end());
  for (const auto& origin : options.allowed_origins)
    if (!origin.starts_with("https://") && !origin.starts_with("http://"))
      return fail("--allow-toolchain-origin " + origin + " is not an http(s) URL",
                  "e.g. --allow-toolchain-origin https://debian.internal/debian/", ExitCode::usage);
  return {};
}

}  // namespace kbuild::usecase
