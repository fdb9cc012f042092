// kbuild init NAME [DIR]: scaffold a kernel project (templates/init/) that builds and tests as is.

#include <fmt/core.h>

#include "kbuild/cli/command.hpp"
#include "kbuild/config/build_toml.hpp"
#include "kbuild/layout/templates.hpp"

namespace kbuild::cli {

namespace {

struct InitOptions {
  std::string name;
  std::string dir;
  std::string repo_id;
  std::string license = "Apache-2.0";
  bool no_git = false;
};

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t pos = 0; (pos = text.find(from, pos)) != std::string::npos; pos += to.size())
    text.replace(pos, from.size(), to);
  return text;
}

Result<ExitCode> run_init(const InitOptions& options, Services& services) {
  if (!config::is_valid_kernel_name(options.name))
    return fail("\"" + options.name + "\" is not a valid kernel name",
                "use lowercase letters, digits and '-', starting with a letter, e.g. my-relu", ExitCode::usage);
  std::string python_name = replace_all(options.name, "-", "_");
  auto target = absolute_dir(options.dir.empty() ? options.name : options.dir);
  if (auto st = services.fs.stat(target); st.exists) {
    auto entries = services.fs.list_dir(target);
    if (!st.is_dir || !entries || !entries->empty())
      return fail(target.string() + " already exists and is not empty; nothing was written", "choose another directory",
                  ExitCode::usage);
  }
  std::map<std::string, std::string> vars = {
      {"NAME", options.name},
      {"PYTHON_NAME", python_name},
      {"REPO_ID", options.repo_id.empty() ? "your-org/" + options.name : options.repo_id},
      {"LICENSE", options.license}};
  if (options.license.empty() || options.license.find_first_of("\"\\\n") != std::string::npos)
    return fail("--license \"" + options.license + "\" is not an SPDX license expression",
                "e.g. Apache-2.0, MIT, BSD-3-Clause", ExitCode::usage);
  // Assemble next to the target, then rename: an interrupted init leaves nothing half-written.
  auto staging = util::temp_sibling(target);
  std::vector<std::string> written;
  for (const auto& path : layout::template_paths()) {
    if (!path.starts_with("init/")) continue;
    std::string rel = replace_all(path.substr(5), "__PYTHON_NAME__", python_name);
    if (rel.ends_with(".in")) rel.resize(rel.size() - 3);
    if (rel == "gitignore" || rel == "clangd") rel = "." + rel;
    auto content = layout::render_template(path, vars);
    if (!content) return fail(content.error());
    if (auto ok = services.fs.write_file_atomic(staging / rel, *content); !ok) {
      (void)services.fs.remove_all(staging);
      return fail(ok.error());
    }
    written.push_back(rel);
  }
  (void)services.fs.remove_all(target);  // an empty directory, checked above
  KB_TRY(services.fs.rename(staging, target));
  // A git repository from the start: the ops id follows its tree (stable across edits and checkouts).
  std::string git_note;
  if (!options.no_git) {
    auto git_init = services.launcher.run({"git", "init", "-q", target.string()});
    auto git_add = git_init && git_init->exit_code == 0
                       ? services.launcher.run({"git", "-C", target.string(), "add", "-A"})
                       : git_init;
    git_note = git_add && git_add->exit_code == 0 ? ", a git repository with the files staged"
                                                  : " (no git repository: git is not available)";
  }
  fmt::print("created {} ({} files{})\n\nnext:\n  kbuild build {}\n  python -m pytest {}/tests\n", target.string(),
             written.size(), git_note, options.dir.empty() ? options.name : options.dir,
             options.dir.empty() ? options.name : options.dir);
  return ExitCode::ok;
}

}  // namespace

void register_init(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<InitOptions>();
  CLI::App* cmd = app.add_subcommand("init", "Create a new kernel project (CPU + CUDA relu example with tests)");
  cmd->add_option("name", options->name, "Kernel name, e.g. my-relu")->required();
  cmd->add_option("dir", options->dir, "Directory to create (default: NAME)");
  cmd->add_option("--repo-id", options->repo_id, "Hub repository for [general.hub] (default: your-org/NAME)");
  cmd->add_option("--license", options->license, "SPDX license of the kernel (general.license)")->capture_default_str();
  cmd->add_flag("--no-git", options->no_git, "Do not create a git repository in the new directory");
  cmd->callback([options, &action] { action = [options](Services& s) { return run_init(*options, s); }; });
}

}  // namespace kbuild::cli
