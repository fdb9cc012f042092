#include "kbuild/plan/generated_files.hpp"

#include <map>

#include "kbuild/layout/templates.hpp"
#include "kbuild/plan/compile_flags.hpp"
#include "kbuild/util/hash.hpp"

namespace kbuild::plan {

namespace fs = std::filesystem;

namespace {

// The multiarch pyconfig.h of each Debian-style Python the variants are built with (the same path
// with two texts would be two Pythons of one version: not one build).
Result<void> add_python_multiarch_headers(const PlanRequest& request, WriteFiles& files) {
  std::map<fs::path, std::string> headers;
  for (const auto& build : request.variants) {
    if (!build.toolchain || build.toolchain->python.multiarch_header.empty()) continue;
    const auto& python = build.toolchain->python;
    fs::path path = python_multiarch_dir(request.work_dir) / python.multiarch_header;
    auto [it, added] = headers.emplace(path, python.multiarch_pyconfig);
    if (!added && it->second != python.multiarch_pyconfig)
      return fail("internal error: two Pythons give " + python.multiarch_header + " in one build");
  }
  for (auto& [path, text] : headers) files.files.emplace_back(path, std::move(text));
  return {};
}

}  // namespace

Result<Job> generated_files_job(const PlanRequest& request) {
  KB_TRY_ASSIGN(std::string registration, layout::render_template("torch/registration.h", {}));
  KB_TRY_ASSIGN(std::string compat, layout::render_template("torch/glibc_compat.cpp", {}));
  fs::path header = request.work_dir / "generated" / "registration.h";
  fs::path compat_source = request.work_dir / "generated" / "glibc_compat.cpp";
  Job job;
  job.id = "generated";
  job.description = "GEN registration.h glibc_compat.cpp";
  job.kind = JobKind::generate;
  WriteFiles files{{{header, registration}, {compat_source, compat}}};
  KB_TRY(add_python_multiarch_headers(request, files));
  util::Hasher key;
  key.field("generate-v3");
  for (const auto& [path, text] : files.files) {
    job.outputs.push_back(path);
    key.field(path.lexically_relative(request.work_dir).string()).field(text);
  }
  job.key = key.finish_hex();
  job.action = std::move(files);
  return job;
}

}  // namespace kbuild::plan
