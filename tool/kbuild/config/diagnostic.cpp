#include "kbuild/config/diagnostic.hpp"

#include <algorithm>

namespace kbuild::config {

std::string format_diagnostic(const Diagnostic& d) {
  std::string out = d.location.file;
  if (d.location.line > 0) {
    out += ":" + std::to_string(d.location.line);
    if (d.location.column > 0) out += ":" + std::to_string(d.location.column);
  }
  out += d.severity == Severity::error ? ": error: " : ": warning: ";
  out += d.message + "\n";
  if (!d.hint.empty()) out += "  hint: " + d.hint + "\n";
  return out;
}

std::string format_diagnostics(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  for (const auto& d : diagnostics) out += format_diagnostic(d);
  return out;
}

bool has_errors(const std::vector<Diagnostic>& diagnostics) {
  return std::any_of(diagnostics.begin(), diagnostics.end(),
                     [](const Diagnostic& d) { return d.severity == Severity::error; });
}

}  // namespace kbuild::config
