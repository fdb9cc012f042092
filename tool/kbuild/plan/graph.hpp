#pragma once
// The job graph: what `kbuild build` executes. Jobs are plain data produced by the planner; the
// executor (exec/executor.hpp) decides which are stale and runs them in dependency order.

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "kbuild/util/result.hpp"

namespace kbuild::layout {
struct InstallSpec;  // layout/install.hpp: kept out of this header, which most of kbuild includes
}

namespace kbuild::plan {

namespace fs = std::filesystem;

enum class JobKind {
  compile_cxx,   ///< g++ -c, one translation unit
  compile_cuda,  ///< nvcc -c, one translation unit
  link,          ///< g++ -shared, one per variant
  generate,      ///< in-process: writes generated sources (registration.h, glibc_compat.cpp)
  install,       ///< in-process: writes build/<variant>/ (Python files, _ops.py, library, metadata.json)
};

/// In-process work, as data. The executor hands it to an exec::ActionRunner, which performs it
/// (the build use case implements that with layout/); plan/ only describes it.
struct WriteFiles {
  std::vector<std::pair<fs::path, std::string>> files;  ///< path -> content, each written atomically
};
struct InstallVariant {
  std::shared_ptr<const layout::InstallSpec> spec;  ///< never null; shared by copies of the job
};
using JobAction = std::variant<std::monostate, WriteFiles, InstallVariant>;

const char* to_string(JobKind kind);

struct Job {
  std::string id;           ///< unique and stable across runs: "<variant>/<kind>/<path>"
  std::string description;  ///< one line for the progress display
  std::string variant;      ///< the variant it belongs to
  JobKind kind = JobKind::compile_cxx;

  /// The command for compile and link jobs; empty for in-process jobs.
  std::vector<std::string> argv;
  /// Appended to argv when the command runs: how it runs, not what it produces (nvcc's --threads,
  /// which follows -j). Neither in `key` nor in cache keys, so changing -j rebuilds nothing.
  std::vector<std::string> run_args;
  /// Variables set in the command's environment: how it runs (a pinned compiler's LD_LIBRARY_PATH),
  /// covered by tool_identity, so not part of `key`.
  std::map<std::string, std::string> env;
  /// The command as it runs: argv + run_args.
  std::vector<std::string> command_line() const;
  /// For in-process jobs (generate, install): what to do. Must be performed atomically per output.
  JobAction action;
  bool in_process() const { return !std::holds_alternative<std::monostate>(action); }

  std::vector<fs::path> inputs;   ///< files the job reads (headers come from the depfile)
  std::vector<fs::path> outputs;  ///< outputs[0] is the primary output
  /// The command writes here; the executor renames it to outputs[0] on success and deletes it on
  /// failure, so an interrupted job never leaves a partial output behind.
  std::optional<fs::path> temp_output;
  std::optional<fs::path> depfile;  ///< Make-style depfile written by the compiler (-MD -MF)
  /// The kernel directory: every file the depfile names as below it (as the compiler reached it, by
  /// a link or by "..") must really be inside it; else the job fails (exec/depfile.hpp).
  std::optional<fs::path> confine_to;
  std::vector<size_t> deps;  ///< indices of jobs whose outputs this job reads

  /// What decides staleness besides the inputs' state: the command line (with a volatile define's
  /// value masked), the toolchain identity, the parameters of an in-process job. A change re-runs the job.
  std::string key;
  /// A `-D<name>=<value>` of argv whose value changes often but reaches few units: the ops id
  /// (TORCH_EXTENSION_NAME). Its value is left out of `key` and of cache keys; it counts only for a
  /// unit whose source or headers under `scan_roots` name the macro (exec/macro_scan.hpp), which the
  /// executor finds out after the compile and records. So a new ops id recompiles the binding, not
  /// every unit.
  struct VolatileDefine {
    std::string name;
    std::string value;
    std::vector<fs::path> scan_roots;  ///< the kernel and work directories
    std::string argument() const { return "-D" + name + "=" + value; }
    std::string masked_argument() const { return "-D" + name + "=<volatile>"; }
  };
  std::optional<VolatileDefine> volatile_define;
  /// argv with the volatile define's value masked: what `key` and cache keys hash.
  std::vector<std::string> keyed_argv() const;
  /// Whether the job may be served from, and stored into, the compile cache.
  bool cacheable = false;
  /// The identity of the tools the job runs (compiler versions; for links also the Torch and CUDA
  /// builds linked against). With the command line and input contents it forms the cache key.
  std::string tool_identity;
  /// Directories whose location must not influence cache keys (the kernel, Torch, CUDA, Python
  /// headers, the work directory), by placeholder name: {"$K", "/home/me/img2gray"}, ...
  std::vector<std::pair<std::string, fs::path>> path_roots;
};

struct JobGraph {
  std::vector<Job> jobs;

  size_t add(Job job) {
    jobs.push_back(std::move(job));
    return jobs.size() - 1;
  }
  /// Error if a dependency index is out of range or refers forwards (the planner emits jobs in
  /// topological order) or two jobs share an id or an output.
  Result<void> validate() const;
};

}  // namespace kbuild::plan
