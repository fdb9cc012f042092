#include "kbuild/plan/planner.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <set>

#include "kbuild/layout/install.hpp"
#include "kbuild/layout/templates.hpp"
#include "kbuild/plan/compile_flags.hpp"
#include "kbuild/plan/cuda_archs.hpp"
#include "kbuild/plan/generated_files.hpp"
#include "kbuild/toolchain/provision.hpp"
#include "kbuild/util/hash.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::plan {

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

std::optional<std::string> unsupported_dependency(const std::vector<const config::KernelComponent*>& components) {
  for (const auto* component : components)
    for (const auto& dep : component->depends)
      if (dep != "torch" && !toolchain::provided_dependency(dep))
        return "kernel." + component->name + " depends on \"" + dep + "\", which kbuild cannot provide yet";
  return std::nullopt;
}

std::string hash_key(std::initializer_list<std::string_view> fields) {
  util::Hasher hasher;
  for (auto field : fields) hasher.field(field);
  return hasher.finish_hex();
}

}  // namespace

namespace {

std::string object_path_for(const std::string& source) { return "obj/" + source + ".o"; }

}  // namespace

std::vector<std::string> variant_cuda_archs(const config::KernelConfig& config, const util::Version& cuda,
                                            const std::optional<std::vector<std::string>>& only) {
  std::set<std::string> archs;
  for (const auto* component : config.components_for(config::Backend::cuda)) {
    if (component->cuda_minver && cuda < *component->cuda_minver) continue;
    auto effective = effective_cuda_capabilities(component->cuda_capabilities, cuda);
    for (const auto& arch : only ? restrict_archs(effective, *only) : effective) archs.insert(arch);
  }
  return {archs.begin(), archs.end()};
}

namespace {

// One translation unit of a variant.
struct Unit {
  std::string source;  ///< relative to the kernel directory, or absolute for generated sources
  std::vector<std::string> includes;
  std::vector<std::string> cxx_flags;
  std::vector<std::string> cuda_flags;
  std::vector<std::string> archs;
  std::vector<std::string> library_includes;  ///< of header libraries the component depends on (CUTLASS)
  bool binding = false;                       ///< [torch].src and generated sources: see registration.h
  bool uses_torch = false;                    ///< binding sources, and components that depend on "torch"
};

// The install job of a variant (compiled or noarch), after `deps` (the link, for compiled ones).
// Its inputs include the source manifest (PlanRequest::source_manifest), so that its record in the
// build state tells `kbuild check`, `test` and `publish` which sources the variant was built from
// (usecase/freshness.hpp).
Job install_job(const std::string& name, const layout::InstallSpec& spec, const std::optional<fs::path>& sources,
                std::vector<size_t> deps) {
  Job install;
  install.id = name + "/install";
  install.description = "INSTALL build/" + name;
  install.variant = name;
  install.kind = JobKind::install;
  if (spec.library) install.inputs.push_back(*spec.library);
  for (const auto& rel : spec.python_files) install.inputs.push_back(spec.package_dir / rel);
  if (sources) install.inputs.push_back(*sources);
  for (const auto& [rel, entry] : layout::variant_files(spec).files) install.outputs.push_back(spec.variant_dir / rel);
  install.outputs.push_back(spec.variant_dir / "metadata.json");
  install.deps = std::move(deps);
  install.key = hash_key({"install-v1", spec.ops_py, spec.metadata.to_json(), util::join(spec.python_files, "\n")});
  install.action = InstallVariant{std::make_shared<const layout::InstallSpec>(spec)};
  return install;
}

// Plans the compile, link and install jobs of one compiled (arch) variant.
class CompiledVariantPlanner {
 public:
  CompiledVariantPlanner(const PlanRequest& request, const VariantBuild& build, size_t generate_job)
      : m_request(request),
        m_config(*request.config),
        m_variant(build.variant),
        m_tc(*build.toolchain),
        m_name(build.variant.name()),
        m_ops(ops_id(m_config.general.python_name(), build.variant.backend, request.unique_id)),
        m_work(request.work_dir / m_name),
        m_generated(request.work_dir / "generated"),
        m_generate_job(generate_job),
        m_flags(variant_flags(request, build.variant, *build.toolchain, m_ops)),
        m_cxx_identity("g++ " + m_tc.cxx.version + " " + m_tc.cxx.machine) {
    m_roots = {{"$K", request.kernel_dir}, {"$W", request.work_dir}};
    if (m_tc.cxx.pinned()) {
      m_roots.push_back({"$HOST", m_tc.cxx.sysroot.parent_path()});
      m_cxx_identity += " | " + m_tc.cxx.origin + " " + util::join(m_tc.cxx.pins, " ");
    }
    if (request.stdcxx_compat) m_roots.push_back({"$STDCXX", request.stdcxx_compat->parent_path()});
    if (tvm_ffi()) {
      m_roots.push_back({"$TVMFFI", request.tvm_ffi->root});
      m_cxx_identity += " | tvm-ffi " + request.tvm_ffi->version;
    } else {
      m_roots.push_back({"$TORCH", m_tc.torch.root});
      m_roots.push_back({"$PY", m_tc.python.include_dir});
    }
    if (m_tc.cuda) m_roots.push_back({"$CUDA", m_tc.cuda->root});
    for (const auto& [dependency, library] : request.header_libraries)
      m_roots.push_back({"$" + dependency, library.root});
  }

