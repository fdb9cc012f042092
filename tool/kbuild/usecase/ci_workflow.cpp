#include "kbuild/usecase/ci_workflow.hpp"

#include "kbuild/usecase/kernel_source.hpp"

#include "kbuild/layout/templates.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::usecase {

namespace {

// templates/ci/kbuild-build-deps.txt's packages as the continuation lines of an `apt-get install`
// in the workflow (the template's indentation, eight per line).
Result<std::string> build_deps_words() {
  auto list = layout::find_template("ci/kbuild-build-deps.txt");
  if (!list) return fail("internal error: templates/ci/kbuild-build-deps.txt is not embedded");
  std::vector<std::string> packages, lines;
  for (const auto& line : util::split(std::string(*list), '\n')) {
    std::string word(util::trim(line.substr(0, line.find('#'))));
    if (!word.empty()) packages.push_back(word);
  }
  for (size_t i = 0; i < packages.size(); i += 8)
    lines.push_back(util::join(
        std::vector<std::string>(packages.begin() + i, packages.begin() + std::min(i + 8, packages.size())), " "));
  return util::join(lines, " \\\n              ");
}

}  // namespace

Result<CiWorkflow> render_github_workflow(const config::KernelConfig& config, const std::filesystem::path& repo_root,
                                          const std::string& kernel_rel) {
  // The path is written into shell commands and YAML scalars unquoted: only plain characters.
  bool plain = !kernel_rel.empty() &&
               kernel_rel.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/") ==
                   std::string::npos;
  if (!plain)
    return fail("the kernel's path in its repository, \"" + kernel_rel + "\", is not plain enough for a workflow",
                "use letters, digits, '.', '_', '-' and '/' in directory names", ExitCode::usage);
  std::string repo_id = config.general.hub_repo_id.value_or("");
  KB_TRY_ASSIGN(std::string deps, build_deps_words());
  KB_TRY_ASSIGN(std::string text,
                layout::render_template("ci/github.yml.in",
                                        {{"NAME", config.general.name},
                                         {"KERNEL_DIR", kernel_rel},
                                         {"KBUILD_BUILD_DEPS", deps},
                                         {"REPO_ID", repo_id.empty() ? "the kernel's repository" : repo_id}}));
  return CiWorkflow{repo_root / ".github" / "workflows" / ("kbuild-" + config.general.name + ".yml"), text};
}

Result<CiWorkflow> github_workflow(util::ProcessLauncher& launcher, const util::FileSystem& fs,
                                   const config::KernelConfig& config, const std::filesystem::path& kernel_dir) {
  std::filesystem::path dir = fs.real_path(kernel_dir).value_or(kernel_dir);
  std::filesystem::path root = dir;
  auto toplevel = launcher.run({"git", "-C", dir.string(), "rev-parse", "--show-toplevel"});
  if (toplevel && toplevel->exit_code == 0) root = std::string(util::trim(toplevel->out));
  std::string rel = dir.lexically_normal().lexically_relative(root.lexically_normal()).generic_string();
  if (rel.empty() || rel.starts_with("..")) {
    root = dir;
    rel = ".";
  }
  return render_github_workflow(config, root, rel);
}

Result<CiOutcome> ci_workflow(const CiRequest& request, Services& services) {
  KB_TRY_ASSIGN(config::KernelConfig config,
                load_kernel(services.fs, request.kernel_dir, diagnostics_to(services.reporter)));
  CiOutcome outcome;
  KB_TRY_ASSIGN(outcome.workflow, github_workflow(services.launcher, services.fs, config, request.kernel_dir));
  if (!request.write) return outcome;
  auto path = request.output.empty() ? outcome.workflow.path : request.output;
  if (services.fs.stat(path).exists && !request.force) {
    // `kbuild init` writes the same workflow: right after it, there is nothing to do.
    if (services.fs.read_file(path).value_or("") == outcome.workflow.text) {
      outcome.up_to_date = true;
      outcome.written = path;
      return outcome;
    }
    return fail(path.string() +
                    " exists and differs from what kbuild would write now (edited, or written by "
                    "an older kbuild); nothing was written",
                "pass --force to regenerate it (your edits to it are lost), or --stdout to compare", ExitCode::usage);
  }
  KB_TRY(services.fs.write_file_atomic(path, outcome.workflow.text));
  outcome.written = path;
  return outcome;
}

}  // namespace kbuild::usecase
