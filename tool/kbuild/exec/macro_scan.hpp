#pragma once
// Whether C/C++/CUDA source text names a macro, for the ops id's -D (plan::Job::volatile_define):
// a unit whose source and kernel headers never name TORCH_EXTENSION_NAME compiles to the same bytes
// whatever its value, so a new ops id need not recompile it.
//
// The scan is a small lexer that skips comments and the insides of string and character literals
// (a macro is not expanded there). It errs towards "names it": text it cannot lex with certainty (an
// unterminated literal or comment, a raw string) counts as naming the macro, which costs one
// recompile, never a wrong object.

#include <string_view>

namespace kbuild::exec {

/// True when `macro` appears as an identifier outside comments and literals of `text`, or when the
/// text cannot be lexed with certainty.
bool names_macro(std::string_view text, std::string_view macro);

}  // namespace kbuild::exec
