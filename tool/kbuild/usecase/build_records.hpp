#pragma once
// What a build writes beside its outputs, in .kbuild/ (usecase/build.hpp): the record of the toolchains
// each variant was built with (toolchains-used.json) and the compilation database editors read
// (compile_commands.json). Both are JSON, rendered deterministically, so that an unchanged build
// rewrites neither.

#include <filesystem>
#include <string>
#include <vector>

#include "kbuild/plan/graph.hpp"
#include "kbuild/plan/planner.hpp"

namespace kbuild::usecase {

/// {"variants": {NAME: {"cxx", "cxx-origin", ["cxx-pins"], ["torch", "torch-origin", "python-headers"],
/// ["cuda", "cuda-origin"]}}}, for provenance.
std::string toolchains_record(const std::vector<plan::VariantBuild>& builds);

/// clang's compilation database (directory, file, arguments, output) of every compile job; the first
/// variant's commands first, so a tool that keeps one entry per file sees the local build's flags.
std::string compile_commands(const plan::JobGraph& graph, const std::filesystem::path& kernel_dir);

}  // namespace kbuild::usecase
