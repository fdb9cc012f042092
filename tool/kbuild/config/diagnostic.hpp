#pragma once
// Diagnostics about an input file, printed as `file:line:col: error: message` plus an optional hint
// line, the format compilers use so editors can jump to the location.

#include <functional>
#include <string>
#include <vector>

#include "kbuild/config/model.hpp"

namespace kbuild::config {

enum class Severity { error, warning };

struct Diagnostic {
  Severity severity = Severity::error;
  SourceLocation location;
  std::string message;
  std::string hint;
};

/// "file:line:col: error: message\n  hint: ...\n"
std::string format_diagnostic(const Diagnostic& diagnostic);
std::string format_diagnostics(const std::vector<Diagnostic>& diagnostics);
bool has_errors(const std::vector<Diagnostic>& diagnostics);

/// Where a library function sends the diagnostics of an input file (the CLI prints them).
using DiagnosticSink = std::function<void(const std::vector<Diagnostic>&)>;

}  // namespace kbuild::config
