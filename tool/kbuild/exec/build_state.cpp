#include "kbuild/exec/build_state.hpp"

#include <charconv>
#include <set>

namespace kbuild::exec {

const util::FileStat& StatCache::stat(const std::string& path) {
  auto it = m_cache.find(path);
  if (it == m_cache.end()) it = m_cache.emplace(path, m_fs.stat(path)).first;
  return it->second;
}

namespace {
constexpr std::string_view k_header = "kbuild-state 1";

bool parse_file_record(std::string_view rest, FileRecord& out) {
  size_t space1 = rest.find(' ');
  if (space1 == std::string_view::npos) return false;
  size_t space2 = rest.find(' ', space1 + 1);
  if (space2 == std::string_view::npos) return false;
  auto mtime = rest.substr(0, space1);
  auto size = rest.substr(space1 + 1, space2 - space1 - 1);
  if (std::from_chars(mtime.data(), mtime.data() + mtime.size(), out.mtime_ns).ec != std::errc()) return false;
  if (std::from_chars(size.data(), size.data() + size.size(), out.size).ec != std::errc()) return false;
  out.path = std::string(rest.substr(space2 + 1));
  return !out.path.empty();
}
}  // namespace

BuildState BuildState::parse(std::string_view text) {
  BuildState state;
  size_t start = 0;
  bool first = true;
  JobRecord* current = nullptr;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (first) {
      if (line != k_header) return {};
      first = false;
      continue;
    }
    if (line.size() < 2 || line[1] != ' ') return {};
    std::string_view rest = line.substr(2);
    switch (line[0]) {
      case 'J':
        current = &state.m_jobs[std::string(rest)];
        break;
      case 'K':
        if (!current) return {};
        current->key = std::string(rest);
        break;
      case 'O':
      case 'I': {
        FileRecord record;
        if (!current || !parse_file_record(rest, record)) return {};
        (line[0] == 'O' ? current->outputs : current->inputs).push_back(std::move(record));
        break;
      }
      default:
        return {};
    }
  }
  return state;
}

std::string BuildState::serialize() const {
  std::string out(k_header);
  out += '\n';
  for (const auto& [id, record] : m_jobs) {
    out += "J " + id + "\nK " + record.key + "\n";
    for (const auto& file : record.outputs)
      out += "O " + std::to_string(file.mtime_ns) + " " + std::to_string(file.size) + " " + file.path + "\n";
    for (const auto& file : record.inputs)
      out += "I " + std::to_string(file.mtime_ns) + " " + std::to_string(file.size) + " " + file.path + "\n";
  }
  return out;
}

BuildState BuildState::load(const util::FileSystem& fs, const std::filesystem::path& file) {
  auto text = fs.read_file(file);
  if (!text) return {};
  return parse(*text);
}

Result<void> BuildState::save(util::FileSystem& fs, const std::filesystem::path& file) const {
  return fs.write_file_atomic(file, serialize());
}

const JobRecord* BuildState::find(const std::string& job_id) const {
  auto it = m_jobs.find(job_id);
  return it == m_jobs.end() ? nullptr : &it->second;
}

void BuildState::retain_only(const plan::JobGraph& graph) {
  std::set<std::string> ids;
  for (const auto& job : graph.jobs) ids.insert(job.id);
  for (auto it = m_jobs.begin(); it != m_jobs.end();) {
    if (ids.count(it->first))
      ++it;
    else
      it = m_jobs.erase(it);
  }
}

namespace {
// Depfiles name headers as the compiler reached them (torch-ext/../include/x.h); shown normalised.
std::string shown(const std::string& path) { return std::filesystem::path(path).lexically_normal().string(); }
}  // namespace

std::optional<std::string> staleness_reason(const plan::Job& job, const JobRecord* record, StatCache& stats) {
  if (!record) return "no record of a previous build";
  if (record->key != job.key) return "command line or toolchain changed";
  if (record->outputs.size() != job.outputs.size()) return "outputs changed";
  for (const auto& output : record->outputs) {
    const util::FileStat& st = stats.stat(output.path);
    if (!st.exists) return "output " + shown(output.path) + " is missing";
    if (st.mtime_ns != output.mtime_ns || st.size != output.size)
      return "output " + shown(output.path) + " was modified";
  }
  for (const auto& input : record->inputs) {
    const util::FileStat& st = stats.stat(input.path);
    if (!st.exists) return "input " + shown(input.path) + " is gone";
    if (st.mtime_ns != input.mtime_ns || st.size != input.size) return "input " + shown(input.path) + " changed";
  }
  // An explicit input the record does not know about (a source added to the job) also re-runs it.
  for (const auto& input : job.inputs) {
    bool known = false;
    for (const auto& recorded : record->inputs)
      if (recorded.path == input.string()) known = true;
    if (!known) return "new input " + input.string();
  }
  return std::nullopt;
}

}  // namespace kbuild::exec
