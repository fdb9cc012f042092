// A fuzz target for every parser of untrusted input: build.toml, kbuild.toml, pyproject.toml's
// kernel dependencies, kernels.lock, metadata.json, version bounds, loader variant names and the
// registry's config.toml. The first byte picks the parser; the rest is the input. Any crash, hang,
// sanitizer report or exception escaping a parser is a bug (they return errors as values).
//
// libFuzzer/AFL++ entry point: LLVMFuzzerTestOneInput. tests/fuzz/standalone_main.cpp drives it
// without a fuzzing engine (the short run of the test suite); docs/reliability.md has the long run.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kbuild/config/build_toml.hpp"
#include "kbuild/config/kbuild_toml.hpp"
#include "kbuild/layout/metadata.hpp"
#include "kbuild/lock/lockfile.hpp"
#include "kbuild/lock/pyproject.hpp"
#include "kbuild/lock/variant_select.hpp"
#include "kbuild/lock/version_spec.hpp"
#include "kbuild/server/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 8) {
    case 0: {
      auto outcome = kbuild::config::parse_build_toml(text, "build.toml");
      (void)kbuild::config::format_diagnostics(outcome.diagnostics);
      break;
    }
    case 1:
      (void)kbuild::config::parse_kbuild_toml(text, "kbuild.toml");
      break;
    case 2:
      (void)kbuild::lock::parse_pyproject_dependencies(text, "pyproject.toml");
      break;
    case 3:
      if (auto entries = kbuild::lock::parse_lockfile(text, "kernels.lock"))
        (void)kbuild::lock::render_lockfile(*entries);
      break;
    case 4:
      if (auto metadata = kbuild::layout::Metadata::parse(text)) (void)metadata->to_json();
      break;
    case 5:
      (void)kbuild::lock::parse_version_string(text);
      break;
    case 6:
      (void)kbuild::lock::parse_loader_variant(text);
      break;
    case 7:
      (void)kbuild::server::parse_config(text, "config.toml");
      break;
  }
  return 0;
}
