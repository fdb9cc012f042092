#include "kbuild/usecase/freshness.hpp"

#include <algorithm>
#include <set>

#include "kbuild/config/variant.hpp"
#include "kbuild/exec/build_state.hpp"
#include "kbuild/layout/metadata.hpp"
#include "kbuild/layout/signature.hpp"
#include "kbuild/plan/planner.hpp"
#include "kbuild/usecase/kernel_source.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::usecase {

namespace {

namespace fs = std::filesystem;

std::string shown(const std::string& path, const fs::path& kernel_dir) {
  fs::path normal = fs::path(path).lexically_normal();
  fs::path rel = normal.lexically_relative(kernel_dir);
  return !rel.empty() && !rel.string().starts_with("..") ? rel.string() : normal.string();
}

// Why a recorded job no longer matches its files, or an empty string. `same_content` holds the kernel's
// sources whose content is the last build's (an edit that was reverted): a new mtime alone is no change.
std::string record_mismatch(const exec::JobRecord& record, exec::StatCache& stats, const fs::path& kernel_dir,
                            const std::set<std::string>& same_content) {
  for (const auto& output : record.outputs) {
    const util::FileStat& st = stats.stat(output.path);
    if (!st.exists) return shown(output.path, kernel_dir) + " is missing";
    if (st.mtime_ns != output.mtime_ns || st.size != output.size)
      return shown(output.path, kernel_dir) + " was modified after the build";
  }
  for (const auto& input : record.inputs) {
    const util::FileStat& st = stats.stat(input.path);
    if (!st.exists) return shown(input.path, kernel_dir) + " is gone";
    if ((st.mtime_ns != input.mtime_ns || st.size != input.size) &&
        !same_content.count(fs::path(input.path).lexically_normal().string()))
      return shown(input.path, kernel_dir) + " changed since the build";
  }
  return "";
}

VariantFreshness judge(const std::string& variant, const exec::BuildState& state, exec::StatCache& stats,
                       const fs::path& kernel_dir, const std::string& sources_changed,
                       const std::set<std::string>& same_content) {
  VariantFreshness out{variant, VariantFreshness::State::stale, ""};
  const std::string prefix = variant + "/";
  const exec::JobRecord* install = state.find(prefix + "install");
  if (!install) {
    bool built_here = std::any_of(state.jobs().begin(), state.jobs().end(),
                                  [&](const auto& entry) { return entry.first.starts_with(prefix); });
    out.state = built_here ? VariantFreshness::State::stale : VariantFreshness::State::unknown;
    out.reason = built_here ? "its last build did not finish (a failed or interrupted kbuild build)"
                            : "no record of building it in " + (kernel_dir / ".kbuild").string() +
                                  " (built elsewhere, or removed by kbuild clean)";
    return out;
  }
  if (!sources_changed.empty()) {
    out.reason = sources_changed + " since the build";
    return out;
  }
  for (const auto& [id, record] : state.jobs()) {
    if (!id.starts_with(prefix)) continue;
    if (std::string why = record_mismatch(record, stats, kernel_dir, same_content); !why.empty()) {
      out.reason = why;
      return out;
    }
  }
  out.state = VariantFreshness::State::current;
  return out;
}

// A variant built elsewhere (a CI artifact) is judged by its ops id, whose source part is a digest of
// the build inputs (kernel_source.hpp): this checkout's sources give the same one, or they changed. A
// variant with a chosen --unique-id stays unknown.
void judge_by_ops_id(const util::FileSystem& fs, const fs::path& kernel_dir, const std::string& source_id,
                     VariantFreshness& entry) {
  auto text = fs.read_file(kernel_dir / "build" / entry.variant / "metadata.json");
  auto metadata = text ? layout::Metadata::parse(*text) : Result<layout::Metadata>(fail(""));
  if (!metadata) return;
  const size_t underscore = metadata->id.rfind('_');
  const std::string id = underscore == std::string::npos ? "" : metadata->id.substr(underscore + 1);
  if (!id.starts_with("src") || source_id.empty()) return;
  if (id == source_id) {
    entry.state = VariantFreshness::State::current;
    entry.reason = "built elsewhere from these sources (ops id " + metadata->id + ")";
  } else {
    entry.state = VariantFreshness::State::stale;
    entry.reason =
        "it was built from other sources (ops id " + metadata->id + "; the sources here give " + source_id + ")";
  }
}

}  // namespace

