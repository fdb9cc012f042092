#include "kbuild/lock/resolver.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "kbuild/layout/metadata.hpp"
#include "kbuild/lock/variant_select.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::lock {

namespace {

Error resolution_error(std::string message, std::string hint = {}) {
  return Error{ExitCode::failure, std::move(message), std::move(hint)};
}

std::string ns_of(const std::string& repo_id) { return repo_id.substr(0, repo_id.find('/')); }

std::vector<std::uint64_t> version_branches(const hub::Refs& refs) {
  std::vector<std::uint64_t> out;
  for (const auto& [name, commit] : refs.branches)
    if (auto major = parse_version_branch(name)) out.push_back(*major);
  std::sort(out.begin(), out.end());
  return out;
}

// Several dependencies' errors as one: each message with its hint; exit 4 only when each was the
// network's (a retry may fix all of them), else 1.
Error combined_error(const std::vector<Error>& errors) {
  Error out{ExitCode::network, std::to_string(errors.size()) + " kernel dependencies could not be locked:",
            "fix each one above, then run "
            "kbuild lock again (nothing was written)"};
  for (const auto& error : errors) {
    out.message += "\n  - " + error.message + (error.hint.empty() ? "" : "\n    hint: " + error.hint);
    if (error.code != ExitCode::network) out.code = ExitCode::failure;
  }
  return out;
}

std::string list_or_none(const std::vector<std::string>& items) {
  return items.empty() ? "none" : util::join(items, ", ");
}

class Resolver {
 public:
  Resolver(const std::vector<LockEntry>& existing, const LockOptions& options, KernelIndex& index)
      : m_options(options), m_index(index) {
    for (const auto& entry : existing) m_existing[entry.dependency] = entry.commit;
  }

  Result<void> lock_requirement(const Requirement& requirement) {
    m_stack.clear();  // an earlier requirement that failed may have left its path
    const std::string& repo = requirement.repo_id;
    std::string requested = describe(requirement.spec);
    if (auto* major = std::get_if<MajorSpec>(&requirement.spec)) {
      Dependency dep{repo, major->major};
      return lock_dependency(dep, requested, "pyproject.toml");
    }
    if (auto* revision = std::get_if<RevisionSpec>(&requirement.spec)) {
      Dependency dep{repo, revision->revision};
      return lock_dependency(dep, requested, "pyproject.toml");
    }
    const Bounds& bounds = std::get<BoundsSpec>(requirement.spec).bounds;
    // A kept entry: the highest locked release of this repository that still satisfies the bounds.
    if (may_keep(repo)) {
      std::optional<std::pair<Release, Dependency>> best;
      for (const auto& [dep, commit] : m_existing) {
        if (dep.repo_id != repo || dep.is_major()) continue;
        auto release = parse_release_tag(dep.revision());
        if (release && bounds.matches(*release) && (!best || *release > best->first)) best.emplace(*release, dep);
      }
      if (best) return lock_dependency(best->second, requested, "pyproject.toml");
    }
    // Refs first: a repository that does not exist is "not found", not "untrusted" (whose hint,
    // --trust, would only lead to "not found").
    KB_TRY_ASSIGN(const hub::Refs* refs, refs_of(repo));
    KB_TRY(check_trust(repo));
    auto majors = version_branches(*refs);
    std::optional<Release> chosen;
    std::vector<std::string> releases, unpublished;
    for (const auto& [tag, commit] : refs->tags) {
      auto release = parse_release_tag(tag);
      if (!release) continue;
      bool has_branch = std::binary_search(majors.begin(), majors.end(), release->major);
      (has_branch ? releases : unpublished).push_back(tag);
      if (has_branch && bounds.matches(*release) && (!chosen || *release > *chosen)) chosen = release;
    }
    if (!chosen) {
      std::string hint = "release tags of " + repo + ": " + list_or_none(releases);
      if (!unpublished.empty())
        hint += "; not considered because their major version has no branch vN: " + list_or_none(unpublished);
      return fail(resolution_error("no release of " + repo + " satisfies \"" + bounds.text + "\"", hint));
    }
    Dependency dep{repo, chosen->tag()};
    m_resolved_commit[dep] = {refs->tags.at(chosen->tag()), "tag " + chosen->tag()};
    return lock_dependency(dep, requested, "pyproject.toml");
  }

  std::vector<ResolvedDependency> take() {
    std::vector<ResolvedDependency> out;
    for (auto& [dep, resolved] : m_locked) out.push_back(std::move(resolved));
    return out;
  }

 private:
  bool may_keep(const std::string& repo) const { return !m_options.upgrade_all && !m_options.upgrade.count(repo); }

  void progress(const std::string& line) const {
    if (m_options.progress) m_options.progress(line);
  }

