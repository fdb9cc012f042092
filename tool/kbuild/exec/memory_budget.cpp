#include "kbuild/exec/memory_budget.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "kbuild/util/strings.hpp"

namespace kbuild::exec {

namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t k_gib_in_kib = 1024 * 1024;

// A number at the start of a file's text ("max" and the like: nullopt).
std::optional<std::uint64_t> leading_number(std::string_view text) {
  text = util::trim(text);
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data()) return std::nullopt;
  return value;
}

std::optional<std::uint64_t> number_in(const util::FileSystem& fs, const fs::path& file) {
  auto text = fs.read_file(file);
  return text ? leading_number(*text) : std::nullopt;
}

// MemAvailable of /proc/meminfo, in KiB.
std::optional<std::uint64_t> mem_available_kib(const util::FileSystem& fs) {
  auto text = fs.read_file("/proc/meminfo");
  if (!text) return std::nullopt;
  for (const auto& line : util::split(*text, '\n'))
    if (line.starts_with("MemAvailable:")) return leading_number(std::string_view(line).substr(13));
  return std::nullopt;
}

// The cgroup directory of this process for the memory controller: v2's "0::<path>" under
// /sys/fs/cgroup, or v1's "<n>:...memory...:<path>" under /sys/fs/cgroup/memory. Inside a cgroup
// namespace the path may not exist below the mount: the mount's root is the process's cgroup then.
std::optional<std::pair<fs::path, bool>> memory_cgroup(const util::FileSystem& fs) {
  auto text = fs.read_file("/proc/self/cgroup");
  if (!text) return std::nullopt;
  for (const auto& line : util::split(*text, '\n')) {
    auto parts = util::split(line, ':');
    if (parts.size() < 3) continue;
    std::string path = line.substr(parts[0].size() + parts[1].size() + 2);
    auto controllers = util::split(parts[1], ',');
    bool v1 = std::find(controllers.begin(), controllers.end(), "memory") != controllers.end();
    bool v2 = parts[0] == "0" && parts[1].empty() && fs.stat("/sys/fs/cgroup/cgroup.controllers").is_file;
    if (!v1 && !v2) continue;
    fs::path mount = v1 ? fs::path("/sys/fs/cgroup/memory") : fs::path("/sys/fs/cgroup");
    fs::path dir = (mount / fs::path(path).relative_path()).lexically_normal();
    if (!fs.stat(dir).is_dir) dir = mount;
    return std::pair(dir, v1);
  }
  return std::nullopt;
}

// The page cache a cgroup could drop before it runs out (its usage counts it): memory.stat's
// inactive_file (v1: total_inactive_file, the hierarchy's).
std::uint64_t reclaimable_bytes(const util::FileSystem& fs, const fs::path& dir, bool v1) {
  auto text = fs.read_file(dir / "memory.stat");
  if (!text) return 0;
  const std::string key = v1 ? "total_inactive_file " : "inactive_file ";
  for (const auto& line : util::split(*text, '\n'))
    if (line.starts_with(key)) return leading_number(std::string_view(line).substr(key.size())).value_or(0);
  return 0;
}

// The least room any cgroup from `dir` up to its mount leaves (limit - usage + reclaimable), and where.
std::optional<std::pair<std::uint64_t, fs::path>> cgroup_room_kib(const util::FileSystem& fs, fs::path dir, bool v1) {
  const fs::path mount = v1 ? fs::path("/sys/fs/cgroup/memory") : fs::path("/sys/fs/cgroup");
  std::optional<std::pair<std::uint64_t, fs::path>> tightest;
  for (int depth = 0; depth < 64; ++depth) {
    auto limit = number_in(fs, dir / (v1 ? "memory.limit_in_bytes" : "memory.max"));
    auto usage = number_in(fs, dir / (v1 ? "memory.usage_in_bytes" : "memory.current"));
    // v1 writes "no limit" as a number near 2^63.
    if (limit && usage && *limit < (std::uint64_t{1} << 62)) {
      std::uint64_t used = *usage - std::min(*usage, reclaimable_bytes(fs, dir, v1));
      std::uint64_t room = (*limit > used ? *limit - used : 0) / 1024;
      if (!tightest || room < tightest->first) tightest = std::pair(room, dir);
    }
    if (dir == mount || !dir.has_parent_path() || dir.parent_path() == dir) break;
    dir = dir.parent_path();
  }
  return tightest;
}

}  // namespace

std::uint64_t expected_job_kib(plan::JobKind kind, std::uint64_t recorded_peak_kib, unsigned processes) {
  if (kind == plan::JobKind::generate || kind == plan::JobKind::install) return 0;
  const std::uint64_t each = recorded_peak_kib > 0                 ? recorded_peak_kib + recorded_peak_kib / 4
                             : kind == plan::JobKind::compile_cuda ? 3 * k_gib_in_kib
                                                                   : k_gib_in_kib;
  return each * std::max(1u, processes);
}

unsigned concurrent_processes(const plan::Job& job) {
  if (job.kind != plan::JobKind::compile_cuda) return 1;
  for (size_t i = 0; i + 1 < job.run_args.size(); ++i)
    if (job.run_args[i] == "--threads")
      if (auto threads = leading_number(job.run_args[i + 1]); threads && *threads > 0)
        return static_cast<unsigned>(std::min<std::uint64_t>(*threads, 64));
  return 1;
}

MemoryBudget available_memory(const util::FileSystem& fs) {
  MemoryBudget budget{0, "unlimited (no memory figure could be read)"};
  if (auto available = mem_available_kib(fs)) budget = {*available, "MemAvailable"};
  if (auto cgroup = memory_cgroup(fs))
    if (auto room = cgroup_room_kib(fs, cgroup->first, cgroup->second))
      if (budget.kib == 0 || room->first < budget.kib) budget = {room->first, "cgroup " + room->second.string()};
  return budget;
}

Result<MemoryBudget> memory_budget(const std::optional<std::string>& option, const util::Environment& env,
                                   const util::FileSystem& fs) {
  std::optional<std::string> text = option;
  std::string source = "--memory";
  if (!text || text->empty()) {
    text = env.get("KBUILD_MEMORY");
    source = "KBUILD_MEMORY";
  }
  if (!text || text->empty() || *text == "auto") return available_memory(fs);
  if (*text == "unlimited") return MemoryBudget{0, source + "=unlimited"};
  auto bytes = util::parse_byte_size(*text);
  if (!bytes || *bytes < 1024)
    return fail(source + " \"" + *text + "\" is not a memory size",
                "write a size with a unit K, M, G or T (binary: 12G = 12 GiB), \"auto\" (what is available) or "
                "\"unlimited\" (count jobs only)",
                ExitCode::usage);
  return MemoryBudget{*bytes / 1024, source};
}

std::string format_kib(std::uint64_t kib) {
  char text[32];
  if (kib >= k_gib_in_kib)
    std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(kib) / k_gib_in_kib);
  else
    std::snprintf(text, sizeof text, "%llu MiB", static_cast<unsigned long long>(kib / 1024));
  return text;
}

}  // namespace kbuild::exec
