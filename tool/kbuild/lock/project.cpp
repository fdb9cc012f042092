#include "kbuild/lock/project.hpp"

#include <map>

namespace kbuild::lock {

namespace {

// pyproject.toml and kernels.lock are read whole; read_input_file refuses a larger or non-regular file
// (a FIFO, a device) with a clear error instead of a hang or exhausted memory.
constexpr std::uint64_t k_max_input_bytes = 16 << 20;

Result<std::string> read_input(const util::FileSystem& fs, const std::filesystem::path& path) {
  if (!fs.stat(path).exists)
    return fail("no " + path.filename().string() + " in " + path.parent_path().string(),
                path.filename() == "pyproject.toml"
                    ? "pass the project's directory: kbuild reads its [tool.kernels.dependencies] (docs/lock.md)"
                    : "create it with `kbuild lock " + path.parent_path().string() + "`",
                ExitCode::usage);
  return util::read_input_file(fs, path, k_max_input_bytes);
}

// Keyed by dependency, not by position, so a re-sorted file reports no change.
std::vector<LockChange> compare(const std::vector<LockEntry>& before, const std::vector<LockEntry>& after) {
  std::map<Dependency, std::string> old_commits, new_commits;
  for (const auto& e : before) old_commits[e.dependency] = e.commit;
  for (const auto& e : after) new_commits[e.dependency] = e.commit;
  std::vector<LockChange> changes;
  for (const auto& [dep, commit] : new_commits) {
    auto it = old_commits.find(dep);
    if (it == old_commits.end())
      changes.push_back({LockChange::Kind::added, dep, "", commit});
    else if (it->second != commit)
      changes.push_back({LockChange::Kind::moved, dep, it->second, commit});
  }
  for (const auto& [dep, commit] : old_commits)
    if (!new_commits.count(dep)) changes.push_back({LockChange::Kind::removed, dep, commit, ""});
  return changes;
}

}  // namespace

Result<std::vector<LockEntry>> read_lockfile(const util::FileSystem& fs, const std::filesystem::path& project_dir) {
  auto path = project_dir / "kernels.lock";
  if (!fs.stat(path).exists)
    return fail("no kernels.lock in " + project_dir.string(),
                "create it with `kbuild lock " + project_dir.string() + "`", ExitCode::usage);
  KB_TRY_ASSIGN(std::string text, read_input(fs, path));
  return parse_lockfile(text, path.string());
}

// The existing entries go to the resolver, which keeps them unless upgraded or no longer admitted by the
// spec; an unreadable lock is therefore an error, except with --upgrade, which keeps nothing anyway. The
// file is written only when its bytes change (render is deterministic), and atomically, so a reader never
// sees half a lock and an unchanged lock keeps its mtime.
Result<LockProjectOutcome> lock_project(const LockRequest& request, KernelIndex& index, util::FileSystem& fs) {
  auto pyproject_path = request.project_dir / "pyproject.toml";
  KB_TRY_ASSIGN(std::string pyproject_text, read_input(fs, pyproject_path));
  auto parsed = parse_pyproject_dependencies(pyproject_text, pyproject_path.string());
  if (request.diagnostics && !parsed.diagnostics.empty()) request.diagnostics(parsed.diagnostics);
  if (!parsed.ok()) {
    size_t errors = parsed.diagnostics.size();
    return fail(
        pyproject_path.string() + " is invalid (" + std::to_string(errors) + " error" + (errors == 1 ? "" : "s") + ")",
        "fix the problems listed above; kernels.lock was not changed", ExitCode::usage);
  }
  if (!parsed.has_table)
    return fail(pyproject_path.string() + " has no [tool.kernels.dependencies] table",
                "add one, e.g.\n    [tool.kernels.dependencies]\n    \"kernels-community/activation\" = 1",
                ExitCode::usage);

  LockProjectOutcome outcome;
  outcome.lockfile = request.project_dir / "kernels.lock";
  outcome.existed = fs.stat(outcome.lockfile).exists;
  std::string old_text;
  std::vector<LockEntry> existing;
  if (outcome.existed) {
    KB_TRY_ASSIGN(old_text, read_input(fs, outcome.lockfile));
    auto entries = parse_lockfile(old_text, outcome.lockfile.string());
    if (!entries) {
      if (!request.options.upgrade_all) {
        Error error = entries.error();
        error.hint = "fix or delete it, or run `kbuild lock --upgrade` to resolve everything again";
        return fail(error);
      }
    } else {
      existing = std::move(*entries);
    }
  }
  KB_TRY_ASSIGN(outcome.lock, resolve_lock(parsed.requirements, existing, request.options, index));
  std::vector<LockEntry> resolved;
  for (const auto& dep : outcome.lock.dependencies) resolved.push_back(dep.entry);
  outcome.changes = compare(existing, resolved);
  outcome.up_to_date = outcome.existed && old_text == outcome.lock.text;
  if (request.mode == LockMode::write && !outcome.up_to_date) {
    KB_TRY(fs.write_file_atomic(outcome.lockfile, outcome.lock.text));
    outcome.written = true;
  }
  return outcome;
}

}  // namespace kbuild::lock