Result<std::vector<VariantFreshness>> variant_freshness(const util::FileSystem& fs, const fs::path& kernel_dir,
                                                        const config::KernelConfig& config,
                                                        const std::vector<std::string>& variants) {
  exec::BuildState state = exec::BuildState::load(fs, kernel_dir / ".kbuild" / "state");
  // The sources of the last build against those here now (a new header, an edit, build.toml).
  KB_TRY_ASSIGN(SourceManifest now, source_manifest(fs, kernel_dir, config));
  std::string sources_changed;
  std::set<std::string> same_content;  // every source, when all hash as at the last build
  if (auto text = fs.read_file(kernel_dir / ".kbuild" / "sources")) {
    auto then = SourceManifest::parse(*text);
    sources_changed = then ? now.change_since(*then) : "the record of its sources is unreadable";
    if (sources_changed.empty())
      for (const auto& [rel, sha] : now.files) same_content.insert((kernel_dir / rel).lexically_normal().string());
  }
  exec::StatCache stats(fs);
  std::vector<VariantFreshness> out;
  for (const auto& variant : variants) {
    out.push_back(judge(variant, state, stats, kernel_dir, sources_changed, same_content));
    if (out.back().state == VariantFreshness::State::unknown) judge_by_ops_id(fs, kernel_dir, now.id, out.back());
  }
  return out;
}

std::vector<std::string> partial_cuda_variants(const util::FileSystem& fs, const config::KernelConfig& config,
                                               const std::vector<fs::path>& variant_dirs) {
  std::vector<std::string> out;
  for (const auto& dir : variant_dirs) {
    auto variant = config::Variant::parse(dir.filename().string());
    if (!variant || !variant->compiled() || variant->backend != config::Backend::cuda || !variant->cuda) continue;
    auto text = fs.read_file(dir / "metadata.json");
    auto metadata = text ? layout::Metadata::parse(*text) : Result<layout::Metadata>(fail(""));
    if (!metadata) continue;  // the digest and layout checks report it
    std::vector<std::string> missing;
    for (const auto& arch : plan::variant_cuda_archs(config, *variant->cuda))
      if (std::find(metadata->archs.begin(), metadata->archs.end(), arch) == metadata->archs.end())
        missing.push_back(arch);
    if (!missing.empty())
      out.push_back(dir.filename().string() + " is built for " + util::join(metadata->archs, ", ") + " only (" +
                    util::join(missing, ", ") + " missing)");
  }
  return out;
}

namespace {

// The variant directories a release takes: build/'s, or those of each --from DIR (DIR itself when it
// is one, else its subdirectories).
std::vector<fs::path> release_dirs(const util::FileSystem& fs, const fs::path& kernel_dir,
                                   const std::vector<std::string>& built, const std::vector<fs::path>& from) {
  std::vector<fs::path> dirs;
  if (from.empty())
    for (const auto& name : built) dirs.push_back(kernel_dir / "build" / name);
  for (const auto& dir : from) {
    if (fs.stat(dir / "metadata.json").exists) {
      dirs.push_back(dir);
    } else if (auto entries = fs.list_dir(dir)) {
      for (const auto& entry : *entries)
        if (entry.is_dir) dirs.push_back(dir / entry.name);
    }
  }
  return dirs;
}

// Variants built from another commit than `gate.commit` or not signed as required, one line each;
// warnings for variants built from a dirty tree or recording no commit.
std::vector<std::string> provenance_problems(const util::FileSystem& fs, const std::vector<fs::path>& dirs,
                                             const ReleaseGate& gate,
                                             const std::function<void(const std::string&)>& warn) {
  std::vector<std::string> problems;
  for (const auto& dir : dirs) {
    const std::string name = dir.filename().string();
    if (gate.require_signed) {
      auto signature = layout::signature_status(fs, dir);
      if (signature.state != layout::SignatureStatus::State::signed_variant)
        problems.push_back(name + " is " + layout::to_string(signature.state) +
                           (signature.detail.empty() ? "" : " (" + signature.detail + ")") +
                           ", and --require-signed asks for a signature of its metadata.json");
    }
    auto text = fs.read_file(dir / "metadata.json");
    auto metadata = text ? layout::Metadata::parse(*text) : Result<layout::Metadata>(fail(""));
    if (!metadata) continue;  // the digest and layout checks report it
    if (!metadata->kernel) {
      if (!gate.commit.empty()) warn(name + " records no git commit; it is not compared with " + gate.commit);
      continue;
    }
    if (metadata->kernel->dirty)
      warn(name + " was built from a tree with uncommitted changes: `kernels` warns everyone who loads it");
    if (!gate.commit.empty() && !gate.allow_other_commit && metadata->kernel->commit != gate.commit)
      problems.push_back(name + " was built from commit " + metadata->kernel->commit.substr(0, 12) +
                         ", not from the commit being published (" + gate.commit.substr(0, 12) + ")");
  }
  return problems;
}

}  // namespace

