#include "kbuild/cli/kernel_builder_words.hpp"

#include "kbuild/util/strings.hpp"

namespace kbuild::cli {

const std::vector<KernelBuilderWord>& kernel_builder_commands() {
  static const std::vector<KernelBuilderWord> words = {
      {"build-and-copy", "build", "build", true},
      {"build-and-upload", "build", "build DIR && kbuild publish DIR --tag vX.Y.Z", false},
      {"upload", "publish", "publish", true},
      {"check-config", "config", "config", true},
      {"check-abi", "check", "check", true},
      {"check-builds", "check", "check", true},
      {"create-pyproject", "build", "build DIR (kbuild drives nvcc and g++ itself: no CMake project to generate)",
       false},
      {"clean-pyproject", "clean",
       "clean DIR (kbuild writes nothing into the sources; its intermediates are in .kbuild/)", false},
      {"devshell", "build", "build DIR --python PYTHON (the Torch of that Python; kbuild doctor shows what is found)",
       false},
      {"testshell", "test", "test DIR (each variant with its own Torch)", false},
      {"list-variants", "variants", "variants", true},
      {"hash", "check", "check DIR (kbuild build writes each variant's digest; check verifies it)", false},
      {"fill-card", "publish", "publish DIR (publish renders the card, README.md on main, from build.toml)", false},
  };
  return words;
}

const std::vector<KernelBuilderWord>& kernel_builder_options() {
  static const std::vector<KernelBuilderWord> words = {
      {"--cores", "build", "build -j N (kbuild runs one compiler per job: -j bounds them all)", false},
  };
  return words;
}

void add_kernel_builder_aliases(CLI::App& app) {
  for (const auto& word : kernel_builder_commands())
    if (word.alias) app.get_subcommand(word.ours)->alias(word.theirs);
}

std::optional<Error> kernel_builder_command_error(int argc, char** argv) {
  if (argc < 2) return std::nullopt;
  const std::string word = argv[1];
  for (const auto& entry : kernel_builder_commands()) {
    if (entry.alias || word != entry.theirs) continue;
    int first = 2;  // the first word that is not an option names the directory
    while (first < argc && argv[first][0] == '-') ++first;
    const std::string dir = first < argc ? argv[first] : ".";
    return Error{ExitCode::usage,
                 "`" + word + "` is kernel-builder's command; in kbuild it is `kbuild " + entry.command + "`",
                 "kbuild " + util::replace_all(entry.ours, "DIR", dir)};
  }
  return std::nullopt;
}

std::optional<Error> kernel_builder_option_error(const std::string& command, const std::string& name) {
  for (const auto& entry : kernel_builder_options())
    if (command == entry.command && name == entry.theirs)
      return Error{ExitCode::usage, "`" + name + "` is kernel-builder's option; kbuild has no such option",
                   std::string("kbuild ") + entry.ours};
  return std::nullopt;
}

}  // namespace kbuild::cli