  Result<void> plan(JobGraph& graph) {
    if (m_variant.backend == config::Backend::cuda && !m_tc.cuda)
      return fail("variant " + m_name + " needs a CUDA toolkit", "install CUDA or set CUDA_HOME", ExitCode::toolchain);
    KB_TRY_ASSIGN(auto units, collect_units());
    std::set<std::string> seen;  // the same source listed by two components is compiled once
    for (const auto& unit : units)
      if (seen.insert(unit.source).second) add_compile_job(unit, graph);
    if (m_objects.empty())
      return fail("variant " + m_name + " has no translation units to compile",
                  "list .cpp or .cu files in [torch].src or a [kernel.*] component", ExitCode::usage);
    size_t link = add_link_job(graph);
    KB_TRY_ASSIGN(layout::InstallSpec spec, install_spec());
    graph.add(install_job(m_name, spec, m_request.source_manifest, {link}));
    return {};
  }

 private:
  bool tvm_ffi() const { return m_variant.traits().tvm_ffi_toolchain; }

  Result<std::vector<Unit>> collect_units() const {
    auto components = enabled_components(m_config, m_variant.backend, &m_tc);
    if (auto reason = unsupported_dependency(components))
      return fail(
          *reason,
          "kbuild provides torch and CUTLASS (cutlass_2_10, cutlass_3_5, cutlass_3_6, cutlass_3_8, cutlass_3_9, "
          "cutlass_4_0, cutlass_4_4, cutlass_4_5); "
          "metal-cpp and sycl_tla belong to backends kbuild does not build; see docs/build-toml.md",
          ExitCode::usage);
    std::vector<Unit> units;
    for (const auto& src : m_config.torch.src)
      if (compile_kind(src))
        units.push_back({src, m_config.torch.include, m_config.torch.cxx_flags, {}, {}, {}, true, !tvm_ffi()});
    // See templates/torch/glibc_compat.cpp: keeps the library loadable on glibc 2.28.
    units.push_back({(m_generated / "glibc_compat.cpp").string(), {}, {}, {}, {}, {}, true, false});
    for (const auto* component : components) {
      std::vector<std::string> archs;
      if (m_variant.backend == config::Backend::cuda) {
        archs = effective_cuda_capabilities(component->cuda_capabilities, m_tc.cuda->version);
        if (archs.empty())
          return fail("kernel." + component->name + ": none of its cuda-capabilities can be built with CUDA " +
                          m_tc.cuda->version.major_minor(),
                      "supported: " + util::join(default_cuda_capabilities(m_tc.cuda->version), ", "), ExitCode::usage);
        if (m_request.cuda_archs_only) {
          auto declared = archs;
          archs = restrict_archs(declared, *m_request.cuda_archs_only);
          bool compiles_cuda = std::any_of(component->src.begin(), component->src.end(), [](const std::string& src) {
            return compile_kind(src) == JobKind::compile_cuda;
          });
          if (archs.empty() && compiles_cuda)
            return fail("kernel." + component->name + " declares CUDA capabilities " + util::join(declared, ", ") +
                            ", none of which is in the architectures asked for (" +
                            util::join(*m_request.cuda_archs_only, ", ") + ")",
                        "pass --cuda-archs all (or a capability the kernel declares); the GPU here cannot run it",
                        ExitCode::usage);
        }
      }
      bool uses_torch = !tvm_ffi() && std::find(component->depends.begin(), component->depends.end(), "torch") !=
                                          component->depends.end();
      std::vector<std::string> library_includes;
      for (const auto& dep : component->depends) {
        if (dep == "torch") continue;
        auto library = m_request.header_libraries.find(dep);
        if (library == m_request.header_libraries.end())
          return fail("internal error: dependency " + dep + " of kernel." + component->name + " was not provided");
        for (const auto& dir : library->second.include_dirs) library_includes.push_back(dir.string());
      }
      for (const auto& src : component->src)
        if (compile_kind(src))
          units.push_back({src, component->include, component->cxx_flags, component->cuda_flags, archs,
                           library_includes, false, uses_torch});
    }
    return units;
  }