  Result<void> check_trust(const std::string& repo) {
    std::string ns = ns_of(repo);
    if (m_options.trusted.count(ns) || m_options.trusted.count(repo)) return {};
    auto cached = m_trust.find(ns);
    if (cached == m_trust.end()) {
      KB_TRY_ASSIGN(bool trusted, m_index.trusted_publisher(ns));
      cached = m_trust.emplace(ns, trusted).first;
    }
    if (cached->second) return {};
    return fail(resolution_error("kernel repository " + repo + " is not from a trusted publisher (" + ns +
                                     " is not marked trustedKernelPublisher), so it is not locked",
                                 "if you trust its code, pass --trust " + ns + " (or --trust " + repo +
                                     "); on `kbuild hub serve`, an administrator marks the organisation with "
                                     "`kbuild hub org " +
                                     ns + " --trusted --root DIR`"));
  }

  Result<const hub::Refs*> refs_of(const std::string& repo) {
    auto it = m_refs.find(repo);
    if (it == m_refs.end()) {
      progress("listing the versions of " + repo);
      KB_TRY_ASSIGN(hub::Refs refs, m_index.refs(repo));
      it = m_refs.emplace(repo, std::move(refs)).first;
    }
    return &it->second;
  }

  void notice_newer_major(const Dependency& dep, const std::vector<std::uint64_t>& majors) const {
    if (!majors.empty() && majors.back() > dep.major() && m_options.warn)
      m_options.warn("using version " + std::to_string(dep.major()) + " of " + dep.repo_id + ", but version " +
                     std::to_string(majors.back()) + " is available");
  }

  // The commit a dependency resolves to now (kept or fresh), and where it came from.
  Result<std::pair<std::string, std::string>> commit_of(const Dependency& dep, bool& kept) {
    kept = false;
    if (auto it = m_resolved_commit.find(dep); it != m_resolved_commit.end()) return it->second;
    if (may_keep(dep.repo_id))
      if (auto it = m_existing.find(dep); it != m_existing.end()) {
        kept = true;
        // A kept major still hears of a newer one, as `kernels` says it; the notice is best effort
        // (refs that cannot be read change nothing about the kept commit).
        if (dep.is_major())
          if (auto refs = refs_of(dep.repo_id)) notice_newer_major(dep, version_branches(**refs));
        return std::pair(it->second, std::string("kernels.lock"));
      }
    if (!dep.is_major() && is_commit_id(dep.revision()))  // kernels writes commit ids in lowercase
      return std::pair(util::ascii_lowercase(dep.revision()), std::string("commit"));
    KB_TRY_ASSIGN(const hub::Refs* refs, refs_of(dep.repo_id));
    if (dep.is_major()) {
      std::string branch = "v" + std::to_string(dep.major());
      auto majors = version_branches(*refs);
      auto it = refs->branches.find(branch);
      if (it == refs->branches.end()) {
        std::vector<std::string> names;
        for (auto major : majors) names.push_back(std::to_string(major));
        return fail(resolution_error("version " + std::to_string(dep.major()) + " of " + dep.repo_id + " not found",
                                     "available versions: " + list_or_none(names) +
                                         (names.empty() ? " (no branch vN; was the kernel published?)" : "")));
      }
      notice_newer_major(dep, majors);
      return std::pair(it->second, "branch " + branch);
    }
    if (auto it = refs->branches.find(dep.revision()); it != refs->branches.end())
      return std::pair(it->second, "branch " + dep.revision());
    if (auto it = refs->tags.find(dep.revision()); it != refs->tags.end())
      return std::pair(it->second, "tag " + dep.revision());
    std::vector<std::string> branches, tags;
    for (const auto& [name, commit] : refs->branches) branches.push_back(name);
    for (const auto& [name, commit] : refs->tags) tags.push_back(name);
    return fail(resolution_error("no branch or tag \"" + dep.revision() + "\" in " + dep.repo_id,
                                 "branches: " + list_or_none(branches) + "; tags: " + list_or_none(tags)));
  }

  Result<void> lock_dependency(const Dependency& dep, const std::string& requested, const std::string& required_by) {
    if (auto it = m_locked.find(dep); it != m_locked.end()) {
      auto& by = it->second.required_by;
      if (std::find(by.begin(), by.end(), required_by) == by.end()) by.push_back(required_by);
      return {};
    }
    if (auto cycle = std::find(m_stack.begin(), m_stack.end(), dep); cycle != m_stack.end()) {
      std::vector<std::string> path;
      for (auto it = cycle; it != m_stack.end(); ++it) path.push_back(it->str());
      path.push_back(dep.str());
      return fail(resolution_error("cyclic kernel dependency: " + util::join(path, " -> "),
                                   "a kernel cannot depend on itself, directly or through others"));
    }
    bool kept = false;
    auto resolved = commit_of(dep, kept);  // before trust: a missing repo is "not found"
    if (!resolved) return fail(required(resolved.error(), dep, required_by));
    if (auto trusted = check_trust(dep.repo_id); !trusted) return fail(required(trusted.error(), dep, required_by));
    auto [commit, source] = *resolved;
    progress("locking " + dep.str() + " at " + commit.substr(0, 12) + " (" + source + ")");
    m_stack.push_back(dep);
    KB_TRY_ASSIGN(auto variants, lock_variants(dep, commit, source, required_by));
    m_stack.pop_back();
    ResolvedDependency out;
    out.entry = {dep, commit};
    out.requested = requested;
    out.source = source;
    out.kept = kept;
    out.variants = std::move(variants);
    out.required_by = {required_by};
    m_locked.emplace(dep, std::move(out));
    return {};
  }

