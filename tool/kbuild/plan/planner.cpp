#include "kbuild/plan/planner.hpp"

#include <algorithm>
#include <set>

#include "kbuild/layout/install.hpp"
#include "kbuild/layout/templates.hpp"
#include "kbuild/plan/cuda_archs.hpp"
#include "kbuild/util/hash.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::plan {

std::string ops_id(const std::string& python_name, config::Backend backend, const std::string& unique_id) {
  return "_" + python_name + "_" + config::to_string(backend) + "_" + unique_id;
}

std::optional<JobKind> compile_kind(const std::string& path) {
  for (const char* ext : {".cpp", ".cc", ".cxx", ".c"})
    if (path.ends_with(ext)) return JobKind::compile_cxx;
  if (path.ends_with(".cu")) return JobKind::compile_cuda;
  return std::nullopt;
}

namespace {

bool component_enabled(const config::KernelComponent& component, const toolchain::Toolchain* toolchain) {
  if (component.backend != config::Backend::cuda || !component.cuda_minver) return true;
  return toolchain && toolchain->cuda && toolchain->cuda->version >= *component.cuda_minver;
}

std::vector<const config::KernelComponent*> enabled_components(const config::KernelConfig& config,
                                                               config::Backend backend,
                                                               const toolchain::Toolchain* toolchain) {
  std::vector<const config::KernelComponent*> out;
  for (const auto* component : config.components_for(backend))
    if (component_enabled(*component, toolchain)) out.push_back(component);
  return out;
}

std::string hash_key(std::initializer_list<std::string_view> fields) {
  util::Hasher hasher;
  for (auto field : fields) hasher.field(field);
  return hasher.finish_hex();
}

// Flags shared by every translation unit of a variant, for g++ (host) and nvcc.
struct VariantFlags {
  std::vector<std::string> defines;
  std::vector<std::string> system_includes;
  std::vector<std::string> prefix_maps;  // -ffile-prefix-map=... for reproducible objects
};

VariantFlags variant_flags(const PlanRequest& request, const Variant& variant, const toolchain::Toolchain& tc,
                           const std::string& ops) {
  VariantFlags flags;
  flags.defines = {"-DNDEBUG", std::string("-D_GLIBCXX_USE_CXX11_ABI=") + (tc.torch.cxx11_abi ? "1" : "0"),
                   "-DTORCH_EXTENSION_NAME=" + ops, "-DPy_LIMITED_API=0x03090000"};
  if (variant.backend == config::Backend::cuda) {
    flags.defines.push_back("-DCUDA_KERNEL");
    flags.defines.push_back("-DUSE_CUDA=1");
  } else {
    flags.defines.push_back("-DCPU_KERNEL");
  }
  for (const auto& dir : tc.torch.include_dirs()) flags.system_includes.push_back(dir.string());
  flags.system_includes.push_back(tc.python.include_dir.string());
  if (variant.backend == config::Backend::cuda && tc.cuda)
    flags.system_includes.push_back(tc.cuda->include_dir.string());
  // Source paths are recorded relative to the kernel, toolchain paths under fixed names, so that
  // __FILE__ and friends do not depend on where the checkout or the toolchain lives.
  flags.prefix_maps = {"-ffile-prefix-map=" + request.kernel_dir.string() + "/=",
                       "-ffile-prefix-map=" + tc.torch.root.string() + "=/torch",
                       "-ffile-prefix-map=" + tc.python.include_dir.string() + "=/python"};
  if (tc.cuda) flags.prefix_maps.push_back("-ffile-prefix-map=" + tc.cuda->root.string() + "=/cuda");
  return flags;
}

std::string object_path_for(const std::string& source) { return "obj/" + source + ".o"; }

}  // namespace