  // Translation units that cannot see Torch (components without the "torch" dependency) use one
  // C++ standard for every Torch version, so their objects are shared across the matrix.
  std::string std_flag(const Unit& unit) const {
    if (tvm_ffi()) return "-std=c++17";  // tvm-ffi's CMake package: cxx_std_17
    return unit.uses_torch ? "-std=" + toolchain::cxx_standard_for(m_tc.torch.version) : "-std=c++20";
  }

  void add_includes(const Unit& unit, std::vector<std::string>& argv) const {
    argv.insert(argv.end(), m_flags.defines.begin(), m_flags.defines.end());
    // kernel-builder's Torch extension target has `csrc` (the kernel's csrc/, whether or not it
    // exists) as an include directory of every unit, before per-source ones: bindings include kernel
    // headers from csrc/ by bare name (megablocks' `#include "cumsum.h"`). Its tvm-ffi target has not.
    if (!tvm_ffi()) argv.push_back("-I" + (m_request.kernel_dir / "csrc").string());
    for (const auto& inc : unit.includes) argv.push_back("-I" + (m_request.kernel_dir / inc).string());
    for (const auto& inc : unit.library_includes) argv.push_back("-I" + inc);
    if (unit.binding) argv.push_back("-I" + m_generated.string());
    for (const auto& dir : m_flags.system_includes) {
      argv.push_back("-isystem");
      argv.push_back(dir);
    }
  }

  std::vector<std::string> host_compile(const Unit& unit) const {
    std::vector<std::string> argv = driver_command(m_tc.cxx);
    argv.insert(argv.end(), {"-O3", "-fPIC", "-fvisibility=hidden", "-fno-gnu-unique", std_flag(unit)});
    add_includes(unit, argv);
    argv.insert(argv.end(), m_flags.prefix_maps.begin(), m_flags.prefix_maps.end());
    if (m_tc.torch.openmp && unit.uses_torch) argv.push_back("-fopenmp");
    argv.insert(argv.end(), unit.cxx_flags.begin(), unit.cxx_flags.end());
    return argv;
  }

