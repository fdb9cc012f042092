#include "kbuild/util/git.hpp"

#include "kbuild/util/strings.hpp"

namespace kbuild::util {

std::optional<GitState> parse_git_status(const std::string& porcelain_v2) {
  std::optional<GitState> state;
  bool changes = false;
  for (const auto& line : split(porcelain_v2, '\n')) {
    if (line.starts_with("# branch.oid ")) {
      std::string oid(trim(line.substr(13)));
      bool hex =
          (oid.size() == 40 || oid.size() == 64) && oid.find_first_not_of("0123456789abcdef") == std::string::npos;
      if (hex) state = GitState{oid, false};  // "(initial)": no commit yet
    } else if (!line.empty() && line[0] != '#') {
      changes = true;
    }
  }
  if (state) state->dirty = changes;
  return state;
}

std::optional<GitState> git_state(ProcessLauncher& launcher, const std::filesystem::path& dir) {
  if (!launcher.find("git")) return std::nullopt;
  // build/ is what kbuild writes: a committed build/ (as on the Hub) must not make every rebuild dirty.
  // --no-optional-locks: status must not rewrite the index (and take .git/index.lock) while the
  // user runs git in the same checkout.
  auto status = launcher.run({"git", "--no-optional-locks", "-C", dir.string(), "status", "--porcelain=v2", "--branch",
                              "--untracked-files=no", "--ignore-submodules=all", "--", ".", ":(exclude)build"});
  if (!status || status->exit_code != 0) return std::nullopt;
  return parse_git_status(status->out);
}

}  // namespace kbuild::util