std::vector<std::string> variant_cuda_archs(const config::KernelConfig& config, const util::Version& cuda) {
  std::set<std::string> archs;
  for (const auto* component : config.components_for(config::Backend::cuda)) {
    if (component->cuda_minver && cuda < *component->cuda_minver) continue;
    for (const auto& arch : effective_cuda_capabilities(component->cuda_capabilities, cuda)) archs.insert(arch);
  }
  return {archs.begin(), archs.end()};
}

namespace {

Result<void> plan_compiled_variant(const PlanRequest& request, const VariantBuild& build, size_t generate_job,
                                   JobGraph& graph) {
  const config::KernelConfig& config = *request.config;
  const Variant& variant = build.variant;
  const toolchain::Toolchain& tc = *build.toolchain;
  const std::string name = variant.name();
  const std::string ops = ops_id(config.general.python_name(), variant.backend, request.unique_id);
  const fs::path work = request.work_dir / name;
  const std::string identity = tc.identity();
  const VariantFlags flags = variant_flags(request, variant, tc, ops);
  std::vector<std::pair<std::string, fs::path>> roots = {
      {"$K", request.kernel_dir}, {"$W", request.work_dir}, {"$TORCH", tc.torch.root}, {"$PY", tc.python.include_dir}};
  if (tc.cuda) roots.push_back({"$CUDA", tc.cuda->root});
  const std::string cxx_identity = "g++ " + tc.cxx.version + " " + tc.cxx.machine;
  const std::string nvcc_identity = tc.cuda ? "nvcc " + tc.cuda->version.str() + " | " + cxx_identity : "";
  const std::string std_flag = "-std=" + toolchain::cxx_standard_for(tc.torch.version);
  const fs::path generated = request.work_dir / "generated";

  if (variant.backend == config::Backend::cuda && !tc.cuda)
    return fail("variant " + name + " needs a CUDA toolkit", "install CUDA or set CUDA_HOME", ExitCode::toolchain);

  auto components = enabled_components(config, variant.backend, &tc);
  for (const auto* component : components)
    for (const auto& dep : component->depends)
      if (dep != "torch")
        return fail("kernel." + component->name + " depends on \"" + dep + "\", which kbuild cannot provide yet",
                    "only the \"torch\" dependency is supported; see docs/build-toml.md", ExitCode::usage);

  struct Unit {
    std::string source;  ///< relative to the kernel directory, or absolute for generated sources
    std::vector<std::string> includes;
    std::vector<std::string> cxx_flags;
    std::vector<std::string> cuda_flags;
    std::vector<std::string> archs;
    std::string owner;
    bool binding = false;
    bool uses_torch = false;  ///< binding sources, and components that depend on "torch"
  };
  // Translation units that cannot see Torch (components without the "torch" dependency) use one
  // C++ standard for every Torch version, so their objects are shared across the matrix.
  const std::string torch_free_std = "-std=c++20";
  std::vector<Unit> units;
  for (const auto& src : config.torch.src)
    if (compile_kind(src))
      units.push_back({src, config.torch.include, config.torch.cxx_flags, {}, {}, "torch", true, true});
  // See templates/torch/glibc_compat.cpp: keeps the library loadable on glibc 2.28.
  units.push_back({(generated / "glibc_compat.cpp").string(), {}, {}, {}, {}, "kbuild", true, false});
  for (const auto* component : components) {
    std::vector<std::string> archs;
    if (variant.backend == config::Backend::cuda)
      archs = effective_cuda_capabilities(component->cuda_capabilities, tc.cuda->version);
    if (variant.backend == config::Backend::cuda && archs.empty())
      return fail("kernel." + component->name + ": none of its cuda-capabilities can be built with CUDA " +
                      tc.cuda->version.major_minor(),
                  "supported: " + util::join(default_cuda_capabilities(tc.cuda->version), ", "), ExitCode::usage);
    for (const auto& src : component->src)
      if (compile_kind(src))
        units.push_back(
            {src, component->include, component->cxx_flags, component->cuda_flags, archs, "kernel." + component->name,
             false,
             std::find(component->depends.begin(), component->depends.end(), "torch") != component->depends.end()});
  }
  // The same source listed by two components is compiled once.
  std::set<std::string> seen;
  std::vector<fs::path> objects;
  std::vector<size_t> object_jobs;
  for (const auto& unit : units) {
    if (!seen.insert(unit.source).second) continue;
    JobKind kind = *compile_kind(unit.source);
    const bool generated_source = fs::path(unit.source).is_absolute();
    const std::string object_name =
        generated_source ? "generated/" + fs::path(unit.source).filename().string() : unit.source;
    const fs::path source_path = generated_source ? fs::path(unit.source) : request.kernel_dir / unit.source;
    fs::path object = work / object_path_for(object_name);
    fs::path temp = object.string() + ".tmp";
    fs::path depfile = object.string() + ".d";
    std::vector<std::string> argv;
    std::vector<std::string> run_args;  // see Job::run_args
    std::vector<std::string> user_includes;
    for (const auto& inc : unit.includes) user_includes.push_back("-I" + (request.kernel_dir / inc).string());
    if (unit.binding) user_includes.push_back("-I" + generated.string());
    if (kind == JobKind::compile_cxx) {
      argv.push_back(tc.cxx.cxx.string());
      for (const char* flag : {"-O3", "-fPIC", "-fvisibility=hidden", "-fno-gnu-unique"}) argv.push_back(flag);
      argv.push_back(unit.uses_torch ? std_flag : torch_free_std);
      argv.insert(argv.end(), flags.defines.begin(), flags.defines.end());
      argv.insert(argv.end(), user_includes.begin(), user_includes.end());
      for (const auto& dir : flags.system_includes) {
        argv.push_back("-isystem");
        argv.push_back(dir);
      }
      argv.insert(argv.end(), flags.prefix_maps.begin(), flags.prefix_maps.end());
      if (tc.torch.openmp && unit.uses_torch) argv.push_back("-fopenmp");
      argv.insert(argv.end(), unit.cxx_flags.begin(), unit.cxx_flags.end());
    } else {
      argv.push_back(tc.cuda->nvcc.string());
      argv.push_back("-ccbin");
      argv.push_back(tc.cxx.cxx.string());
      // Intermediates named after the object instead of a pid-numbered temporary: the name ends up
      // in the object's symbol table, and reproducible builds need it fixed (nvcc >= 12.4).
      if (tc.cuda->version >= util::Version({12, 4})) argv.push_back("-objtemp");
      argv.push_back("-O3");
      argv.push_back(unit.uses_torch ? std_flag : torch_free_std);
      std::string xcompiler = "-Xcompiler=-fPIC,-fvisibility=hidden,-fno-gnu-unique";
      for (const auto& map : flags.prefix_maps) xcompiler += "," + map;
      argv.push_back(xcompiler);
      argv.insert(argv.end(), flags.defines.begin(), flags.defines.end());
      argv.insert(argv.end(), user_includes.begin(), user_includes.end());
      for (const auto& dir : flags.system_includes) {
        argv.push_back("-isystem");
        argv.push_back(dir);
      }
      auto gencode = gencode_flags(unit.archs);
      argv.insert(argv.end(), gencode.begin(), gencode.end());
      if (request.nvcc_threads > 0)
        run_args = {"--threads", std::to_string(std::min<size_t>(request.nvcc_threads, unit.archs.size()))};
      for (const auto& flag : unit.cxx_flags) argv.push_back("-Xcompiler=" + flag);
      argv.insert(argv.end(), unit.cuda_flags.begin(), unit.cuda_flags.end());
    }
    for (const char* flag : {"-MD", "-MF"}) argv.push_back(flag);
    argv.push_back(depfile.string());
    argv.push_back("-c");
    argv.push_back(source_path.string());
    argv.push_back("-o");
    argv.push_back(temp.string());

    Job job;
    job.id = name + "/compile/" + object_name;
    job.description = std::string(to_string(kind)) + " " + object_name + "  [" + name + "]";
    job.variant = name;
    job.kind = kind;
    job.argv = argv;
    job.run_args = run_args;
    job.inputs = {source_path};
    job.outputs = {object};
    job.temp_output = temp;
    job.depfile = depfile;
    if (unit.binding) job.deps.push_back(generate_job);
    job.key = hash_key({"compile-v1", util::shell_join(argv), identity});
    job.cacheable = true;
    job.tool_identity = kind == JobKind::compile_cuda ? nvcc_identity : cxx_identity;
    job.path_roots = roots;
    objects.push_back(object);
    object_jobs.push_back(graph.add(std::move(job)));
  }
  if (objects.empty())
    return fail("variant " + name + " has no translation units to compile",
                "list .cpp or .cu files in [torch].src or a [kernel.*] component", ExitCode::usage);

  // Link.
  fs::path library = work / (ops + ".abi3.so");
  fs::path library_temp = library.string() + ".tmp";
  std::vector<std::string> link = {tc.cxx.cxx.string(), "-shared", "-o", library_temp.string()};
  for (const auto& object : objects) link.push_back(object.string());
  if (tc.torch.openmp) link.push_back("-fopenmp");  // libgomp: Torch's own copy is loaded at run time
  link.push_back("-L" + tc.torch.lib_dir().string());
  link.push_back("-Wl,--as-needed");
  for (const char* lib : {"-lc10", "-ltorch", "-ltorch_cpu"}) link.push_back(lib);
  if (variant.backend == config::Backend::cuda) {
    link.push_back("-lc10_cuda");
    link.push_back("-ltorch_cuda");
    link.push_back("-L" + tc.cuda->lib_dir.string());
    link.push_back("-lcudart");
  }
  // The C++ runtime must be the shared one Torch uses: an exception thrown by the kernel is caught
  // by Torch, which needs a single copy of the unwinder state. g++ silently falls back to
  // libstdc++.a where the unversioned libstdc++.so development link is missing.
  link.push_back("-l:libstdc++.so.6");
  for (const char* flag : {"-Wl,--no-as-needed", "-Wl,-O1", "-Wl,-z,noexecstack", "-Wl,--build-id=sha1"})
    link.push_back(flag);
  Job link_job;
  link_job.id = name + "/link";
  link_job.description = "LINK " + ops + ".abi3.so  [" + name + "]";
  link_job.variant = name;
  link_job.kind = JobKind::link;
  link_job.argv = link;
  link_job.inputs = objects;
  link_job.outputs = {library};
  link_job.temp_output = library_temp;
  link_job.deps = object_jobs;
  link_job.key = hash_key({"link-v1", util::shell_join(link), identity});
  link_job.cacheable = true;
  link_job.tool_identity =
      cxx_identity + " | torch " + tc.torch.version_string + " " + tc.torch.git_version +
      (variant.backend == config::Backend::cuda ? " | cudart " + tc.cuda->version.major_minor() : "");
  link_job.path_roots = roots;
  size_t link_index = graph.add(std::move(link_job));

  // Install.
  layout::InstallSpec spec;
  spec.variant_dir = request.output_dir / name;
  spec.package_dir = request.kernel_dir / "torch-ext" / config.general.python_name();
  spec.python_files = layout::select_python_files(request.package_files, config.torch.pyext, false);
  spec.library = library;
  KB_TRY_ASSIGN(spec.ops_py, layout::render_template("torch/_ops.py.in", {{"OPS_NAME", ops}}));
  spec.metadata = layout::metadata_for(config, variant.backend, ops);
  if (variant.backend == config::Backend::cuda) spec.metadata.archs = variant_cuda_archs(config, tc.cuda->version);
  spec.metadata.builder_version = request.builder_version;
  spec.metadata.kernel = request.kernel_git;

  Job install;
  install.id = name + "/install";
  install.description = "INSTALL build/" + name;
  install.variant = name;
  install.kind = JobKind::install;
  install.inputs.push_back(library);
  for (const auto& rel : spec.python_files) install.inputs.push_back(spec.package_dir / rel);
  for (const auto& [rel, entry] : layout::variant_files(spec).files) install.outputs.push_back(spec.variant_dir / rel);
  install.outputs.push_back(spec.variant_dir / "metadata.json");
  install.deps = {link_index};
  install.key = hash_key({"install-v1", spec.ops_py, spec.metadata.to_json(), util::join(spec.python_files, "\n")});
  install.action = InstallVariant{spec};
  graph.add(std::move(install));
  return {};
}

Result<void> plan_noarch_variant(const PlanRequest& request, const VariantBuild& build, JobGraph& graph) {
  const config::KernelConfig& config = *request.config;
  const std::string name = build.variant.name();
  config::Backend backend = build.variant.backend;
  layout::InstallSpec spec;
  spec.variant_dir = request.output_dir / name;
  spec.package_dir = request.kernel_dir / "torch-ext" / config.general.python_name();
  spec.python_files = layout::select_python_files(request.package_files, config.noarch.pyext, true);
  KB_TRY_ASSIGN(spec.ops_py,
                layout::render_template("torch/noarch/_ops.py.in", {{"PYTHON_NAME", config.general.python_name()},
                                                                    {"UNIQUE_ID", request.unique_id}}));
  std::string ops = ops_id(config.general.python_name(), backend, request.unique_id);
  spec.metadata = layout::metadata_for(config, backend, ops);
  if (backend == config::Backend::cuda) spec.metadata.archs = config.noarch.cuda_capabilities;
  if (backend == config::Backend::rocm) spec.metadata.archs = config.noarch.rocm_archs;
  spec.metadata.builder_version = request.builder_version;
  spec.metadata.kernel = request.kernel_git;
  Job install;
  install.id = name + "/install";
  install.description = "INSTALL build/" + name;
  install.variant = name;
  install.kind = JobKind::install;
  for (const auto& rel : spec.python_files) install.inputs.push_back(spec.package_dir / rel);
  for (const auto& [rel, entry] : layout::variant_files(spec).files) install.outputs.push_back(spec.variant_dir / rel);
  install.outputs.push_back(spec.variant_dir / "metadata.json");
  install.key = hash_key({"install-v1", spec.ops_py, spec.metadata.to_json(), util::join(spec.python_files, "\n")});
  install.action = InstallVariant{spec};
  graph.add(std::move(install));
  return {};
}

}  // namespace