  std::vector<std::string> cuda_compile(const Unit& unit) const {
    std::vector<std::string> argv = {m_tc.cuda->nvcc.string(), "-ccbin", m_tc.cxx.cxx.string()};
    // Intermediates named after the object instead of a pid-numbered temporary: the name ends up
    // in the object's symbol table, and reproducible builds need it fixed (nvcc >= 12.4).
    if (m_tc.cuda->version >= util::Version({12, 4})) argv.push_back("-objtemp");
    argv.push_back("-O3");
    argv.push_back(std_flag(unit));
    // What every CUDA compile of kernel-builder gets (docs/build-toml.md, "Compiler command lines"):
    // the CUDA flags of Torch's CMake package, then its own -DENABLE_FP8 (CUDA >= 11.8).
    if (!tvm_ffi()) {  // kernel-builder's tvm-ffi builds do not load Torch's CMake package
      argv.insert(argv.end(), k_torch_nvcc_flags.begin(), k_torch_nvcc_flags.end());
      argv.push_back("-DENABLE_FP8");
    }
    std::string xcompiler = "-Xcompiler=-fPIC,-fvisibility=hidden,-fno-gnu-unique";
    for (const auto& flag : m_tc.cxx.driver_flags()) xcompiler += "," + flag;
    for (const auto& map : m_flags.prefix_maps) xcompiler += "," + map;
    argv.push_back(xcompiler);
    add_includes(unit, argv);
    auto gencode = gencode_flags(unit.archs);
    argv.insert(argv.end(), gencode.begin(), gencode.end());
    // cxx-flags are for the C++ compiler only, as in kernel-builder (a host flag meant for .cpp files,
    // such as -fopenmp, is not forced on nvcc's host passes).
    argv.insert(argv.end(), unit.cuda_flags.begin(), unit.cuda_flags.end());
    return argv;
  }

  void add_compile_job(const Unit& unit, JobGraph& graph) {
    JobKind kind = *compile_kind(unit.source);
    const bool generated_source = fs::path(unit.source).is_absolute();
    const std::string object_name =
        generated_source ? "generated/" + fs::path(unit.source).filename().string() : unit.source;
    const fs::path source_path = generated_source ? fs::path(unit.source) : m_request.kernel_dir / unit.source;
    fs::path object = m_work / object_path_for(object_name);
    fs::path temp = object.string() + ".tmp";
    fs::path depfile = object.string() + ".d";
    Job job;
    job.argv = kind == JobKind::compile_cxx ? host_compile(unit) : cuda_compile(unit);
    if (kind == JobKind::compile_cuda && m_request.nvcc_threads > 0)
      job.run_args = {"--threads", std::to_string(std::min<size_t>(m_request.nvcc_threads, unit.archs.size()))};
    for (const std::string& arg : {std::string("-MD"), std::string("-MF"), depfile.string(), std::string("-c"),
                                   source_path.string(), std::string("-o"), temp.string()})
      job.argv.push_back(arg);
    job.id = m_name + "/compile/" + object_name;
    job.description = std::string(to_string(kind)) + " " + object_name + "  [" + m_name + "]";
    job.variant = m_name;
    job.kind = kind;
    job.inputs = {source_path};
    job.outputs = {object};
    job.temp_output = temp;
    job.depfile = depfile;
    job.confine_to = m_request.kernel_dir;
    if (unit.binding || !m_tc.python.multiarch_header.empty()) job.deps.push_back(m_generate_job);
    job.volatile_define = Job::VolatileDefine{tvm_ffi() ? "TVM_FFI_EXTENSION_NAME" : "TORCH_EXTENSION_NAME",
                                              m_ops,
                                              {m_request.kernel_dir, m_request.work_dir}};
    job.key = hash_key({"compile-v2", util::shell_join(job.keyed_argv()), m_tc.identity()});
    job.cacheable = true;
    job.tool_identity =
        kind == JobKind::compile_cuda ? "nvcc " + m_tc.cuda->version.str() + " | " + m_cxx_identity : m_cxx_identity;
    job.path_roots = m_roots;
    job.env = m_tc.cxx.environment();
    m_objects.push_back(object);
    m_object_jobs.push_back(graph.add(std::move(job)));
  }

  // Newer libstdc++ symbols from the compat archive, kept hidden (toolchain/stdcxx_compat.hpp).
  void add_stdcxx_compat(std::vector<std::string>& link) const {
    if (!m_request.stdcxx_compat) return;
    link.push_back("-Wl,--exclude-libs," + m_request.stdcxx_compat->filename().string());
    link.push_back(m_request.stdcxx_compat->string());
  }

