// kbuild versions REPO and kbuild info REPO: what a kernel repository publishes, and what this
// machine would load from it.

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "kbuild/cli/command.hpp"
#include "kbuild/usecase/inspect.hpp"
#include "kbuild/util/strings.hpp"
#include "kbuild/util/version.hpp"

namespace kbuild::cli {

namespace {

using ordered_json = nlohmann::ordered_json;

struct InspectCliOptions {
  std::string repo_id;
  std::optional<std::uint64_t> version;
  std::optional<std::string> revision;
  std::string python;
  std::optional<std::string> endpoint;
  bool json = false;
  bool explain = false;
  bool offline = false;
  bool verbose = false;
};

usecase::InspectRequest inspect_request(const InspectCliOptions& options, Services& services) {
  usecase::InspectRequest request;
  request.target = options.repo_id;
  request.version = options.version;
  request.revision = options.revision;
  // An unreadable user config leaves python3; a Python without Torch is only a note in the outcome.
  request.python = python_setting(options.python, services).value_or("python3");
  request.endpoint = options.endpoint;
  request.offline = options.offline;
  return request;
}

ordered_json choice_json(const lock::VariantChoice& choice) {
  ordered_json decisions = ordered_json::array();
  for (const auto& d : choice.decisions)
    decisions.push_back({{"variant", d.variant.name}, {"accepted", d.accepted}, {"reason", d.reason}});
  return {{"variants", choice.variants},
          {"loads", choice.chosen ? ordered_json(*choice.chosen) : ordered_json(nullptr)},
          {"decisions", decisions}};
}

std::string loads_text(const lock::VariantChoice& choice, bool system_known) {
  if (!system_known) return "";
  return choice.chosen ? "this machine loads " + *choice.chosen : "nothing for this machine";
}

void print_decisions(const lock::VariantChoice& choice, const std::string& indent) {
  for (const auto& d : choice.decisions)
    fmt::print("{}{} {}\n", indent, d.accepted ? "+" : "-",
               d.accepted ? d.variant.name + (choice.chosen == d.variant.name ? " (preferred)" : " (compatible)")
                          : d.variant.name + ": " + d.reason);
}

Result<ExitCode> run_versions(const InspectCliOptions& options, Services& services) {
  log_requests(options.verbose);
  LogReporter reporter(false);
  auto use_case_services = services.with(reporter);
  KB_TRY_ASSIGN(auto outcome, usecase::versions(inspect_request(options, services), use_case_services));
  const auto& report = outcome.report;
  const auto& system = outcome.system;
  const auto& note = outcome.system_note;

  if (options.json) {
    ordered_json versions = ordered_json::array();
    auto release_json = [](const lock::ReleaseInfo& r) {
      ordered_json j = {{"tag", r.tag}, {"commit", r.commit}};
      j.update(choice_json(r.choice));
      return j;
    };
    for (const auto& v : report.versions) {
      ordered_json j = {{"version", v.major}, {"branch", "v" + std::to_string(v.major)}, {"commit", v.commit}};
      j.update(choice_json(v.choice));
      j["releases"] = ordered_json::array();
      for (const auto& r : v.releases) j["releases"].push_back(release_json(r));
      versions.push_back(j);
    }
    ordered_json orphans = ordered_json::array();
    for (const auto& r : report.orphan_releases) orphans.push_back(release_json(r));
    ordered_json j = {{"repo_id", report.repo_id},
                      {"endpoint", outcome.endpoint},
                      {"system", system ? ordered_json(system->describe()) : ordered_json(nullptr)},
                      {"versions", versions},
                      {"orphan_releases", orphans},
                      {"other_branches", report.other_branches},
                      {"other_tags", report.other_tags}};
    print_json_document(j.dump(2));
    return ExitCode::ok;
  }
  fmt::print("{} ({})\n", report.repo_id, outcome.endpoint);
  fmt::print("this machine: {}\n", system ? system->describe() : "unknown (" + note + ")");
  if (report.versions.empty()) fmt::print("no versions: the repository has no branch vN\n");
  for (const auto& v : report.versions) {
    fmt::print("\nv{}  {}  {} variant{}  {}\n", v.major, v.commit.substr(0, 12), v.choice.variants.size(),
               v.choice.variants.size() == 1 ? "" : "s", loads_text(v.choice, system.has_value()));
    if (options.explain) print_decisions(v.choice, "    ");
    for (const auto& r : v.releases)
      fmt::print("    {:<10} {}  {}\n", r.tag, r.commit.substr(0, 12),
                 r.commit == v.commit ? "(the branch head)" : loads_text(r.choice, system.has_value()));
  }
  if (!report.orphan_releases.empty()) {
    std::vector<std::string> tags;
    for (const auto& r : report.orphan_releases) tags.push_back(r.tag);
    fmt::print("\nreleases without a version branch (not used by version bounds): {}\n", util::join(tags, ", "));
  }
  if (!report.other_branches.empty()) fmt::print("other branches: {}\n", util::join(report.other_branches, ", "));
  if (!report.other_tags.empty()) fmt::print("other tags: {}\n", util::join(report.other_tags, ", "));
  return ExitCode::ok;
}

// Capabilities in numeric order (7.5 before 10.0), which is how build.toml and kernel-builder list them.
std::vector<std::string> sorted_archs(std::vector<std::string> archs) {
  std::stable_sort(archs.begin(), archs.end(), [](const std::string& a, const std::string& b) {
    auto va = util::Version::parse(a), vb = util::Version::parse(b);
    return va && vb ? *va < *vb : a < b;
  });
  return archs;
}

ordered_json metadata_json(const layout::Metadata& m) {
  ordered_json deps = ordered_json::array();
  for (const auto& d : m.kernel_depends) {
    ordered_json j = {{"repo-id", d.repo_id}};
    if (d.version) j["version"] = *d.version;
    if (d.revision) j["revision"] = *d.revision;
    deps.push_back(j);
  }
  ordered_json j = {{"name", m.name},
                    {"id", m.id},
                    {"version", m.version},
                    {"license", m.license},
                    {"backend", config::to_string(m.backend)},
                    {"archs", sorted_archs(m.archs)},
                    {"python-depends", m.python_depends},
                    {"kernel-depends", deps},
                    {"digest", m.digest ? ordered_json({{"algorithm", m.digest_algorithm}, {"files", m.digest->size()}})
                                        : ordered_json(nullptr)},
                    {"builder", m.builder_version}};
  if (m.kernel) j["kernel_commit"] = {{"commit", m.kernel->commit}, {"dirty", m.kernel->dirty}};
  return j;
}

// A local kernel directory (`kbuild info ./my-kernel`, as `kernels info` takes one): a path written
// as one, or an existing directory with a build.toml or build/.
Result<ExitCode> run_info(const InspectCliOptions& options, Services& services) {
  log_requests(options.verbose);
  LogReporter reporter(false);
  auto use_case_services = services.with(reporter);
  KB_TRY_ASSIGN(auto outcome, usecase::info(inspect_request(options, services), use_case_services));
  const auto& report = outcome.report;
  const auto& system = outcome.system;
  const auto& note = outcome.system_note;

  if (options.json) {
    ordered_json variants = ordered_json::array();
    for (const auto& v : report.variants) {
      ordered_json j = {{"variant", v.name}, {"files", v.files}, {"bytes", v.bytes}, {"signed", v.has_signature}};
      if (v.metadata)
        j["metadata"] = metadata_json(*v.metadata);
      else
        j["metadata_error"] = v.metadata_error;
      variants.push_back(j);
    }
    ordered_json j = {{"repo_id", report.repo_id},
                      {"revision", report.revision},
                      {"source", report.source},
                      {"commit", report.commit},
                      {"variants", variants}};
    j["system"] = system ? ordered_json(system->describe()) : ordered_json(nullptr);
    j.update(choice_json(report.choice));
    j.erase("variants");
    j["variants"] = variants;
    print_json_document(j.dump(2));
    return ExitCode::ok;
  }
  if (report.commit.empty())
    fmt::print("{} ({}: {})\n", report.repo_id, report.source, report.revision);
  else
    fmt::print("{} @ {} ({}) = {}\n", report.repo_id, report.revision, report.source, report.commit);
  fmt::print("this machine: {}{}\n", system ? system->describe() : "unknown (" + note + ")",
             system ? (report.choice.chosen ? ", loads " + *report.choice.chosen : ", loads none of these") : "");
  for (const auto& v : report.variants) {
    fmt::print("\n{}{}\n", v.name, report.choice.chosen == v.name ? "  (loaded here)" : "");
    fmt::print("    {} file{}, {}, {}\n", v.files, v.files == 1 ? "" : "s", util::human_size(v.bytes),
               v.has_signature ? "signed (metadata.json.sigstore)" : "unsigned");
    if (!v.metadata) {
      fmt::print("    metadata.json: {}\n", v.metadata_error);
      continue;
    }
    const auto& m = *v.metadata;
    fmt::print("    id {}, version {}, license {}, backend {}{}\n", m.id, m.version, m.license,
               config::to_string(m.backend),
               m.archs.empty() ? "" : " (" + util::join(sorted_archs(m.archs), " ") + ")");
    std::vector<std::string> deps;
    for (const auto& d : m.kernel_depends)
      deps.push_back(d.repo_id + "@" + (d.version ? std::to_string(*d.version) : d.revision.value_or("")));
    fmt::print("    python-depends: {}; kernel-depends: {}\n",
               m.python_depends.empty() ? "none" : util::join(m.python_depends, ", "),
               deps.empty() ? "none" : util::join(deps, ", "));
    fmt::print("    digest: {}; built by {}{}\n",
               m.digest ? m.digest_algorithm + ", " + std::to_string(m.digest->size()) + " files" : "none",
               m.builder_version.empty() ? "unknown" : m.builder_version,
               m.kernel ? " from " + m.kernel->commit.substr(0, 12) + (m.kernel->dirty ? " (dirty)" : "") : "");
  }
  if (options.explain && system) {
    fmt::print("\nvariant selection on this machine:\n");
    print_decisions(report.choice, "    ");
  }
  return ExitCode::ok;
}

void add_common(CLI::App* cmd, InspectCliOptions& options) {
  cmd->add_option("repo_id", options.repo_id,
                  "Kernel repository, namespace/name (info: or a local kernel directory, e.g. ./my-kernel)")
      ->required();
  cmd->add_option("--python", options.python,
                  std::string("The interpreter whose Torch decides what this machine loads") + k_python_help_suffix);
  cmd->add_option("--endpoint", options.endpoint, "Hub URL (default: $HF_ENDPOINT or https://huggingface.co)");
  cmd->add_flag("--offline", options.offline,
                "Read the Hugging Face cache instead of the Hub: what was downloaded, and the branches and tags its "
                "refs name (also HF_HUB_OFFLINE=1)");
  cmd->add_flag("--json", options.json, "Print as JSON");
  cmd->add_flag("--explain", options.explain, "Say for every variant why this machine would or would not load it");
  cmd->add_flag("-v,--verbose", options.verbose, "Print every request (the token is never printed)");
}

}  // namespace

void register_versions(CLI::App& app, CommandAction& action) {
  auto options = std::make_shared<InspectCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "versions", "List a kernel's versions (branches vN) and releases (tags vX.Y.Z), and what this machine loads");
  add_common(cmd, *options);
  cmd->callback([options, &action] { action = [options](Services& s) { return run_versions(*options, s); }; });

  auto info = std::make_shared<InspectCliOptions>();
  CLI::App* info_cmd =
      app.add_subcommand("info", "Describe the variants of one revision of a kernel (default: its latest version)");
  add_common(info_cmd, *info);
  info_cmd->add_option("--version", info->version, "A version N (branch vN)");
  info_cmd->add_option("--revision", info->revision, "A branch, tag or commit");
  info_cmd->callback([info, &action] { action = [info](Services& s) { return run_info(*info, s); }; });
}

}  // namespace kbuild::cli