Result<JobGraph> plan_build(const PlanRequest& request) {
  JobGraph graph;
  bool any_compiled = std::any_of(request.variants.begin(), request.variants.end(),
                                  [](const VariantBuild& b) { return b.variant.kind == Variant::Kind::torch; });
  size_t generate_job = 0;
  if (any_compiled) {
    KB_TRY_ASSIGN(std::string registration, layout::render_template("torch/registration.h", {}));
    KB_TRY_ASSIGN(std::string compat, layout::render_template("torch/glibc_compat.cpp", {}));
    fs::path header = request.work_dir / "generated" / "registration.h";
    fs::path compat_source = request.work_dir / "generated" / "glibc_compat.cpp";
    Job job;
    job.id = "generated";
    job.description = "GEN registration.h glibc_compat.cpp";
    job.kind = JobKind::generate;
    job.outputs = {header, compat_source};
    job.key = hash_key({"generate-v2", registration, compat});
    job.action = WriteFiles{{{header, registration}, {compat_source, compat}}};
    generate_job = graph.add(std::move(job));
  }
  for (const auto& build : request.variants) {
    if (build.variant.kind == Variant::Kind::noarch) {
      KB_TRY(plan_noarch_variant(request, build, graph));
    } else {
      if (!build.toolchain) return fail("internal error: variant " + build.variant.name() + " has no toolchain");
      KB_TRY(plan_compiled_variant(request, build, generate_job, graph));
    }
  }
  KB_TRY(graph.validate());
  return graph;
}

}  // namespace kbuild::plan