  fs::path library() const { return m_work / layout::library_file_name(m_variant, m_ops); }

  std::vector<std::string> link_command(const fs::path& output) const {
    const bool cuda = m_variant.backend == config::Backend::cuda;
    std::vector<std::string> link = driver_command(m_tc.cxx);
    link.insert(link.end(), {"-shared", "-o", output.string()});
    for (const auto& object : m_objects) link.push_back(object.string());
    if (tvm_ffi()) {
      // tvm_ffi.load_module finds libtvm_ffi.so already loaded by the tvm_ffi package (no RPATH).
      for (const std::string& arg :
           {"-L" + m_request.tvm_ffi->lib_dir.string(), std::string("-Wl,--as-needed"), std::string("-ltvm_ffi")})
        link.push_back(arg);
      // The shared CUDA runtime, as Torch variants link it: the static one, CMake's default, binds its
      // pthread and dl calls to glibc 2.34 versions on a current build machine (beyond manylinux_2_28).
      // So libcudart.so must be loadable where the variant runs (a CUDA install, or NVIDIA's runtime
      // wheel loaded first, as Torch and JAX's CUDA plugin do).
      if (cuda)
        for (const std::string& arg : {"-L" + m_tc.cuda->lib_dir.string(), std::string("-lcudart")})
          link.push_back(arg);
      add_runtime_and_flags(link);
      return link;
    }
    if (m_tc.torch.openmp) link.push_back("-fopenmp");  // libgomp: Torch's own copy is loaded at run time
    link.push_back("-L" + m_tc.torch.lib_dir().string());
    link.push_back("-Wl,--as-needed");
    for (const char* lib : {"-lc10", "-ltorch", "-ltorch_cpu"}) link.push_back(lib);
    if (cuda)
      for (const std::string& arg : {std::string("-lc10_cuda"), std::string("-ltorch_cuda"),
                                     "-L" + m_tc.cuda->lib_dir.string(), std::string("-lcudart")})
        link.push_back(arg);
    add_runtime_and_flags(link);
    return link;
  }

  // The C++ runtime must be the shared one Torch uses: an exception thrown by the kernel is caught
  // by Torch, which needs a single copy of the unwinder state. g++ silently falls back to
  // libstdc++.a where the unversioned libstdc++.so development link is missing. Only the newer
  // symbols come from the private compat archive. glibc_compat.cpp forwards dlsym to its
  // manylinux-compatible version.
  void add_runtime_and_flags(std::vector<std::string>& link) const {
    add_stdcxx_compat(link);
    link.push_back("-l:libstdc++.so.6");
    link.push_back("-ldl");  // glibc < 2.34 keeps dlsym in libdl (dropped by --as-needed elsewhere)
    for (const char* flag : {"-Wl,--no-as-needed", "-Wl,--wrap=dlopen,--wrap=dlsym,--wrap=dlclose,--wrap=dlerror",
                             "-Wl,-O1", "-Wl,-z,noexecstack", "-Wl,--build-id=sha1"})
      link.push_back(flag);
  }

  size_t add_link_job(JobGraph& graph) {
    fs::path temp = library().string() + ".tmp";
    Job link;
    link.id = m_name + "/link";
    link.description = "LINK " + library().filename().string() + "  [" + m_name + "]";
    link.variant = m_name;
    link.kind = JobKind::link;
    link.argv = link_command(temp);
    link.inputs = m_objects;
    link.outputs = {library()};
    link.temp_output = temp;
    link.deps = m_object_jobs;
    link.key = hash_key({"link-v1", util::shell_join(link.argv), m_tc.identity()});
    link.cacheable = true;
    link.tool_identity =
        m_cxx_identity +
        (tvm_ffi() ? std::string() : " | torch " + m_tc.torch.version_string + " " + m_tc.torch.git_version) +
        (m_variant.backend == config::Backend::cuda ? " | cudart " + m_tc.cuda->version.major_minor() : "") +
        // The archive's directory is named after the libstdc++ it came from and kbuild's rules.
        (m_request.stdcxx_compat ? " | " + m_request.stdcxx_compat->parent_path().filename().string() : "");
    link.path_roots = m_roots;
    link.env = m_tc.cxx.environment();
    return graph.add(std::move(link));
  }

