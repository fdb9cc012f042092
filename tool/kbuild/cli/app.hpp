#pragma once

namespace kbuild::cli {

/// Parses the command line, runs the command and returns the process exit code. Prints errors as
/// "kbuild: error: <message>" plus "hint: <hint>" on stderr.
int run(int argc, char** argv);

}  // namespace kbuild::cli
