// kbuild init NAME [DIR]: scaffold a kernel project (usecase/init_project.hpp) that builds and tests as is.

#include <fmt/core.h>

#include "kbuild/cli/command.hpp"
#include "kbuild/config/model.hpp"
#include "kbuild/usecase/ci_workflow.hpp"
#include "kbuild/usecase/init_project.hpp"

namespace kbuild::cli {

namespace {

struct InitOptions {
  std::string name;  ///< the first positional: the name, or with --name the directory
  std::string dir;
  std::string name_option;  ///< --name
  std::string repo_id;
  std::string license = "Apache-2.0";
  std::vector<std::string> backends = {"cpu", "cuda"};
  bool no_git = false;
  bool no_ci = false;
  bool no_lock = false;
  std::string python;
  bool overwrite = false;
  bool backends_given = false;
  bool owner_from_name = false;  ///< NAME was OWNER/NAME: init says which owner it took
};

// CLI11 fills the positionals NAME and DIR before a many-valued option, so `--backends cpu cuda` leaves
// "cuda" in a positional: with --backends given, positionals that name a backend are backends.
void collect_backend_words(InitOptions& options) {
  if (!options.backends_given) return;
  std::vector<std::string> positionals;
  for (auto* word : {&options.name, &options.dir}) {
    bool backend = *word == "all" || config::parse_backend(*word).has_value();
    if (backend)
      options.backends.push_back(*word);
    else if (!word->empty())
      positionals.push_back(*word);
  }
  options.name = positionals.size() > 0 ? positionals[0] : "";
  options.dir = positionals.size() > 1 ? positionals[1] : "";
}

// kernel-builder's `init PATH`: a word that can only be a path (./x, ../x, /x, ~/x, a/b/c, or a/b where
// a/ is an existing directory) names the directory, and its last component the kernel. Other words
// with one slash are kbuild's OWNER/NAME (init then says so).
bool path_form(const std::string& word) {
  if (word.starts_with("./") || word.starts_with("../") || word.starts_with("/") || word.starts_with("~")) return true;
  auto slash = word.find('/');
  if (slash == std::string::npos) return false;
  if (word.find('/', slash + 1) != std::string::npos) return true;
  std::error_code ec;
  return std::filesystem::is_directory(word.substr(0, slash), ec);
}

// kernel-builder's spellings: `--name OWNER/REPO` (the repository id too), `--backends cpu cuda` or
// `cpu,cuda` (and `all`: every backend init scaffolds), no name at all in an empty directory (its name).
Result<InitOptions> kernel_builder_spellings(InitOptions options) {
  collect_backend_words(options);
  if (!options.name_option.empty()) {
    if (!options.dir.empty())
      return fail("with --name, init takes one directory", "kbuild init [DIR] --name NAME", ExitCode::usage);
    options.dir = options.name;
    options.name = options.name_option;
  }
  if (options.dir.empty() && path_form(options.name)) {
    options.dir = options.name;
    while (options.dir.size() > 1 && options.dir.ends_with('/')) options.dir.pop_back();
    options.name = std::filesystem::path(options.dir).filename().string();
  }
  if (auto slash = options.name.find('/'); slash != std::string::npos) {
    if (options.repo_id.empty()) {
      options.repo_id = options.name;
      options.owner_from_name = options.name_option.empty();  // --name OWNER/NAME says so itself
    }
    options.name = options.name.substr(slash + 1);
  }
  if (options.name.empty()) {
    std::error_code ec;
    options.name = std::filesystem::current_path(ec).filename().string();
    options.dir = ".";
  }
  std::vector<std::string> backends;
  for (const auto& backend : options.backends) {
    if (backend == "all") {
      backends.insert(backends.end(), {"cpu", "cuda"});
    } else if (std::find(backends.begin(), backends.end(), backend) == backends.end()) {
      backends.push_back(backend);
    }
  }
  options.backends = backends;
  return options;
}

Result<ExitCode> run_init(const InitOptions& given, Services& services) {
  // `kbuild init NAME [DIR]`, or `kbuild init [DIR] --name NAME` (kernel-builder's spelling).
  KB_TRY_ASSIGN(InitOptions options, kernel_builder_spellings(given));
  usecase::InitRequest request;
  request.name = options.name;
  request.target = absolute_dir(options.dir.empty() ? options.name : options.dir);
  request.repo_id = options.repo_id;
  request.license = options.license;
  request.backends = options.backends;
  request.git = !options.no_git;
  request.ci = !options.no_ci;
  request.overwrite = options.overwrite;
  request.lock = !options.no_lock;
  KB_TRY_ASSIGN(request.python, python_setting(options.python, services));
  LogReporter reporter(request.ci && request.lock && is_smart_terminal(stderr, services.env));
  auto use_case_services = services.with(reporter);
  KB_TRY_ASSIGN(usecase::InitOutcome outcome, usecase::init_project(request, use_case_services));
  std::string git_note = options.no_git        ? ""
                         : outcome.git_created ? ", a git repository with the files staged"
                                               : " (no git repository: git is not available)";
  std::string shown = options.dir.empty() ? options.name : options.dir;
  fmt::print("created {} ({} files{})\n\nnext:\n  kbuild build {}\n  kbuild test {}\n", request.target.string(),
             outcome.files.size(), git_note, shown, shown);
  if (options.owner_from_name)
    fmt::print("\nthe Hub repository is {} (OWNER/NAME); for a directory of that path, write ./{}\n", outcome.repo_id,
               options.repo_id);
  else if (outcome.owner_from_token)
    fmt::print("\nthe Hub repository is {} (the owner of your Hub token; --repo-id OWNER/NAME for another)\n",
               outcome.repo_id);
  else if (options.repo_id.empty())
    fmt::print(
        "\nbefore publishing, set the owner in build.toml's [general.hub] repo-id (now your-org/{}),\n"
        "or create the project with --name OWNER/{}\n",
        request.name, request.name);
  if (request.ci) {
    fmt::print("\nthe CI workflow (.github/workflows/kbuild-{}.yml) needs these repository settings:\n{}", request.name,
               usecase::k_workflow_settings);
    if (outcome.locked)
      fmt::print(
          "\nkbuild.lock pins the toolchains the workflow builds with (--locked); after editing the matrix\n"
          "(kbuild.toml) run `kbuild toolchains lock {}`, and `--update` for newer patch releases;\n"
          "commit the lock with the sources\n",
          shown);
    else if (request.lock)
      reporter.warning(
          fmt::format("kbuild.lock was not written ({}); run `kbuild toolchains lock {}` and commit "
                      "kbuild.lock before the first push: the CI workflow builds --locked",
                      outcome.lock_error, shown));
    else
      fmt::print(
          "\nthe CI workflow builds --locked: run `kbuild toolchains lock {}` and commit kbuild.lock\n"
          "before the first push\n",
          shown);
  }
  return ExitCode::ok;
}

}  // namespace

void register_init(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<InitOptions>();
  CLI::App* cmd = app.add_subcommand("init",
                                     "Create a new kernel project (a relu op with CPU and CUDA components, tests "
                                     "and a CI workflow)");
  cmd->add_option("name", options->name,
                  "Kernel name, e.g. my-relu, or OWNER/NAME (the Hub repository too); with --name: the directory. "
                  "Default: the current directory's name, scaffolded there");
  cmd->add_option("dir", options->dir, "Directory to create (default: NAME)");
  cmd->add_option("--name", options->name_option,
                  "Kernel name or OWNER/NAME (kernel-builder's spelling), the positional argument then being the "
                  "directory");
  cmd->add_option("--repo-id", options->repo_id,
                  "Hub repository for [general.hub] (default: OWNER/NAME with the owner of the Hub token, asked with a "
                  "3 s deadline; else your-org/NAME)");
  cmd->add_option("--license", options->license, "SPDX license of the kernel (general.license)")->capture_default_str();
  cmd->add_option("--backends", options->backends,
                  "Components to scaffold: cpu, cuda, both (cpu,cuda or cpu cuda, as kernel-builder writes it) or "
                  "all")
      ->delimiter(',')
      ->expected(1, -1)
      ->capture_default_str();
  cmd->add_flag("--overwrite", options->overwrite,
                "Write the scaffold into a directory that is not empty (files of the same names are replaced)");
  cmd->add_flag("--no-git", options->no_git, "Do not create a git repository in the new directory");
  cmd->add_flag("--no-lock", options->no_lock,
                "Do not write kbuild.lock (written with the CI workflow: `kbuild toolchains lock` resolves the "
                "matrix's toolchain pins through pip, online)");
  cmd->add_option("--python", options->python,
                  std::string("Python whose pip resolves kbuild.lock's pins") + k_python_help_suffix);
  cmd->add_flag("--no-ci", options->no_ci,
                "Do not write .github/workflows/kbuild-NAME.yml (the workflow of kbuild ci github)");
  cmd->callback([options, cmd, &action] {
    options->backends_given = cmd->get_option("--backends")->count() > 0;
    action = [options](Services& s) { return run_init(*options, s); };
  });
}

}  // namespace kbuild::cli
