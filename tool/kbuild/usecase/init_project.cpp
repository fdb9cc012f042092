#include "kbuild/usecase/init_project.hpp"

#include "kbuild/usecase/hub_access.hpp"
#include "kbuild/usecase/toolchains.hpp"

#include <algorithm>
#include <map>
#include <regex>

#include "kbuild/config/build_toml.hpp"
#include "kbuild/config/model.hpp"
#include "kbuild/layout/templates.hpp"
#include "kbuild/usecase/ci_workflow.hpp"
#include "kbuild/usecase/kernel_source.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::usecase {

namespace {

// build.toml without the [kernel.<component>] table of a backend that was not chosen (the template
// has one table per backend, each ending at the next table or the end).
std::string without_table(std::string toml, const std::string& header) {
  size_t start = toml.find("\n" + header + "\n");
  if (start == std::string::npos) return toml;
  size_t end = toml.find("\n[", start + 1);
  toml.erase(start, end == std::string::npos ? std::string::npos : end - start);
  return toml;
}

// Moves every file under `from` to the same place under `to`, replacing files, keeping the others.
Result<void> merge_into(util::FileSystem& fs, const std::filesystem::path& from, const std::filesystem::path& to) {
  KB_TRY_ASSIGN(auto entries, fs.list_dir(from));
  for (const auto& entry : entries) {
    const auto target = to / entry.name;
    const auto st = fs.stat(target);
    if (entry.is_dir && st.is_dir) {
      KB_TRY(merge_into(fs, from / entry.name, target));
      continue;
    }
    if (st.exists) KB_TRY(fs.remove_all(target));
    KB_TRY(fs.rename(from / entry.name, target));
  }
  return {};
}

Result<void> validate(const InitRequest& request, const util::FileSystem& fs) {
  if (!config::is_valid_kernel_name(request.name))
    return fail("\"" + request.name + "\" is not a valid kernel name",
                "use lowercase letters, digits and '-', starting with a letter, e.g. my-relu", ExitCode::usage);
  if (request.license.empty() || request.license.find_first_of("\"\\\n") != std::string::npos)
    return fail("--license \"" + request.license + "\" is not an SPDX license expression",
                "e.g. Apache-2.0, MIT, BSD-3-Clause", ExitCode::usage);
  // Written into build.toml as a TOML string: the Hub's spelling only.
  static const std::regex k_repo_id(R"(^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$)");
  if (!request.repo_id.empty() && !std::regex_match(request.repo_id, k_repo_id))
    return fail("--repo-id \"" + request.repo_id + "\" is not a Hub repository id", "write it as org/name",
                ExitCode::usage);
  if (request.backends.empty())
    return fail("--backends is empty", "choose cpu, cuda or both (cpu,cuda)", ExitCode::usage);
  for (const auto& backend : request.backends)
    if (backend != "cpu" && backend != "cuda")
      return fail("init scaffolds cpu and cuda components, not \"" + backend + "\"",
                  std::string(config::parse_backend(backend) ? "kbuild builds cpu and cuda variants; " + backend +
                                                                   " components go into build.toml by hand"
                                                             : "\"" + backend + "\" is not a backend") +
                      " (--backends cpu, cuda, cpu cuda or all; a kernel name goes before --backends)",
                  ExitCode::usage);
  if (auto st = fs.stat(request.target); st.exists) {
    auto entries = fs.list_dir(request.target);
    if (!st.is_dir)
      return fail(request.target.string() + " exists and is not a directory; nothing was written",
                  "choose another directory", ExitCode::usage);
    if ((!entries || !entries->empty()) && !request.overwrite)
      return fail(request.target.string() + " already exists and is not empty; nothing was written",
                  "choose another directory, or pass --overwrite to write the scaffold into it", ExitCode::usage);
  }
  return {};
}

// As kernel-builder does, the owner comes from the Hub token (whoami) when none was given.
bool take_owner_from_token(InitRequest& request, Services& services) {
  if (!request.repo_id.empty() || !request.owner_from_token) return false;
  auto owner = token_owner_quickly(services);
  if (owner) request.repo_id = *owner + "/" + request.name;
  return owner.has_value();
}

// kbuild.lock (with the workflow), then a git repository from the start: the ops id follows its tree
// (stable across edits and checkouts). The lock is made before `git add`, so that it is staged too.
void lock_and_stage(const InitRequest& request, Services& services, InitOutcome& outcome) {
  if (request.ci && request.lock) {
    auto locked = lock_toolchains({request.target, request.python, false}, services);
    outcome.locked = locked.has_value();
    if (!locked) outcome.lock_error = locked.error().message;
  }
  if (!request.git) return;
  // `main` whatever git's init.defaultBranch says: the workflow runs on pushes to main. symbolic-ref
  // rather than `init -b`, which gits before 2.28 lack.
  const std::string dir = request.target.string();
  auto ran = services.launcher.run({"git", "init", "-q", dir});
  for (std::vector<std::string> next :
       {std::vector<std::string>{"git", "-C", dir, "symbolic-ref", "HEAD", "refs/heads/main"},
        std::vector<std::string>{"git", "-C", dir, "add", "-A"}})
    if (ran && ran->exit_code == 0) ran = services.launcher.run(next);
  outcome.git_created = ran && ran->exit_code == 0;
}

}  // namespace

