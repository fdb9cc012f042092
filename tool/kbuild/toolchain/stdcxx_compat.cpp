#include "kbuild/toolchain/stdcxx_compat.hpp"

#include <regex>

#include "kbuild/toolchain/provision.hpp"
#include "kbuild/util/hash.hpp"
#include "kbuild/util/strings.hpp"
#include "kbuild/util/version.hpp"

namespace kbuild::toolchain {

namespace fs = std::filesystem;

namespace {

constexpr const char* k_archive_name = "libkbuild_stdcxx_compat.a";
constexpr const char* k_rules_version = "stdcxx-compat-v1";

// Why a global of a candidate member (other than its newer symbols) cannot have a private copy, or
// nullopt when a copy is harmless: code, read-only data, vtables and type information (compared by
// name across libraries), unwinder references, and constant tables local to a function.
std::optional<std::string> copy_hazard(const std::string& symbol, char type) {
  static const std::regex k_shared_state(
      R"(^(__cxa_|__gxx_personality|_ITM_|_ZGT|_ZGV)|2idE$|_S_empty_rep_storage|_Sp_make_shared_tag)");
  if (std::regex_search(symbol, k_shared_state)) return symbol + " has identity or shared state";
  if (type == 'T' || type == 'W' || type == 'i' || type == 'R') return std::nullopt;
  static const std::regex k_type_data(R"(^(_ZT[VISTC]|DW\.ref\.))");
  if ((type == 'V' || type == 'D' || type == 'd') && std::regex_search(symbol, k_type_data)) return std::nullopt;
  if ((type == 'V' || type == 'u') && (symbol.starts_with("_ZZ") || symbol.ends_with("4nposE"))) return std::nullopt;
  return symbol + " is data of type " + std::string(1, type);
}

Result<std::string> run_tool(util::ProcessLauncher& launcher, const HostCompiler& host,
                             const std::vector<std::string>& argv, const std::optional<fs::path>& cwd = std::nullopt) {
  util::ProcessOptions options;
  options.cwd = cwd;
  options.env = host.environment();
  KB_TRY_ASSIGN(util::ProcessResult result, launcher.run(argv, options));
  if (result.exit_code != 0)
    return fail(argv.front() + " failed (exit " + std::to_string(result.exit_code) +
                    "): " + std::string(util::trim(result.err)),
                "kbuild needs binutils (nm, objcopy, ar) on PATH", ExitCode::toolchain);
  return result.out;
}

}  // namespace

std::map<std::string, ArchiveMember> parse_archive_symbols(const std::string& nm_output) {
  std::map<std::string, ArchiveMember> members;
  for (const auto& line : util::split(nm_output, '\n')) {
    size_t open = line.rfind("[", line.find("]: "));
    size_t close = line.find("]: ");
    if (open == std::string::npos || close == std::string::npos || close < open) continue;
    std::string member = line.substr(open + 1, close - open - 1);
    auto fields = util::split(std::string(util::trim(line.substr(close + 3))), ' ');
    if (fields.size() < 2 || fields[0].empty() || fields[1].size() != 1) continue;
    ArchiveMember& entry = members[member];
    entry.name = member;
    if (fields[1] == "U" || fields[1] == "w" || fields[1] == "v")
      entry.undefined.insert(fields[0]);
    else
      entry.defined[fields[0]] = fields[1][0];
  }
  return members;
}

std::set<std::string> newer_glibcxx_symbols(const std::string& nm_output, const std::string& glibcxx_max) {
  const auto limit = util::Version::parse(glibcxx_max);
  std::map<std::string, bool> all_newer;  // symbol -> every version it is exported in is newer
  static const std::regex k_versioned(R"(^([^@\s]+)@@?([A-Z]+)_([0-9.]+)$)");
  for (const auto& line : util::split(nm_output, '\n')) {
    std::string name = util::split(std::string(util::trim(line)), ' ').front();
    std::smatch match;
    if (!std::regex_match(name, match, k_versioned)) continue;
    auto version = util::Version::parse(match[3].str());
    bool newer = match[2].str() == "GLIBCXX" && version && limit && *version > *limit;
    auto [it, inserted] = all_newer.emplace(match[1].str(), newer);
    if (!inserted) it->second = it->second && newer;
  }
  std::set<std::string> out;
  for (const auto& [symbol, newer] : all_newer)
    if (newer) out.insert(symbol);
  return out;
}

std::vector<CompatMember> select_compat_members(const std::map<std::string, ArchiveMember>& members,
                                                const std::set<std::string>& newer,
                                                std::map<std::string, std::string>* refused) {
  std::vector<CompatMember> out;
  for (const auto& [name, member] : members) {
    bool candidate = false;
    for (const auto& [symbol, type] : member.defined) candidate = candidate || newer.count(symbol) > 0;
    if (!candidate) continue;
    CompatMember compat{name, {}};
    std::optional<std::string> hazard;
    for (const auto& [symbol, type] : member.defined) {
      if (newer.count(symbol)) continue;
      if (!hazard) hazard = copy_hazard(symbol, type);
      compat.localize.push_back(symbol);
    }
    if (hazard) {
      if (refused) (*refused)[name] = *hazard;
      continue;
    }
    out.push_back(std::move(compat));
  }
  return out;
}

namespace {

constexpr std::string_view k_memo_header = "kbuild-stdcxx-compat 1";

std::string stat_line(const util::FileSystem& fs, const fs::path& path) {
  util::FileStat st = fs.stat(path);
  return std::to_string(st.mtime_ns) + " " + std::to_string(st.size) + " " + path.string();
}

// The remembered answer when the compiler and both libstdc++ files are as they were.
std::optional<std::optional<fs::path>> read_memo(const util::FileSystem& fs, const fs::path& memo_file,
                                                 const fs::path& compiler) {
  auto text = fs.read_file(memo_file);
  if (!text) return std::nullopt;
  auto lines = util::split(*text, '\n');
  if (lines.size() < 5 || lines[0] != k_memo_header || lines[1] != stat_line(fs, compiler)) return std::nullopt;
  for (size_t i = 2; i <= 3; ++i) {
    size_t space = lines[i].find(' ', lines[i].find(' ') + 1);
    if (space == std::string::npos || lines[i] != stat_line(fs, lines[i].substr(space + 1))) return std::nullopt;
  }
  if (lines[4] == "-") return std::optional<fs::path>();
  if (!fs.stat(lines[4]).is_file) return std::nullopt;
  return std::optional<fs::path>(fs::path(lines[4]));
}

// Builds (or finds in the cache) the compat archive from the compiler's libstdc++.a and .so.
Result<std::optional<fs::path>> compat_archive(util::ProcessLauncher& launcher, util::FileSystem& fs,
                                               const util::CacheLayout& cache, const HostCompiler& host,
                                               const fs::path& archive, const fs::path& shared) {
  KB_TRY_ASSIGN(std::string archive_sha, util::sha256_file_hex(fs, archive));
  KB_TRY_ASSIGN(std::string shared_sha, util::sha256_file_hex(fs, shared));
  util::Hasher hasher;
  hasher.field(k_rules_version).field(archive_sha).field(shared_sha);
  if (host.pinned()) hasher.field(host.origin).field(util::join(host.pins, " "));  // its binutils made it
  const fs::path dir = cache.toolchains() / ("stdcxx-compat-" + hasher.finish_hex().substr(0, 12));
  const fs::path library = dir / k_archive_name;
  if (fs.stat(dir / ".complete").is_file)
    return fs.stat(library).is_file ? std::optional<fs::path>(library) : std::optional<fs::path>();

  KB_TRY(fs.make_dirs(cache.temp()));
  util::ScratchDir scratch(fs, cache.temp(), "stdcxx-compat");
  KB_TRY_ASSIGN(std::string shared_symbols, run_tool(launcher, host,
                                                     {host.binutil("nm"), "-D", "--defined-only",
                                                      "--with-symbol-versions", "--format=posix", shared.string()}));
  KB_TRY_ASSIGN(std::string archive_symbols,
                run_tool(launcher, host, {host.binutil("nm"), "-A", "-g", "--format=posix", archive.string()}));
  auto selected =
      select_compat_members(parse_archive_symbols(archive_symbols), newer_glibcxx_symbols(shared_symbols, "3.4.24"));
  std::vector<std::string> kept;
  for (const auto& member : selected) {
    KB_TRY(run_tool(launcher, host, {host.binutil("ar"), "x", archive.string(), member.name}, scratch.path));
    fs::path list = scratch.path / (member.name + ".localize");
    KB_TRY(fs.write_file_atomic(list, util::join(member.localize, "\n") + "\n"));
    std::string private_copy = "compat-" + member.name;
    KB_TRY(run_tool(launcher, host,
                    {host.binutil("objcopy"), "--localize-symbols=" + list.string(), member.name, private_copy},
                    scratch.path));
    // Kept only if it links on its own: what it needs comes from libstdc++.so.6 and the C library.
    std::vector<std::string> link = {host.cxx.string()};
    for (const auto& flag : host.driver_flags()) link.push_back(flag);
    for (const std::string& arg : {std::string("-shared"), std::string("-o"), (scratch.path / "check.so").string(),
                                   (scratch.path / private_copy).string(), std::string("-Wl,--no-undefined"),
                                   std::string("-l:libstdc++.so.6"), std::string("-lm")})
      link.push_back(arg);
    util::ProcessOptions link_options;
    link_options.env = host.environment();
    auto linked = launcher.run(link, link_options);
    if (linked && linked->exit_code == 0) kept.push_back(private_copy);
  }
  fs::path staging = util::temp_sibling(dir);
  KB_TRY(fs.make_dirs(staging));
  if (!kept.empty()) {
    std::vector<std::string> argv = {host.binutil("ar"), "rcsD", k_archive_name};
    argv.insert(argv.end(), kept.begin(), kept.end());
    KB_TRY(run_tool(launcher, host, argv, scratch.path));
    KB_TRY(fs.rename(scratch.path / k_archive_name, staging / k_archive_name));
  }
  KB_TRY(fs.write_file_atomic(staging / ".complete", util::join(kept, "\n") + "\n"));
  KB_TRY(install_complete_dir(fs, staging, dir));  // another build's equal result may be kept instead
  return fs.stat(library).is_file ? std::optional<fs::path>(library) : std::optional<fs::path>();
}

}  // namespace

Result<std::optional<fs::path>> prepare_stdcxx_compat(util::ProcessLauncher& launcher, util::FileSystem& fs,
                                                      const util::CacheLayout& cache, const HostCompiler& host,
                                                      const fs::path& memo_file) {
  const std::string cxx = host.cxx.string();
  auto compiler = launcher.find(cxx);
  if (!memo_file.empty() && compiler)
    if (auto remembered = read_memo(fs, memo_file, *compiler)) return *remembered;
  KB_TRY_ASSIGN(std::string archive_out, run_tool(launcher, host, {cxx, "-print-file-name=libstdc++.a"}));
  KB_TRY_ASSIGN(std::string shared_out, run_tool(launcher, host, {cxx, "-print-file-name=libstdc++.so.6"}));
  fs::path archive(std::string(util::trim(archive_out)));
  fs::path shared(std::string(util::trim(shared_out)));
  // Without a directory the compiler did not find the file.
  if (!archive.has_parent_path() || !shared.has_parent_path() || !fs.stat(archive).is_file || !fs.stat(shared).exists)
    return std::optional<fs::path>();
  KB_TRY_ASSIGN(auto library, compat_archive(launcher, fs, cache, host, archive, shared));
  if (!memo_file.empty() && compiler)
    (void)fs.write_file_atomic(memo_file, std::string(k_memo_header) + "\n" + stat_line(fs, *compiler) + "\n" +
                                              stat_line(fs, archive) + "\n" + stat_line(fs, shared) + "\n" +
                                              (library ? library->string() : "-") + "\n");
  return library;
}

}  // namespace kbuild::toolchain
