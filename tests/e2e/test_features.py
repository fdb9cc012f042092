"""build.toml features of kernel-builder's documentation, each in a small kernel of our own: it builds,
passes `kbuild check` and kernel-abi-check, loads through `kernels` and runs on the CPU.
(Stable ABI, tvm-ffi, CUTLASS, C++20 symbols, bad registrations: test_stable_abi.py, test_tvm_ffi.py,
test_compat.py.)"""

import json
import subprocess

import pytest

from conftest import PYTHON, build_args, run_kbuild, write_kernel_files
from test_compat import BINDING, official_abi_check

CPU_VARIANT = "torch211-cxx11-cpu-x86_64-linux"


def run_in_python(code):
    result = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.strip().splitlines()[-1]


def test_a_noarch_kernel_ships_its_python_package_with_extra_data_files(tmp_path):
    """[torch-noarch]: no native code; the package reads a data file shipped beside it."""
    kernel = write_kernel_files(tmp_path / "lookup", {
        "build.toml": """\
            [general]
            name = "lookup"
            version = 1
            edition = 5
            license = "Apache-2.0"
            backends = ["cpu", "cuda"]

            [torch-noarch]
            pyext = ["py", "json"]
            """,
        "torch-ext/lookup/__init__.py": """\
            import json
            from pathlib import Path

            import torch

            _TABLE = json.loads((Path(__file__).parent / "data" / "table.json").read_text())


            def gather(indices):
                return torch.tensor(_TABLE, dtype=torch.float32)[indices]
            """,
        "torch-ext/lookup/data/table.json": "[0.5, 1.5, 2.5, 3.5]\n",
        "torch-ext/lookup/notes.txt": "kernel-builder's noarch build copies the whole package\n",
    })
    run_kbuild(*build_args(kernel))
    assert sorted(p.name for p in (kernel / "build").iterdir()) == ["torch-cpu", "torch-cuda"]
    variant = kernel / "build" / "torch-cpu"
    # As kernel-builder's noarch setup.py: every file of the package but bytecode.
    assert (variant / "data" / "table.json").is_file() and (variant / "notes.txt").is_file()
    assert not list(variant.rglob("*.so"))
    metadata = json.loads((variant / "metadata.json").read_text())
    assert "data/table.json" in metadata["digest"]["files"]
    run_kbuild("check", kernel)
    loaded = run_in_python(f"""
import torch
from pathlib import Path
from kernels import get_local_kernel
kernel = get_local_kernel(Path({str(kernel)!r}), backend="cpu")
print(kernel.gather(torch.tensor([3, 0])).tolist(), Path(kernel.__file__).parent.name)
""")
    assert loaded == "[3.5, 0.5] torch-cpu"


# Custom flags (cxx-flags of a component and of [torch]), Torch bounds and an include directory.
FLAGS_CPP = """\
#include <cstdint>

#include "scale.h"

#if !defined(FROM_COMPONENT_FLAGS) || defined(FROM_TORCH_FLAGS)
#error "a component's cxx-flags are its own"
#endif

int64_t probe() { return SCALE * 7; }
"""


@pytest.mark.slow
def test_custom_flags_include_directories_and_torch_bounds(tmp_path):
    files = {
        "build.toml": """\
            [general]
            name = "flags"
            version = 1
            edition = 5
            license = "Apache-2.0"
            backends = ["cpu"]

            [torch]
            src = ["torch-ext/torch_binding.cpp"]
            cxx-flags = ["-DFROM_TORCH_FLAGS"]
            minver = "2.10"
            maxver = "2.15"

            [kernel.flags_cpu]
            backend = "cpu"
            depends = ["torch"]
            src = ["flags_cpu/flags.cpp"]
            include = ["config"]
            cxx-flags = ["-DFROM_COMPONENT_FLAGS", "-DSCALE=6"]
            """,
        "torch-ext/torch_binding.cpp": BINDING.replace("#include <cstdint>", """\
#include <cstdint>

#ifndef FROM_TORCH_FLAGS
#error "[torch] cxx-flags reach the binding"
#endif"""),
        "torch-ext/flags/__init__.py": "from ._ops import ops\n\n\ndef probe():\n    return ops.probe()\n",
        "config/scale.h": "#pragma once\n",
        "flags_cpu/flags.cpp": FLAGS_CPP,
    }
    kernel = write_kernel_files(tmp_path / "flags", files)
    run_kbuild(*build_args(kernel))
    variant = kernel / "build" / CPU_VARIANT
    assert official_abi_check(variant) == ""
    run_kbuild("check", kernel)
    assert run_in_python(f"""
from pathlib import Path
from kernels import get_local_kernel
print(get_local_kernel(Path({str(kernel)!r}), backend="cpu").probe())
""") == "42"
    # Outside the bounds: kernel-builder's verdict (its CMake: "Torch version X is too new").
    toml = kernel / "build.toml"
    toml.write_text(toml.read_text().replace('maxver = "2.15"', 'maxver = "2.10"'))
    refused = run_kbuild(*build_args(kernel), check=False)
    assert refused.returncode == 3 and "newer than torch.maxver 2.10" in refused.stderr, refused.stderr


def conflicting_kernel(root, name, value):
    component = f"""\
#include <cstdint>

// The same global name in two kernels: each must keep its own.
int64_t shared_helper() {{ return {value}; }}

int64_t probe() {{ return shared_helper(); }}
"""
    return write_kernel_files(root, {
        "build.toml": f"""\
            [general]
            name = "{name}"
            version = 1
            edition = 5
            license = "Apache-2.0"
            backends = ["cpu"]

            [torch]
            src = ["torch-ext/torch_binding.cpp"]

            [kernel.{name}_cpu]
            backend = "cpu"
            depends = []
            src = ["{name}_cpu/{name}.cpp"]
            """,
        "torch-ext/torch_binding.cpp": BINDING,
        f"torch-ext/{name}/__init__.py": "from ._ops import ops\n\n\ndef probe():\n    return ops.probe()\n",
        f"{name}_cpu/{name}.cpp": component,
    })


@pytest.mark.slow
def test_two_kernels_defining_the_same_symbols_keep_their_own_in_one_process(tmp_path):
    kernels = [conflicting_kernel(tmp_path / name, name, value) for name, value in (("alpha", 1), ("beta", 2))]
    for kernel in kernels:
        run_kbuild(*build_args(kernel))
        library = next((kernel / "build" / CPU_VARIANT).glob("*.abi3.so"))
        exported = subprocess.run(["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True,
                                  check=True).stdout
        assert "shared_helper" not in exported and "probe" not in exported, exported  # only PyInit_<ops>
        assert official_abi_check(library.parent) == ""
    # Loaded into one process, also with RTLD_GLOBAL (as some frameworks load extensions).
    loaded = run_in_python(f"""
import os, sys
from pathlib import Path
sys.setdlopenflags(os.RTLD_NOW | os.RTLD_GLOBAL)
from kernels import get_local_kernel
alpha = get_local_kernel(Path({str(kernels[0])!r}), backend="cpu")
beta = get_local_kernel(Path({str(kernels[1])!r}), backend="cpu")
print(alpha.probe(), beta.probe())
""")
    assert loaded == "1 2"
