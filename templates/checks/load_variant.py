# kbuild test's check of a variant whose tests cannot run on this machine (a CUDA variant where
# there is no GPU): its package imports with this Torch, and every op its library and Python code
# registered in the variant's op namespace has a kernel for the variant's device.
#
# Usage: python -c "$(this text)" PYTHON_NAME DISPATCH_KEY, with PYTHONPATH naming a directory where
# `import PYTHON_NAME` finds the variant (usecase/test_variants.cpp makes one).
# Prints "NAMESPACE OP..." (the ops checked) and exits 0; or prints what is wrong and exits 1.
import importlib
import sys

import torch

name, key = sys.argv[1], sys.argv[2]
try:
    importlib.import_module(name)
    namespace = importlib.import_module(name + "._ops").add_op_namespace_prefix("x")[: -len("::x")]
except Exception as error:  # the loader would fail the same way: say how
    print(f"import {name} failed: {type(error).__name__}: {error}")
    sys.exit(1)
ops = sorted(op for op in torch._C._dispatch_get_all_op_names() if op.startswith(namespace + "::"))
if not ops:
    print(f"importing {name} registered no op in {namespace}")
    sys.exit(1)
# A composite op has no kernel of its own for the device: it runs through others that do.
keys = (key, "CompositeImplicitAutograd", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional")
missing = [op for op in ops if not any(torch._C._dispatch_has_kernel_for_dispatch_key(op, k) for k in keys)]
if missing:
    print(f"no {key} kernel for: {' '.join(missing)}")
    sys.exit(1)
print(namespace, *(op.split("::", 1)[1] for op in ops))
