#include "kbuild/usecase/ops_check.hpp"

#include <algorithm>

#include "kbuild/layout/templates.hpp"
#include "kbuild/usecase/kernel_source.hpp"
#include "kbuild/util/hash.hpp"
#include "kbuild/util/strings.hpp"

namespace kbuild::usecase {

Result<std::vector<std::string>> python_sources(const util::FileSystem& fs, const std::filesystem::path& kernel_dir) {
  KB_TRY_ASSIGN(std::vector<std::string> files, kernel_source_files(fs, kernel_dir));
  std::erase_if(files, [](const std::string& rel) { return !rel.ends_with(".py"); });
  return files;
}

// The script prints "REL_PATH:LINE:COLUMN KIND NAME" per problem (KIND "unparsable" for a syntax error) and
// exits 1. A failure without such lines is the interpreter's, not the kernel's (no Python 3, a crash), so it
// is a toolchain error (exit 3) rather than a verdict on the sources.
Result<void> registration_prefix_verdict(const util::ProcessResult& result, const std::filesystem::path& kernel_dir) {
  if (result.exit_code == 0) return {};
  std::vector<std::string> registrations, unparsable;
  for (const auto& line : util::split(result.out, '\n')) {
    if (line.empty()) continue;
    std::string located = (kernel_dir / line).string();
    (line.find(" unparsable ") != std::string::npos ? unparsable : registrations).push_back(located);
  }
  if (registrations.empty() && unparsable.empty())
    return fail("the registration-prefix check could not run (exit " + std::to_string(result.exit_code) +
                    "): " + std::string(util::trim(result.err)),
                "is the --python interpreter a working Python 3?", ExitCode::toolchain);
  std::string message;
  if (!registrations.empty())
    message = "Found Torch library registrations that do not use `add_op_namespace_prefix`:\n  " +
              util::join(registrations, "\n  ");
  if (!unparsable.empty())
    message += std::string(message.empty() ? "" : "\n") + "Python files that cannot be parsed:\n  " +
               util::join(unparsable, "\n  ");
  return fail(message,
              registrations.empty()
                  ? "kernel-builder parses every .py file of the kernel; fix the syntax error"
                  : "name the op through _ops.py: `from ._ops import add_op_namespace_prefix`, then e.g. "
                    "@torch.library.register_fake(add_op_namespace_prefix(\"my_op\"))",
              ExitCode::usage);
}

// The stamp covers the sources only, not the rule: bump "torch-ops-check-v1" when
// templates/checks/torch_ops_check.py changes, or stamps of a pass under the old rule still count. The
// script goes in through `-c` (it is embedded in kbuild), and paths are passed relative to kernel_dir, as
// the verdict reports them.
Result<std::string> check_registration_prefix(util::ProcessLauncher& launcher, const util::FileSystem& fs,
                                              const std::string& python, const std::filesystem::path& kernel_dir,
                                              const std::filesystem::path& stamp_file) {
  KB_TRY_ASSIGN(std::vector<std::string> files, python_sources(fs, kernel_dir));
  util::Hasher hasher;
  hasher.update("torch-ops-check-v1\n");
  for (const auto& rel : files) {
    auto st = fs.stat(kernel_dir / rel);
    hasher.update(rel + "\t" + std::to_string(st.size) + "\t" + std::to_string(st.mtime_ns) + "\n");
  }
  std::string stamp = hasher.finish_hex();
  if (files.empty() || util::trim(fs.read_file(stamp_file).value_or("")) == stamp) return stamp;
  auto script = layout::find_template("checks/torch_ops_check.py");
  if (!script) return fail("internal error: the registration-prefix check is not embedded");
  std::vector<std::string> argv = {python, "-c", std::string(*script), kernel_dir.string()};
  argv.insert(argv.end(), files.begin(), files.end());
  KB_TRY_ASSIGN(util::ProcessResult result, launcher.run(argv));
  KB_TRY(registration_prefix_verdict(result, kernel_dir));
  return stamp;
}

}  // namespace kbuild::usecase