  Result<layout::InstallSpec> install_spec() const {
    layout::InstallSpec spec;
    spec.variant_dir = m_request.output_dir / m_name;
    spec.package_dir = m_request.kernel_dir / m_config.package_dir();
    spec.python_files = layout::select_python_files(m_request.package_files, m_config.torch.pyext, false);
    spec.library = library();
    spec.library_name = library().filename().string();
    KB_TRY_ASSIGN(spec.ops_py, layout::render_template(tvm_ffi() ? "tvm_ffi/_ops.py.in" : "torch/_ops.py.in",
                                                       {{"OPS_NAME", m_ops}}));
    spec.metadata = layout::metadata_for(m_config, m_variant.backend, m_ops);
    if (m_variant.backend == config::Backend::cuda)
      spec.metadata.archs = variant_cuda_archs(m_config, m_tc.cuda->version, m_request.cuda_archs_only);
    spec.metadata.builder_version = m_request.builder_version;
    spec.metadata.kernel = m_request.kernel_git;
    spec.metadata.toolchain = toolchain_record(m_tc, m_variant, tvm_ffi());
    if (m_request.gate_libraries) {
      layout::LibraryGate gate;
      gate.machine = m_variant.cpu;
      gate.options.manylinux = m_request.manylinux;
      if (m_variant.traits().stable_abi_gate) gate.options.torch_stable_abi = m_variant.torch;
      gate.options.tvm_ffi = tvm_ffi();
      gate.objects = m_objects;
      gate.work_dir = m_request.work_dir;
      spec.gate = std::move(gate);
    }
    return spec;
  }

  const PlanRequest& m_request;
  const config::KernelConfig& m_config;
  const Variant& m_variant;
  const toolchain::Toolchain& m_tc;
  const std::string m_name;
  const std::string m_ops;
  const fs::path m_work;
  const fs::path m_generated;
  const size_t m_generate_job;
  const VariantFlags m_flags;
  std::string m_cxx_identity;
  std::vector<std::pair<std::string, fs::path>> m_roots;
  std::vector<fs::path> m_objects;
  std::vector<size_t> m_object_jobs;
};

Result<void> plan_noarch_variant(const PlanRequest& request, const VariantBuild& build, JobGraph& graph) {
  const config::KernelConfig& config = *request.config;
  const std::string name = build.variant.name();
  config::Backend backend = build.variant.backend;
  layout::InstallSpec spec;
  spec.variant_dir = request.output_dir / name;
  spec.package_dir = request.kernel_dir / config.package_dir();
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
  graph.add(install_job(name, spec, request.source_manifest, {}));
  return {};
}

}  // namespace

Result<JobGraph> plan_build(const PlanRequest& request) {
  JobGraph graph;
  bool any_compiled = std::any_of(request.variants.begin(), request.variants.end(),
                                  [](const VariantBuild& b) { return b.variant.compiled(); });
  size_t generate_job = 0;
  if (any_compiled) {
    KB_TRY_ASSIGN(Job job, generated_files_job(request));
    generate_job = graph.add(std::move(job));
  }
  for (const auto& build : request.variants) {
    if (!build.variant.compiled()) {
      KB_TRY(plan_noarch_variant(request, build, graph));
    } else {
      if (!build.toolchain) return fail("internal error: variant " + build.variant.name() + " has no toolchain");
      if (build.variant.traits().tvm_ffi_toolchain && !request.tvm_ffi)
        return fail("internal error: variant " + build.variant.name() + " is planned without tvm-ffi");
      KB_TRY(CompiledVariantPlanner(request, build, generate_job).plan(graph));
    }
  }
  KB_TRY(graph.validate());
  return graph;
}

std::optional<std::string> unbuildable_reason(const config::KernelConfig& config, config::Backend backend) {
  return unsupported_dependency(enabled_components(config, backend, nullptr));
}

}  // namespace kbuild::plan
