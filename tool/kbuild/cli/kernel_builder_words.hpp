#pragma once
// kernel-builder's command and option names (huggingface/kernels, kernel-builder/src/main.rs) and what
// kbuild calls them: an alias where kbuild's command does that job, else an error naming the exact
// kbuild command. docs/cli.md "Coming from kernel-builder" is this table; tests/e2e/test_cli.py runs
// every row of it against the CLI.

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

#include "kbuild/util/result.hpp"

namespace kbuild::cli {

struct KernelBuilderWord {
  const char* theirs;   ///< "list-variants", "--cores"
  const char* command;  ///< for an option: the kbuild command it belongs to; else the kbuild command
  const char* ours;     ///< what kbuild runs or calls it, e.g. "variants" or "build DIR && kbuild publish DIR"
  bool alias;           ///< `kbuild THEIRS` works as `kbuild OURS`
};

/// kernel-builder's subcommands, in its help's order.
const std::vector<KernelBuilderWord>& kernel_builder_commands();
/// kernel-builder's options that kbuild has no alias for (aliases are in the commands' own options).
const std::vector<KernelBuilderWord>& kernel_builder_options();

/// Makes each alias row a CLI11 alias of its kbuild subcommand.
void add_kernel_builder_aliases(CLI::App& app);

/// The usage error for argv[1] when it is one of kernel-builder's commands that kbuild does not
/// alias: what kbuild calls it, with the user's own arguments in the hint.
std::optional<Error> kernel_builder_command_error(int argc, char** argv);

/// The usage error for option `name` ("--cores") of kbuild command `command` when kernel-builder
/// has it and kbuild does not.
std::optional<Error> kernel_builder_option_error(const std::string& command, const std::string& name);

}  // namespace kbuild::cli
