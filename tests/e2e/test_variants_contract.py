"""`kbuild variants --json` when nothing can be built here (issue 46): one contract for the matrix and
for a local build (--python) — exit 0, an empty list, every reason in left_out — and a kernel whose
CUDA bounds exclude the whole default matrix is told the exact fix. Fast: nothing is compiled."""

import json
import textwrap

from conftest import PYTHON, run_kbuild, write_kernel_files

BINDING = {"torch-ext/torch_binding.cpp": "// binding\n", "torch-ext/torch_binding.h": "#pragma once\n",
           "relu/relu.cpp": "// cpu\n", "relu/relu.cu": "// cuda\n",
           "torch-ext/bounded/__init__.py": "from ._ops import ops\n"}


def kernel(root, general_extra="", torch_extra="", backends='["cpu", "cuda"]'):
    files = dict(BINDING)
    files["build.toml"] = textwrap.dedent(f"""\
        [general]
        name = "bounded"
        version = 1
        edition = 5
        license = "Apache-2.0"
        backends = {backends}
        {general_extra}
        [torch]
        src = ["torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h"]
        {torch_extra}
        [kernel.relu_cpu]
        backend = "cpu"
        depends = ["torch"]
        src = ["relu/relu.cpp"]

        [kernel.relu_cuda]
        backend = "cuda"
        depends = ["torch"]
        src = ["relu/relu.cu"]
        """)
    return write_kernel_files(root, files)


def variants(*args):
    result = run_kbuild("variants", *args, "--json", check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


def test_nothing_to_build_is_an_empty_list_with_reasons_for_the_matrix_and_a_local_build(tmp_path):
    # Torch bounds that neither the default matrix nor the test environment's Torch 2.11 meets.
    bounded = kernel(tmp_path / "bounded", torch_extra='minver = "2.99"')
    matrix = variants(bounded)
    assert matrix["variants"] == [] and any("below torch.minver 2.99" in r for r in matrix["left_out"]), matrix
    local = variants(bounded, "--python", PYTHON)
    assert local["variants"] == [] and local["left_out"], local
    assert any("2.99" in reason for reason in local["left_out"]), local


def test_cuda_bounds_that_exclude_the_matrix_get_the_exact_fix(tmp_path):
    capped = kernel(tmp_path / "capped", general_extra='[general.cuda]\nmaxver = "12.8"\n')
    listed = variants(capped)
    assert all(v["backend"] == "cpu" for v in listed["variants"]), listed  # the CPU variants remain
    fix = [r for r in listed["left_out"] if "within build.toml's CUDA bounds" in r]
    assert fix and '[matrix] cuda = ["12.8"]' in fix[0] and "--cuda-toolkit 12.8=/usr/local/cuda-12.8" in fix[0], listed
    text = run_kbuild("variants", capped).stdout
    assert "--cuda-toolkit 12.8=" in text
