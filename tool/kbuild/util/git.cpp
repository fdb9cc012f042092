#include "kbuild/util/git.hpp"

#include "kbuild/util/strings.hpp"

namespace kbuild::util {

std::optional<GitState> git_state(ProcessLauncher& launcher, const std::filesystem::path& dir) {
  if (!launcher.find("git")) return std::nullopt;
  auto ids = launcher.run({"git", "-C", dir.string(), "rev-parse", "HEAD", "HEAD:./"});
  if (!ids || ids->exit_code != 0) return std::nullopt;
  auto lines = split(trim(ids->out), '\n');
  if (lines.size() != 2 || lines[0].size() < 40) return std::nullopt;
  GitState state{std::string(trim(lines[0])), std::string(trim(lines[1])), false};
  // build/ is what kbuild writes: a committed build/ (as on the Hub) must not make every rebuild dirty.
  auto status = launcher.run({"git", "-C", dir.string(), "status", "--porcelain", "--untracked-files=no",
                              "--ignore-submodules=all", "--", ".", ":(exclude)build"});
  if (!status || status->exit_code != 0) return std::nullopt;
  state.dirty = !trim(status->out).empty();
  return state;
}

}  // namespace kbuild::util
