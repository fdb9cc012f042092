#include "kbuild/lock/lockfile.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

#include "kbuild/lock/version_spec.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::lock {

using ordered_json = nlohmann::ordered_json;

std::string Dependency::str() const { return repo_id + "@" + (is_major() ? std::to_string(major()) : revision()); }

// This order is the file's order, as `kernels lock` sorts: repo id bytewise, then integer versions
// (numerically) before revisions (bytewise).
std::strong_ordering Dependency::operator<=>(const Dependency& other) const {
  if (auto c = repo_id <=> other.repo_id; c != 0) return c;
  if (is_major() != other.is_major()) return is_major() ? std::strong_ordering::less : std::strong_ordering::greater;
  if (is_major()) return major() <=> other.major();
  return revision() <=> other.revision();
}

// Byte-for-byte what `kernels lock` writes (an end-to-end test compares them): keys in this order, dump(2),
// and no trailing newline.
std::string render_lockfile(std::vector<LockEntry> entries) {
  std::sort(entries.begin(), entries.end(),
            [](const LockEntry& a, const LockEntry& b) { return a.dependency < b.dependency; });
  ordered_json array = ordered_json::array();
  for (const auto& entry : entries) {
    ordered_json dependency;
    dependency["repo-id"] = entry.dependency.repo_id;
    if (entry.dependency.is_major())
      dependency["version"] = entry.dependency.major();
    else
      dependency["revision"] = entry.dependency.revision();
    ordered_json item;
    item["dependency"] = dependency;
    item["lock"] = {{"commit", entry.commit}};
    array.push_back(item);
  }
  return array.dump(2);
}

namespace {

Error lock_error(const std::string& file, const std::string& message) {
  return Error{ExitCode::usage, file + ": " + message,
               "regenerate it with `kbuild lock` (or `kernels lock`); kernels.lock is written by tools, "
               "not by hand"};
}

}  // namespace

// As strict as `KernelLocks.from_json` (unknown fields, duplicates and malformed commits are errors), so a
// lock kbuild accepts is one the kernels loader accepts too. A float or negative `version` is refused. The
// commit is lowercased: huggingface_hub takes only lowercase hex (REGEX_COMMIT_HASH) as a resolved commit.
Result<std::vector<LockEntry>> parse_lockfile(std::string_view text, const std::string& file) {
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return fail(lock_error(file, std::string("not valid JSON: ") + e.what()));
  }
  if (!root.is_array()) return fail(lock_error(file, "expected a JSON array of locked kernels"));
  std::vector<LockEntry> entries;
  std::set<Dependency> seen;
  for (size_t i = 0; i < root.size(); ++i) {
    const auto& item = root[i];
    std::string where = "entry " + std::to_string(i + 1);
    if (!item.is_object()) return fail(lock_error(file, where + " is not an object"));
    for (const auto& [key, value] : item.items())
      if (key != "dependency" && key != "lock")
        return fail(lock_error(file, where + ": unknown field \"" + key + "\" (expected dependency, lock)"));
    if (!item.contains("dependency") || !item["dependency"].is_object())
      return fail(lock_error(file, where + ": missing object \"dependency\""));
    if (!item.contains("lock") || !item["lock"].is_object())
      return fail(lock_error(file, where + ": missing object \"lock\""));
    const auto& dep = item["dependency"];
    const auto& lock = item["lock"];
    for (const auto& [key, value] : dep.items())
      if (key != "repo-id" && key != "version" && key != "revision")
        return fail(lock_error(file, where + ": unknown field \"" + key + "\" in dependency"));
    for (const auto& [key, value] : lock.items())
      if (key != "commit") return fail(lock_error(file, where + ": unknown field \"" + key + "\" in lock"));
    LockEntry entry;
    if (!dep.contains("repo-id") || !dep["repo-id"].is_string())
      return fail(lock_error(file, where + ": dependency.repo-id must be a string"));
    entry.dependency.repo_id = dep["repo-id"].get<std::string>();
    bool has_version = dep.contains("version"), has_revision = dep.contains("revision");
    if (has_version == has_revision)
      return fail(lock_error(file, where + ": dependency needs exactly one of \"version\" and \"revision\""));
    if (has_version) {
      if (!dep["version"].is_number_unsigned())
        return fail(lock_error(file, where + ": dependency.version must be a non-negative integer"));
      entry.dependency.version = dep["version"].get<std::uint64_t>();
    } else {
      if (!dep["revision"].is_string()) return fail(lock_error(file, where + ": dependency.revision must be a string"));
      entry.dependency.version = dep["revision"].get<std::string>();
    }
    if (!lock.contains("commit") || !lock["commit"].is_string() || !is_commit_id(lock["commit"].get<std::string>()))
      return fail(lock_error(file, where + ": lock.commit must be a full commit id (40 or 64 hex digits)"));
    entry.commit = util::ascii_lowercase(lock["commit"].get<std::string>());
    if (!seen.insert(entry.dependency).second)
      return fail(lock_error(file, where + ": duplicate dependency " + entry.dependency.str()));
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace kbuild::lock
