#pragma once
// What the last build did, per job, to decide what is stale (kept in .kbuild/state).
//
// File format (text, one record per line, fields separated by single spaces, the path last so
// that it may contain spaces):
//   kbuild-state 2                         first line: format and version
//   J <job id>                             starts a job record
//   K <key>                                the job's key (command line + toolchain identity)
//   C <command line>                       the command as keyed (volatile define masked), shell-quoted,
//                                          so that --explain can name what changed; commands only
//   V <value> <path>                       the volatile define's value the output depends on, and the
//                                          file that names the macro; absent when it depends on none
//   O <mtime_ns> <size> <path>             an output as it was after the job ran
//   I <mtime_ns> <size> <path>             an input (explicit or from the depfile) as it was read
//   M <kib>                                the command's peak memory when it last ran (wait4's
//                                          ru_maxrss, KiB): what the scheduler expects it to need
//                                          (memory_budget.hpp); absent when never measured
// An unreadable or unknown-version file is treated as empty: everything rebuilds.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kbuild/plan/graph.hpp"
#include "kbuild/util/fs.hpp"
#include "kbuild/util/result.hpp"

namespace kbuild::exec {

struct FileRecord {
  std::string path;
  std::int64_t mtime_ns = 0;
  std::uint64_t size = 0;
};

struct JobRecord {
  std::string key;
  std::vector<FileRecord> outputs;
  std::vector<FileRecord> inputs;
  std::string command;  ///< shell-quoted keyed argv (plan::Job::keyed_argv); empty for in-process jobs
  /// The volatile define's value (the ops id) the output depends on, and the file naming the macro.
  std::optional<std::string> volatile_value;
  std::string volatile_named_in;
  std::uint64_t peak_rss_kib = 0;  ///< 0: never measured (in-process job, or only restored from the cache)
};

/// Memoises stat() for one build; entries for files a job writes are dropped when it finishes.
class StatCache {
 public:
  explicit StatCache(const util::FileSystem& fs) : m_fs(fs) {}
  const util::FileStat& stat(const std::string& path);
  void forget(const std::string& path) { m_cache.erase(path); }
  size_t size() const { return m_cache.size(); }  ///< distinct paths known

 private:
  const util::FileSystem& m_fs;
  std::map<std::string, util::FileStat> m_cache;
};

class BuildState {
 public:
  static BuildState load(const util::FileSystem& fs, const std::filesystem::path& file);
  Result<void> save(util::FileSystem& fs, const std::filesystem::path& file) const;

  const JobRecord* find(const std::string& job_id) const;
  void set(const std::string& job_id, JobRecord record) { m_jobs[job_id] = std::move(record); }
  void erase(const std::string& job_id) { m_jobs.erase(job_id); }
  /// Drops records of jobs that are not in `graph` (e.g. a removed source file).
  void retain_only(const plan::JobGraph& graph);
  size_t size() const { return m_jobs.size(); }
  const std::map<std::string, JobRecord>& jobs() const { return m_jobs; }

  std::string serialize() const;
  static BuildState parse(std::string_view text);

 private:
  std::map<std::string, JobRecord> m_jobs;
};

/// Why `job` must run, or nullopt when its outputs are up to date with respect to `record`.
std::optional<std::string> staleness_reason(const plan::Job& job, const JobRecord* record, StatCache& stats);

}  // namespace kbuild::exec
