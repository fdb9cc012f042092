# kbuild's registration-prefix check, run with the build's Python before anything is compiled
# (kernel-builder runs the same rule over a kernel's sources and refuses the build).
#
# Usage: python -c "$(this text)" ROOT REL_PATH...
# Prints one line per problem, "REL_PATH:LINE:COLUMN KIND NAME", where KIND is "function",
# "async function", "class" or "unparsable" (then NAME is the parser's message); exits 1 when there
# is any, else 0.
#
# The rule: a top-level def, async def or class whose decorator is a call of custom_op, triton_op,
# register_kernel, register_fake, register_vmap or register_torch_dispatch (by bare name or attribute)
# with a positional first argument that is not a call of add_op_namespace_prefix. Ops registered under
# a bare name would collide between two builds of one kernel in a process; _ops.py's
# add_op_namespace_prefix puts them in the build's own namespace.
import ast
import os
import sys

REGISTRARS = {"custom_op", "triton_op", "register_kernel", "register_fake", "register_vmap", "register_torch_dispatch"}
KINDS = {ast.FunctionDef: "function", ast.AsyncFunctionDef: "async function", ast.ClassDef: "class"}


def called_name(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def problems(root, rel):
    try:
        with open(os.path.join(root, rel), "rb") as source:
            tree = ast.parse(source.read(), filename=rel)
    except (SyntaxError, ValueError) as error:
        line = getattr(error, "lineno", None) or 1
        column = getattr(error, "offset", None) or 1
        yield f"{rel}:{line}:{column} unparsable {getattr(error, 'msg', None) or error}"
        return
    for node in ast.iter_child_nodes(tree):
        kind = KINDS.get(type(node))
        if kind is None:
            continue
        for decorator in node.decorator_list:
            if not (isinstance(decorator, ast.Call) and called_name(decorator.func) in REGISTRARS and decorator.args):
                continue
            first = decorator.args[0]
            if isinstance(first, ast.Call) and called_name(first.func) == "add_op_namespace_prefix":
                continue
            yield f"{rel}:{decorator.lineno}:{decorator.col_offset + 1} {kind} {node.name}"


def main():
    root, paths = sys.argv[1], sys.argv[2:]
    found = [line for rel in paths for line in problems(root, rel)]
    for line in found:
        print(line)
    sys.exit(1 if found else 0)


main()
