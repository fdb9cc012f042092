#include "kbuild/toolchain/gpu.hpp"

#include <algorithm>
#include <set>

#include "kbuild/util/strings.hpp"

namespace kbuild::toolchain {

std::vector<std::string> detect_gpu_capabilities(util::ProcessLauncher& launcher, util::FileSystem& fs,
                                                 const std::filesystem::path& memo_file,
                                                 const std::filesystem::path& driver_dir) {
  auto entries = fs.list_dir(driver_dir);
  if (!entries || entries->empty()) return {};
  std::vector<std::string> addresses;
  for (const auto& entry : *entries) addresses.push_back(entry.name);
  std::sort(addresses.begin(), addresses.end());
  const std::string header = "kbuild-gpus 1 " + util::join(addresses, " ");
  if (auto memo = fs.read_file(memo_file)) {
    auto lines = util::split(*memo, '\n');
    if (lines.size() >= 2 && lines[0] == header) return util::split(lines[1], ' ');
  }
  auto result = launcher.run({"nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"});
  if (!result || result->exit_code != 0) return {};
  std::set<std::string> capabilities;
  for (const auto& line : util::split(result->out, '\n')) {
    std::string cap(util::trim(line));
    if (!cap.empty() && cap.find_first_not_of("0123456789.") == std::string::npos) capabilities.insert(cap);
  }
  std::vector<std::string> out(capabilities.begin(), capabilities.end());
  if (!out.empty()) (void)fs.write_file_atomic(memo_file, header + "\n" + util::join(out, " ") + "\n");
  return out;
}

}  // namespace kbuild::toolchain