  // `error`, met while locking `dep`, naming the kernel that required it (a transitive dependency is
  // not in the user's pyproject.toml, so the user could not tell where it came from).
  static Error required(Error error, const Dependency& dep, const std::string& required_by) {
    if (required_by != "pyproject.toml") {
      error.message += " (required by " + required_by + ")";
      if (error.hint.empty()) error.hint = "the kernel " + required_by + " needs a new release that names " + dep.str();
    }
    return error;
  }

  // The valid variant names of `dep` at `commit`, after locking what each variant's metadata requires.
  // Its own errors name `required_by`; a dependency's errors name their own.
  Result<std::vector<std::string>> lock_variants(const Dependency& dep, const std::string& commit,
                                                 const std::string& source, const std::string& required_by) {
    // A 404 here, once the repository's refs or the spec named this commit, means the commit (or a
    // file of it) does not exist: the dependency's fault, which no retry fixes (exit 1, not 4).
    auto mine = [&](Error error) {
      if (error.kind == ErrorKind::http && error.http_status == 404) {
        error.code = ExitCode::failure;
        error.message = dep.str() + " (commit " + commit + ") not found on the Hub: " + error.message;
      }
      return fail(required(std::move(error), dep, required_by));
    };
    auto names = m_index.variant_dirs(dep.repo_id, commit);
    if (!names) return mine(names.error());
    std::sort(names->begin(), names->end());
    std::vector<std::string> variants;
    for (const auto& name : *names) {
      if (!parse_loader_variant(name)) {
        if (m_options.warn)
          m_options.warn(dep.repo_id + " (revision " + commit + ") contains an invalid build variant \"" + name +
                         "\"; ignored");
        continue;
      }
      variants.push_back(name);
      std::string path = "build/" + name + "/metadata.json";
      auto text = m_index.read_file(dep.repo_id, commit, path);
      if (!text) return mine(text.error());
      auto metadata = layout::Metadata::parse(*text);
      if (!metadata)
        return mine(resolution_error(
            dep.repo_id + "@" + commit.substr(0, 12) + ": " + path + " is invalid: " + metadata.error().message,
            "the kernel's publisher has to fix this build"));
      for (const auto& kd : metadata->kernel_depends) {
        Dependency child{kd.repo_id,
                         kd.version ? std::variant<std::uint64_t, std::string>(static_cast<std::uint64_t>(*kd.version))
                                    : std::variant<std::uint64_t, std::string>(*kd.revision)};
        KB_TRY(lock_dependency(child, child.str(), dep.str()));
      }
    }
    if (variants.empty())
      return mine(resolution_error(dep.repo_id + "@" + commit.substr(0, 12) + " (" + source +
                                       ") holds no build variant (no build/<variant>/ directory)",
                                   "the kernels loader would find nothing to load there; lock a version that was "
                                   "published with its build/ (kbuild publish)"));
    return variants;
  }

  const LockOptions& m_options;
  KernelIndex& m_index;
  std::map<Dependency, std::string> m_existing;
  std::map<Dependency, std::pair<std::string, std::string>> m_resolved_commit;  // from bounds
  std::map<Dependency, ResolvedDependency> m_locked;
  std::vector<Dependency> m_stack;
  std::map<std::string, hub::Refs> m_refs;
  std::map<std::string, bool> m_trust;
};

}  // namespace

Result<LockOutcome> resolve_lock(const std::vector<Requirement>& requirements, const std::vector<LockEntry>& existing,
                                 const LockOptions& options, KernelIndex& index) {
  Resolver resolver(existing, options, index);
  // Every requirement is tried, so that one run reports every dependency that cannot be locked.
  std::vector<Error> errors;
  for (const auto& requirement : requirements)
    if (auto locked = resolver.lock_requirement(requirement); !locked) errors.push_back(locked.error());
  if (errors.size() == 1) return fail(errors.front());
  if (!errors.empty()) return fail(combined_error(errors));
  LockOutcome outcome;
  outcome.dependencies = resolver.take();
  std::vector<LockEntry> entries;
  for (const auto& dep : outcome.dependencies) entries.push_back(dep.entry);
  outcome.text = render_lockfile(std::move(entries));
  return outcome;
}

}  // namespace kbuild::lock