Result<void> check_release(const util::FileSystem& fs, const fs::path& kernel_dir, const config::KernelConfig& config,
                           const ReleaseGate& gate, const std::function<void(const std::string&)>& warn) {
  KB_TRY_ASSIGN(auto built, built_variant_names(fs, kernel_dir));
  if (gate.from.empty() && !gate.allow_stale) {
    // --from artifacts are judged by their digests and one ops id instead (hub/inventory.hpp).
    KB_TRY_ASSIGN(auto freshness, variant_freshness(fs, kernel_dir, config, built));
    for (const auto& entry : freshness)
      if (entry.state == VariantFreshness::State::unknown)
        warn("build/" + entry.variant + " is not compared with the sources: " + entry.reason);
    KB_TRY(refuse_stale(freshness, "publish", kernel_dir));
  }
  const auto dirs = release_dirs(fs, kernel_dir, built, gate.from);
  if (auto problems = provenance_problems(fs, dirs, gate, warn); !problems.empty())
    return fail("the release would carry " + util::count_of(problems.size(), "variant") + " it must not:\n  " +
                    util::join(problems, "\n  "),
                "rebuild them from this commit (CI: every job of one run builds the same commit), or pass "
                "--allow-other-commit to publish builds of another commit; --require-signed needs each "
                "variant's metadata.json.sigstore",
                ExitCode::failure);
  if (gate.allow_partial_archs) return {};
  auto partial = partial_cuda_variants(fs, config, dirs);
  if (!partial.empty())
    return fail("a release must run on every GPU build.toml declares:\n  " + util::join(partial, "\n  "),
                "rebuild with --cuda-archs all (kbuild build --matrix does), or pass --allow-partial-archs",
                ExitCode::failure);
  return {};
}

Result<std::vector<std::string>> built_variant_names(const util::FileSystem& fs, const fs::path& kernel_dir) {
  std::vector<std::string> names;
  if (!fs.stat(kernel_dir / "build").is_dir) return names;
  KB_TRY_ASSIGN(auto entries, fs.list_dir(kernel_dir / "build"));
  for (const auto& entry : entries)
    if (entry.is_dir && !entry.name.starts_with(".")) names.push_back(entry.name);
  return names;
}

Result<void> refuse_stale(const std::vector<VariantFreshness>& freshness, const std::string& command,
                          const fs::path& kernel_dir) {
  std::string message;
  size_t stale = 0;
  for (const auto& entry : freshness) {
    if (entry.state != VariantFreshness::State::stale) continue;
    ++stale;
    message += "\n  build/" + entry.variant + ": " + entry.reason;
  }
  if (stale == 0) return {};
  return fail(std::to_string(stale) + " variant" + (stale == 1 ? " is" : "s are") + " older than the sources; kbuild " +
                  command + " refuses " + (stale == 1 ? "it" : "them") + ":" + message,
              "run `kbuild build " + kernel_dir.string() + "` (with the options that built it, e.g. --matrix), " +
                  "or pass --allow-stale to " + command + " it anyway",
              ExitCode::failure);
}

}  // namespace kbuild::usecase
