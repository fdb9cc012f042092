#include "kbuild/usecase/rebuild_check.hpp"

#include <algorithm>
#include <set>

#include "kbuild/config/variant.hpp"
#include "kbuild/layout/metadata.hpp"
#include "kbuild/usecase/build.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::usecase {

namespace fs = std::filesystem;

namespace {

// Every regular file below `dir`, relative to it.
void collect_files(const util::FileSystem& fs, const fs::path& dir, const std::string& prefix,
                   std::set<std::string>& out) {
  auto entries = fs.list_dir(dir);
  if (!entries) return;
  for (const auto& entry : *entries) {
    const std::string rel = prefix.empty() ? entry.name : prefix + "/" + entry.name;
    if (entry.is_dir && !entry.is_symlink)
      collect_files(fs, dir / entry.name, rel, out);
    else
      out.insert(rel);
  }
}

// The variants a matrix build with --locked made (metadata.json names a pinned host toolchain).
bool built_from_pins(const util::FileSystem& fs, const fs::path& variant_dir) {
  auto text = fs.read_file(variant_dir / "metadata.json");
  if (!text) return false;
  auto metadata = layout::Metadata::parse(*text);
  return metadata && metadata->toolchain && metadata->toolchain->compiler_origin.starts_with("pinned:");
}

Result<std::vector<std::string>> variants_to_check(const RebuildCheckRequest& request, Services& services) {
  const fs::path build_dir = request.kernel_dir / "build";
  std::vector<std::string> present;
  if (auto entries = services.fs.list_dir(build_dir))
    for (const auto& entry : *entries)
      if (entry.is_dir && services.fs.stat(build_dir / entry.name / "metadata.json").is_file)
        present.push_back(entry.name);
  std::sort(present.begin(), present.end());
  if (request.variants.empty()) {
    if (present.empty())
      return fail("no built variants in " + build_dir.string(), "run `kbuild build` first", ExitCode::usage);
    return present;
  }
  for (const auto& name : request.variants)
    if (std::find(present.begin(), present.end(), name) == present.end()) {
      std::string suggestion = util::closest_match(name, present);
      return fail("variant " + name + " is not in " + build_dir.string(),
                  (suggestion.empty() ? "" : "did you mean " + suggestion + "? ") +
                      "build it first, or check one of: " +
                      (present.empty() ? std::string("(none built)") : util::join(present, ", ")),
                  ExitCode::usage);
    }
  return request.variants;
}

}  // namespace

std::string first_difference(const util::FileSystem& fs, const fs::path& built, const fs::path& rebuilt) {
  std::set<std::string> ours, theirs;
  collect_files(fs, built, "", ours);
  collect_files(fs, rebuilt, "", theirs);
  std::set<std::string> all(ours);
  all.insert(theirs.begin(), theirs.end());
  for (const auto& rel : all) {
    if (!theirs.count(rel)) return rel + " is not in the rebuild";
    if (!ours.count(rel)) return "the rebuild has " + rel + ", which the variant lacks";
    auto a = fs.read_file(built / rel);
    auto b = fs.read_file(rebuilt / rel);
    if (!a || !b) return rel + " cannot be read";
    if (*a == *b) continue;
    auto mismatch = std::mismatch(a->begin(), a->end(), b->begin(), b->end());
    return rel + " differs from the rebuild's at byte " + std::to_string(mismatch.first - a->begin()) + " (" +
           std::to_string(a->size()) + " vs " + std::to_string(b->size()) + " bytes)";
  }
  return "";
}

Result<RebuildCheckOutcome> check_rebuild(const RebuildCheckRequest& request, Services& services) {
  KB_TRY_ASSIGN(auto names, variants_to_check(request, services));
  const fs::path scratch = request.kernel_dir / ".kbuild" / "rebuild";
  KB_TRY(services.fs.remove_all(scratch));
  std::vector<std::string> pinned, local;
  for (const auto& name : names)
    (built_from_pins(services.fs, request.kernel_dir / "build" / name) ? pinned : local).push_back(name);
  for (const auto* group : {&pinned, &local}) {
    if (group->empty()) continue;
    BuildRequest build_request;
    build_request.kernel_dir = request.kernel_dir;
    build_request.jobs = request.jobs;
    build_request.python = request.python;
    build_request.use_cache = false;
    build_request.builder_version = request.builder_version;
    build_request.manylinux = request.manylinux;
    build_request.matrix = group == &pinned;
    build_request.locked = group == &pinned;
    if (group == &pinned) {
      build_request.filter.variants = *group;
    } else {
      // A local build makes one variant per backend: only those of the variants build/ holds.
      for (const auto& name : *group)
        if (auto variant = config::Variant::parse(name)) {
          std::string backend = config::to_string(variant->backend);
          if (std::find(build_request.backends.begin(), build_request.backends.end(), backend) ==
              build_request.backends.end())
            build_request.backends.push_back(backend);
        }
    }
    build_request.work_dir = scratch / (group == &pinned ? "work-matrix" : "work-local");
    build_request.output_dir = scratch / "build";
    // An error, Ctrl-C included, leaves no rebuild behind.
    if (auto built = build(build_request, services); !built) {
      (void)services.fs.remove_all(scratch);
      return fail(built.error());
    }
  }
  RebuildCheckOutcome outcome;
  for (const auto& name : names) {
    RebuiltVariant variant{
        name, first_difference(services.fs, request.kernel_dir / "build" / name, scratch / "build" / name)};
    if (!variant.difference.empty()) ++outcome.differing;
    outcome.variants.push_back(std::move(variant));
  }
  (void)services.fs.remove_all(scratch);
  return outcome;
}

}  // namespace kbuild::usecase
