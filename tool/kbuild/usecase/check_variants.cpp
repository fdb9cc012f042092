#include "kbuild/usecase/check_variants.hpp"

#include <map>

#include "kbuild/layout/signature.hpp"
#include "kbuild/usecase/freshness.hpp"
#include "kbuild/usecase/kernel_source.hpp"

namespace kbuild::usecase {

namespace {

std::map<std::string, std::vector<layout::CheckIssue>> freshness_issues(const CheckRequest& request, Services& services,
                                                                        const std::vector<std::string>& names) {
  std::map<std::string, std::vector<layout::CheckIssue>> out;
  if (!services.fs.stat(request.kernel_dir / "build.toml").exists) return out;
  auto config = load_kernel(services.fs, request.kernel_dir, {});
  if (!config) return out;
  auto freshness = variant_freshness(services.fs, request.kernel_dir, *config, names);
  if (!freshness) return out;
  for (const auto& entry : *freshness) {
    if (entry.state == VariantFreshness::State::current) continue;
    bool stale = entry.state == VariantFreshness::State::stale;
    layout::CheckIssue issue;
    issue.error = stale && !request.allow_stale;
    issue.where = entry.variant;
    issue.message = (stale ? "older than the sources: " : "not compared with the sources: ") + entry.reason +
                    (stale ? "; run kbuild build" : "");
    out[entry.variant].push_back(std::move(issue));
  }
  return out;
}

}  // namespace

Result<CheckOutcome> check_variants(const CheckRequest& request, Services& services) {
  if (!layout::is_known_manylinux_policy(request.manylinux))
    return fail("unknown --manylinux policy " + request.manylinux, "use manylinux_2_28 or none", ExitCode::usage);
  CheckOutcome outcome;
  outcome.build_dir = request.kernel_dir / "build";
  auto entries = services.fs.list_dir(outcome.build_dir);
  if (!entries) return fail("no build/ in " + request.kernel_dir.string(), "run kbuild build first", ExitCode::usage);
  std::vector<std::string> names;
  for (const auto& entry : *entries)
    if (entry.is_dir && !entry.name.starts_with(".")) names.push_back(entry.name);
  if (names.empty()) return fail("build/ holds no variants", "run kbuild build first", ExitCode::usage);
  layout::CheckOptions check_options;
  check_options.manylinux = request.manylinux;
  auto freshness = freshness_issues(request, services, names);
  for (const auto& name : names) {
    CheckedVariant checked{name, freshness[name], ""};
    auto layout_issues = layout::check_variant(services.fs, outcome.build_dir / name, check_options);
    checked.issues.insert(checked.issues.end(), layout_issues.begin(), layout_issues.end());
    for (const auto& issue : checked.issues) (issue.error ? outcome.errors : outcome.warnings)++;
    checked.signature = layout::to_string(layout::signature_status(services.fs, outcome.build_dir / name).state);
    outcome.variants.push_back(std::move(checked));
  }
  return outcome;
}

}  // namespace kbuild::usecase
