#include "kbuild/exec/build_state.hpp"

#include <algorithm>
#include <charconv>
#include <set>

#include "kbuild/util/strings.hpp"

namespace kbuild::exec {

const util::FileStat& StatCache::stat(const std::string& path) {
  auto it = m_cache.find(path);
  if (it == m_cache.end()) it = m_cache.emplace(path, m_fs.stat(path)).first;
  return it->second;
}

namespace {
constexpr std::string_view k_header = "kbuild-state 2";

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
      case 'C':
        if (!current) return {};
        current->command = std::string(rest);
        break;
      case 'V': {
        size_t space = rest.find(' ');
        if (!current || space == std::string_view::npos || space == 0) return {};
        current->volatile_value = std::string(rest.substr(0, space));
        current->volatile_named_in = std::string(rest.substr(space + 1));
        break;
      }
      case 'M': {
        if (!current ||
            std::from_chars(rest.data(), rest.data() + rest.size(), current->peak_rss_kib).ec != std::errc())
          return {};
        break;
      }
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
    if (!record.command.empty() && record.command.find('\n') == std::string::npos) out += "C " + record.command + "\n";
    if (record.volatile_value) out += "V " + *record.volatile_value + " " + record.volatile_named_in + "\n";
    if (record.peak_rss_kib > 0) out += "M " + std::to_string(record.peak_rss_kib) + "\n";
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
  return fs.write_file_if_changed(file, serialize());
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

// "a, b, c" of at most three items, then "and N more".
std::string few(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < 3; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > 3) out += " and " + std::to_string(items.size() - 3) + " more";
  return out;
}

// Why the key differs: the arguments added and removed, or else the toolchain or parameters.
std::string key_change(const plan::Job& job, const JobRecord& record) {
  if (job.in_process()) return "what it writes changed (metadata, _ops.py or generated sources)";
  std::string now = util::shell_join(job.keyed_argv());
  if (record.command.empty()) return "the command line or the toolchain changed";
  if (record.command == now) return "the toolchain changed (compiler, Torch or CUDA build)";
  auto before_args = util::shell_split(record.command);
  auto now_args = job.keyed_argv();
  std::vector<std::string> added, removed;
  for (const auto& arg : now_args)
    if (std::find(before_args.begin(), before_args.end(), arg) == before_args.end()) added.push_back(arg);
  for (const auto& arg : before_args)
    if (std::find(now_args.begin(), now_args.end(), arg) == now_args.end()) removed.push_back(arg);
  if (added.empty() && removed.empty()) return "the command line changed (argument order)";
  std::string out = "the command line changed:";
  if (!added.empty()) out += " added " + few(added);
  if (!removed.empty()) out += std::string(added.empty() ? "" : ";") + " removed " + few(removed);
  return out;
}
}  // namespace

std::optional<std::string> staleness_reason(const plan::Job& job, const JobRecord* record, StatCache& stats) {
  if (!record) return "no record of a previous build";
  if (record->key != job.key) return key_change(job, *record);
  if (record->volatile_value && job.volatile_define && *record->volatile_value != job.volatile_define->value)
    return "the ops id changed (" + *record->volatile_value + " -> " + job.volatile_define->value + ") and " +
           shown(record->volatile_named_in) + " names " + job.volatile_define->name;
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
