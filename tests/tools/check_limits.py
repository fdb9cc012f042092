#!/usr/bin/env python3
"""The size limits of docs/architecture.md, checked: no C++ source file over 500 lines, no function
over 80 (from its signature to its closing brace). Run by ctest as `size_limits`:

    python3 tests/tools/check_limits.py tool tests [--max-file 500] [--max-function 80]

Functions are found by a small lexer: comments, string and character literals are blanked out, then
every `{` whose preceding declaration text (since the last `;`, `{` or `}`) ends in `)` plus optional
qualifiers (const, noexcept, override, -> type, a constructor's initialiser list) opens a function
body, unless that text starts a namespace, class, struct, union, enum or control statement. Lambdas
and blocks inside a function count towards the function that contains them.
"""

import argparse
import re
import sys
from pathlib import Path

CONTROL = re.compile(r"^(if|for|while|switch|catch|do|else|return|case)\b")
TYPE_OR_SCOPE = re.compile(r"^(template\s*<.*>\s*)?(namespace|class|struct|union|enum)\b", re.S)


def blank_literals(text: str) -> str:
    """Comments and literals replaced by spaces (newlines kept), so braces inside them do not count."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + (m.group(1) if m else "") + '"', i)
            j = n if end < 0 else end + len(m.group(1) if m else "") + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'" and not (c == "'" and i > 0 and text[i - 1].isalnum()):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j + 1, n) - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(text: str):
    """(name line, first line, last line) of every function body at namespace or class level."""
    code = blank_literals(text)
    stack = []  # per open brace: True if it opens a function body (or is inside one)
    decl_start = 0
    found = []
    for i, c in enumerate(code):
        if c in ";":
            if not any(stack):
                decl_start = i + 1
        elif c == "{":
            inside = any(stack)
            is_function = False
            if not inside:
                decl = " ".join(code[decl_start:i].split())
                decl = re.sub(r"^(public|private|protected)\s*:\s*", "", decl)
                if decl and not TYPE_OR_SCOPE.match(decl) and not CONTROL.match(decl) and "(" in decl:
                    head = decl.split(") :")[0] if ") :" in decl else decl
                    is_function = re.search(r"\)\s*(const|noexcept|override|final|mutable|&|&&|->[^()]*|\s)*$",
                                            head) is not None and "=" not in decl.split("(")[0]
                if is_function:
                    start_line = code.count("\n", 0, decl_start) + 1
                    while start_line <= code.count("\n", 0, i) and not code.splitlines()[start_line - 1].strip():
                        start_line += 1
                    found.append([decl, start_line, None])
            stack.append(is_function or inside)
            if not inside and not is_function:
                decl_start = i + 1
        elif c == "}":
            was_function = stack.pop() if stack else False
            if was_function and not any(stack):
                found[-1][2] = code.count("\n", 0, i) + 1
            if not any(stack):
                decl_start = i + 1
    return [(decl, first, last) for decl, first, last in found if last is not None]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="+")
    parser.add_argument("--max-file", type=int, default=500)
    parser.add_argument("--max-function", type=int, default=80)
    args = parser.parse_args()
    problems = []
    files = 0
    for root in args.roots:
        for path in sorted(Path(root).rglob("*")):
            if path.suffix not in (".cpp", ".hpp", ".h", ".cu") or "build" in path.parts[:1]:
                continue
            files += 1
            text = path.read_text(errors="replace")
            lines = text.count("\n") + (0 if text.endswith("\n") else 1)
            if lines > args.max_file:
                problems.append(f"{path}:1: {lines} lines (limit {args.max_file})")
            for decl, first, last in functions(text):
                length = last - first + 1
                if length > args.max_function:
                    name = re.sub(r"\s*\(.*", "", decl).split()[-1] if decl else "?"
                    problems.append(f"{path}:{first}: function {name} is {length} lines (limit {args.max_function})")
    for problem in problems:
        print(problem)
    print(f"size_limits: {files} files, {len(problems)} over the limits")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
