#include "support/fakes.hpp"

#include <algorithm>

#include "kbuild/util/strings.hpp"

namespace kbuild::fakes {

Result<util::ProcessResult> FakeLauncher::run(const std::vector<std::string>& argv,
                                              const util::ProcessOptions& options) {
  std::string key = util::join(argv, " ");
  ran.push_back(key);
  if (handler)
    if (auto answer = handler(argv, options)) return *answer;
  auto it = answers.find(key);
  if (it != answers.end()) return it->second;
  for (const auto& [prefix, result] : prefix_answers)
    if (key.starts_with(prefix)) return result;
  return fail("program not found: " + argv.front(), "", ExitCode::toolchain);
}

namespace {
std::string argument_after(const std::vector<std::string>& argv, const std::string& flag) {
  for (size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == flag) return argv[i + 1];
  return "";
}
}  // namespace

Result<void> FakeCommandRunner::start(size_t token, const std::vector<std::string>& argv) {
  started.push_back(argv);
  m_queue.emplace_back(token, argv);
  max_concurrent = std::max(max_concurrent, m_queue.size());
  return {};
}

std::optional<exec::CommandResult> FakeCommandRunner::wait() {
  if (m_queue.empty()) return std::nullopt;
  auto [token, argv] = m_queue.front();
  m_queue.pop_front();
  std::string output = argument_after(argv, "-o");
  exec::CommandResult result{token, 0, "", 0.01};
  // Outputs are keyed without the ".tmp" suffix the planner adds.
  std::string key = output.ends_with(".tmp") ? output.substr(0, output.size() - 4) : output;
  bool poisoned = !poison.empty() && std::any_of(argv.begin(), argv.end(), [&](const std::string& arg) {
    return m_fs.has(arg) && m_fs.content(arg) == poison;
  });
  if (auto it = failures.find(key); it != failures.end() || poisoned) {
    result.exit_code = poisoned ? 1 : it->second;
    result.output = "error: scripted failure\n";
    m_fs.put(output, "partial");  // a failed compiler may leave a partial file behind
    return result;
  }
  m_fs.put(output, util::join(argv, " "));
  std::string depfile = argument_after(argv, "-MF");
  if (!depfile.empty()) {
    std::string text = output + ": " + argument_after(argv, "-c");
    for (const auto& header : headers[key]) text += " \\\n " + header;
    m_fs.put(depfile, text + "\n");
  }
  return result;
}

std::optional<std::filesystem::path> FakeLauncher::find(const std::string& program) const {
  if (program.find('/') != std::string::npos) return std::filesystem::path(program);
  auto it = programs.find(program);
  if (it == programs.end()) return std::nullopt;
  return it->second;
}

Result<void> RecordingActions::run(const plan::Job& job) {
  if (fail) return kbuild::fail("scripted failure of " + job.id);
  ran.push_back(job.id);
  if (const auto* write = std::get_if<plan::WriteFiles>(&job.action))
    for (const auto& [path, content] : write->files) KB_TRY(m_fs.write_file_atomic(path, content));
  if (const auto* install = std::get_if<plan::InstallVariant>(&job.action))
    KB_TRY(m_fs.write_file_atomic(install->spec.variant_dir / "metadata.json", install->spec.metadata.to_json()));
  return {};
}

}  // namespace kbuild::fakes