Result<InitOutcome> init_project(const InitRequest& given, Services& services) {
  auto& fs = services.fs;
  KB_TRY(validate(given, fs));
  InitRequest request = given;
  const bool owner_from_token = take_owner_from_token(request, services);
  auto has = [&](const std::string& backend) {
    return std::find(request.backends.begin(), request.backends.end(), backend) != request.backends.end();
  };
  config::General general;
  general.name = request.name;
  const std::string python_name = general.python_name();
  std::vector<std::string> quoted;
  for (const char* backend : {"cpu", "cuda"})
    if (has(backend)) quoted.push_back(std::string("\"") + backend + "\"");
  std::map<std::string, std::string> vars = {
      {"NAME", request.name},
      {"PYTHON_NAME", python_name},
      {"REPO_ID", request.repo_id.empty() ? "your-org/" + request.name : request.repo_id},
      {"LICENSE", request.license},
      {"BACKENDS_LIST", util::join(quoted, ", ")}};

  // Assemble next to the target, then rename: an interrupted init leaves nothing half-written.
  auto staging = util::temp_sibling(request.target);
  InitOutcome outcome;
  outcome.repo_id = vars["REPO_ID"];
  outcome.owner_from_token = owner_from_token;
  auto written = [&]() -> Result<void> {
    for (const auto& path : layout::template_paths()) {
      if (!path.starts_with("init/")) continue;
      std::string rel = util::replace_all(path.substr(5), "__PYTHON_NAME__", python_name);
      if (rel.ends_with(".in")) rel.resize(rel.size() - 3);
      if (rel == "gitignore" || rel == "clangd") rel = "." + rel;
      // The CUDA component's own sources; the CPU sources serve the CUDA variant too.
      if (!has("cuda") && rel.starts_with(python_name + "_cuda/")) continue;
      KB_TRY_ASSIGN(std::string content, layout::render_template(path, vars));
      if (rel == "build.toml") {
        for (const char* backend : {"cpu", "cuda"})
          if (!has(backend)) content = without_table(content, "[kernel." + python_name + "_" + backend + "]");
      }
      KB_TRY(fs.write_file_atomic(staging / rel, content));
      outcome.files.push_back(rel);
    }
    if (request.ci) {
      KB_TRY_ASSIGN(config::KernelConfig config, load_kernel(fs, staging, {}));
      KB_TRY_ASSIGN(CiWorkflow workflow, render_github_workflow(config, staging, "."));
      KB_TRY(fs.write_file_atomic(workflow.path, workflow.text));
      outcome.files.push_back(workflow.path.lexically_relative(staging).generic_string());
    }
    return {};
  }();
  if (!written) {
    (void)fs.remove_all(staging);
    return fail(written.error());
  }
  // Into place: renamed as a whole, or, into an existing directory (the current one, a mount point;
  // with --overwrite one that has files), merged entry by entry, so that the directory is kept.
  Result<void> placed = [&]() -> Result<void> {
    if (!fs.stat(request.target).exists) return fs.rename(staging, request.target);
    KB_TRY(merge_into(fs, staging, request.target));
    return fs.remove_all(staging);
  }();
  if (!placed) {
    (void)fs.remove_all(staging);
    return fail(placed.error());
  }

  lock_and_stage(request, services, outcome);
  return outcome;
}

}  // namespace kbuild::usecase
