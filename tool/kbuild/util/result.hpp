#pragma once
// Errors as values. Everything below cli/ returns Result<T>; only cli/app.cpp turns an Error into a
// message on stderr and an exit code.

#include <expected>
#include <string>
#include <utility>

namespace kbuild {

/// Process exit codes of the kbuild executable (documented in docs/cli.md).
enum class ExitCode : int {
  ok = 0,
  failure = 1,        ///< a build job failed, a check found problems, a remote operation failed
  usage = 2,          ///< bad command line or invalid input file (build.toml, lock file, ...)
  toolchain = 3,      ///< a required compiler, Python or Torch could not be found or used
  network = 4,        ///< the Hub or a download could not be reached or answered an error
  interrupted = 130,  ///< stopped by SIGINT/SIGTERM
};

/// What kind of failure an Error reports, for code that decides on it (retry, fall back): decisions
/// read these fields, never the message text.
enum class ErrorKind {
  unspecified,
  http,       ///< the server answered with an error status (http_status)
  transport,  ///< no HTTP answer: connection refused, reset, timeout
  io,         ///< a file operation failed (os_errno)
};

/// An error that can be shown to a user: what went wrong, and what to try next.
struct Error {
  ExitCode code = ExitCode::failure;
  std::string message;
  std::string hint;  ///< optional; printed as "hint: ..." after the message
  ErrorKind kind = ErrorKind::unspecified;
  int http_status = 0;  ///< with ErrorKind::http
  int os_errno = 0;     ///< with ErrorKind::io, when the OS gave one
};

template <class T>
using Result = std::expected<T, Error>;

/// Shorthand for returning an error from a function that returns Result<T>.
inline std::unexpected<Error> fail(std::string message, std::string hint = {}, ExitCode code = ExitCode::failure) {
  return std::unexpected(Error{code, std::move(message), std::move(hint)});
}

inline std::unexpected<Error> fail(Error error) { return std::unexpected(std::move(error)); }

}  // namespace kbuild

/// Evaluates `expr` (a Result); on error returns the error from the enclosing function.
#define KB_TRY(expr)                                                     \
  do {                                                                   \
    auto kb_try_result_ = (expr);                                        \
    if (!kb_try_result_) return std::unexpected(kb_try_result_.error()); \
  } while (0)

#define KB_CONCAT_INNER_(a, b) a##b
#define KB_CONCAT_(a, b) KB_CONCAT_INNER_(a, b)
/// Declares `var` from a Result's value, or returns its error from the enclosing function.
#define KB_TRY_ASSIGN(var, expr) KB_TRY_ASSIGN_IMPL_(KB_CONCAT_(kb_tmp_, __LINE__), var, expr)
#define KB_TRY_ASSIGN_IMPL_(tmp, var, expr)                 \
  auto tmp = (expr);                                        \
  if (!tmp) return std::unexpected(std::move(tmp).error()); \
  var = std::move(*tmp)
