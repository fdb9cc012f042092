#include "support/fakes.hpp"

#include <algorithm>

#include "kbuild/layout/install.hpp"
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

Result<void> FakeCommandRunner::start(size_t token, const std::vector<std::string>& argv,
                                      const std::map<std::string, std::string>&) {
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
  if (auto peak = peak_kib.find(key); peak != peak_kib.end()) result.peak_rss_kib = peak->second;
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
    KB_TRY(m_fs.write_file_atomic(install->spec->variant_dir / "metadata.json", install->spec->metadata.to_json()));
  return {};
}

std::expected<net::HttpResponse, net::TransportError> FakeHttp::send(const net::HttpRequest& request) {
  requests.push_back(request);
  std::string url = request.url.substr(0, request.url.find('?'));
  std::string key = request.method + " " + url;
  if (store_puts && request.method == "PUT") {
    answer("GET " + url, request.body);
    net::HttpResponse created;
    created.status = 201;
    return created;
  }
  if (auto exact = answers.find(key); exact != answers.end()) return exact->second;
  const net::HttpResponse* best = nullptr;
  size_t best_length = 0;
  for (const auto& [pattern, response] : answers) {
    if (pattern.empty() || pattern.back() != '*') continue;
    std::string prefix = pattern.substr(0, pattern.size() - 1);
    if (key.starts_with(prefix) && prefix.size() >= best_length) {
      best = &response;
      best_length = prefix.size();
    }
  }
  if (best) return *best;
  net::HttpResponse missing;
  missing.status = 404;
  missing.body = R"({"error": "not found"})";
  return missing;
}

void FakeHttp::answer(const std::string& key, std::string body, int status) {
  net::HttpResponse response;
  response.status = status;
  response.body = std::move(body);
  answers[key] = std::move(response);
}

}  // namespace kbuild::fakes
