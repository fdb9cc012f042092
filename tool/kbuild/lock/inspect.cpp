#include "kbuild/lock/inspect.hpp"

#include <algorithm>
#include <map>

#include "kbuild/lock/version_spec.hpp"

namespace kbuild::lock {

namespace {

// Variant listings per commit: tags often point at a branch head, so each commit is listed once.
class ChoiceCache {
 public:
  ChoiceCache(const std::string& repo, const std::optional<SystemFacts>& system, KernelIndex& index)
      : m_repo(repo), m_system(system), m_index(index) {}

  Result<VariantChoice> get(const std::string& commit) {
    if (auto it = m_cache.find(commit); it != m_cache.end()) return it->second;
    KB_TRY_ASSIGN(auto names, m_index.variant_dirs(m_repo, commit));
    std::sort(names.begin(), names.end());
    VariantChoice choice;
    choice.variants = names;
    if (m_system) choice.chosen = select_variant(names, *m_system, &choice.decisions);
    m_cache.emplace(commit, choice);
    return choice;
  }

 private:
  std::string m_repo;
  const std::optional<SystemFacts>& m_system;
  KernelIndex& m_index;
  std::map<std::string, VariantChoice> m_cache;
};

}  // namespace

Result<VersionsReport> list_versions(const std::string& repo_id, const std::optional<SystemFacts>& system,
                                     KernelIndex& index) {
  KB_TRY_ASSIGN(hub::Refs refs, index.refs(repo_id));
  ChoiceCache choices(repo_id, system, index);
  VersionsReport report;
  report.repo_id = repo_id;
  std::map<std::uint64_t, VersionInfo> versions;
  for (const auto& [branch, commit] : refs.branches) {
    auto major = parse_version_branch(branch);
    if (!major) {
      report.other_branches.push_back(branch);
      continue;
    }
    VersionInfo info;
    info.major = *major;
    info.commit = commit;
    KB_TRY_ASSIGN(info.choice, choices.get(commit));
    versions[*major] = std::move(info);
  }
  std::vector<std::pair<Release, std::string>> releases;
  for (const auto& [tag, commit] : refs.tags) {
    if (auto release = parse_release_tag(tag))
      releases.emplace_back(*release, commit);
    else
      report.other_tags.push_back(tag);
  }
  std::sort(releases.begin(), releases.end());
  for (const auto& [release, commit] : releases) {
    ReleaseInfo info{release.tag(), commit, {}};
    KB_TRY_ASSIGN(info.choice, choices.get(commit));
    auto it = versions.find(release.major);
    (it == versions.end() ? report.orphan_releases : it->second.releases).push_back(std::move(info));
  }
  for (auto& [major, info] : versions) report.versions.push_back(std::move(info));
  return report;
}

Result<RevisionReport> describe_revision(const std::string& repo_id, const RevisionSelector& selector,
                                         const std::optional<SystemFacts>& system, KernelIndex& index) {
  RevisionReport report;
  report.repo_id = repo_id;
  if (selector.revision && is_commit_id(*selector.revision)) {
    report.revision = *selector.revision;
    report.commit = *selector.revision;
    std::transform(report.commit.begin(), report.commit.end(), report.commit.begin(), ::tolower);
    report.source = "commit";
  } else {
    KB_TRY_ASSIGN(hub::Refs refs, index.refs(repo_id));
    std::vector<std::string> branches;
    for (const auto& [branch, commit] : refs.branches)
      if (parse_version_branch(branch)) branches.push_back(branch);
    if (selector.revision) {
      report.revision = *selector.revision;
      if (auto it = refs.branches.find(*selector.revision); it != refs.branches.end()) {
        report.commit = it->second;
        report.source = "branch " + it->first;
      } else if (auto tag = refs.tags.find(*selector.revision); tag != refs.tags.end()) {
        report.commit = tag->second;
        report.source = "tag " + tag->first;
      } else {
        return fail("no branch or tag \"" + *selector.revision + "\" in " + repo_id,
                    "`kbuild versions " + repo_id + "` lists them");
      }
    } else {
      std::optional<std::uint64_t> major = selector.major;
      if (!major) {
        for (const auto& branch : branches) major = std::max(major.value_or(0), *parse_version_branch(branch));
        if (!major) return fail(repo_id + " has no version branch (vN)", "it was never published with a version");
      }
      std::string branch = "v" + std::to_string(*major);
      auto it = refs.branches.find(branch);
      if (it == refs.branches.end())
        return fail("version " + std::to_string(*major) + " of " + repo_id + " not found",
                    "`kbuild versions " + repo_id + "` lists the versions");
      report.revision = branch;
      report.commit = it->second;
      report.source = "branch " + branch;
    }
  }
  ChoiceCache choices(repo_id, system, index);
  KB_TRY_ASSIGN(report.choice, choices.get(report.commit));
  KB_TRY_ASSIGN(auto files, report.choice.variants.empty()
                                ? Result<std::vector<hub::RemoteFile>>(std::vector<hub::RemoteFile>{})
                                : index.list_files(repo_id, report.commit, "build"));
  for (const auto& name : report.choice.variants) {
    VariantDetails details;
    details.name = name;
    std::string prefix = "build/" + name + "/";
    for (const auto& file : files) {
      if (!file.path.starts_with(prefix)) continue;
      ++details.files;
      details.bytes += file.size;
      if (file.path == prefix + "metadata.json.sigstore") details.has_signature = true;
    }
    auto text = index.read_file(repo_id, report.commit, prefix + "metadata.json");
    if (!text) {
      details.metadata_error = text.error().message;
    } else if (auto metadata = layout::Metadata::parse(*text)) {
      details.metadata = std::move(*metadata);
    } else {
      details.metadata_error = metadata.error().message;
    }
    report.variants.push_back(std::move(details));
  }
  return report;
}

}  // namespace kbuild::lock
