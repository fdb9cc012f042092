"""Stable-ABI kernels ([torch] stable-abi = "X.Y"): one torch-stable-abi<XY> variant per compute, compiled
against the newest Torch of the matrix with TORCH_TARGET_VERSION, that the `kernels` loader picks for every
Torch from X.Y on. A kernel of our own, written for these tests, loaded under two Torch versions."""

import json
import subprocess

import pytest

from conftest import IMG2GRAY, PYTHON, build_args, run_kbuild, write_kernel_files

STABLE_VARIANT = "torch-stable-abi211-cpu-x86_64-linux"

BINDING = """\
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/tensor.h>

#include "registration.h"

torch::stable::Tensor scale(const torch::stable::Tensor& x, double factor);

STABLE_TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) { ops.def("scale(Tensor x, float factor) -> Tensor"); }
STABLE_TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, CPU, ops) { ops.impl("scale", TORCH_BOX(&scale)); }

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
"""

SCALE_CPU = """\
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/core/ScalarType.h>

#include <cstdint>

using torch::stable::Tensor;

Tensor scale(const Tensor& x, double factor) {
  STD_TORCH_CHECK(x.scalar_type() == torch::headeronly::ScalarType::Float, "scale: expected float32");
  Tensor input = torch::stable::contiguous(x);
  Tensor out = torch::stable::empty_like(input);
  const auto* src = static_cast<const float*>(input.data_ptr());
  auto* dst = static_cast<float*>(out.data_ptr());
  for (int64_t i = 0; i < input.numel(); ++i) dst[i] = static_cast<float>(src[i] * factor);
  return out;
}
"""

# The kernel's own test, run by `kbuild test` with the Torch it chooses; it checks which variant the
# loader picked as well as the result.
TEST_SCALE = """\
import os
from pathlib import Path

import torch
from kernels import get_local_kernel


def test_scale_with_the_stable_abi_variant():
    kernel = get_local_kernel(Path(os.environ["KBUILD_TEST_VARIANT_DIR"]).parents[1], backend="cpu")
    assert os.environ["KBUILD_TEST_VARIANT"] in Path(kernel.__file__).parts
    x = torch.randn(4097)
    torch.testing.assert_close(kernel.scale(x, 2.5), x * 2.5)
"""


def write_stable_kernel(root, stable_abi='"2.11"', component=SCALE_CPU):
    files = {
        "build.toml": f"""\
            [general]
            name = "scale"
            version = 1
            edition = 5
            license = "Apache-2.0"
            backends = ["cpu"]

            [torch]
            src = ["torch-ext/torch_binding.cpp"]
            stable-abi = {stable_abi}

            [kernel.scale_cpu]
            backend = "cpu"
            depends = ["torch"]
            src = ["scale_cpu/scale.cpp"]
            """,
        "kbuild.toml": '[matrix]\ntorch = ["2.11", "2.15"]\ncuda = []\ncpu = true\n',
        "torch-ext/torch_binding.cpp": BINDING,
        "torch-ext/scale/__init__.py": "from ._ops import ops\n\n\ndef scale(x, factor):\n    return ops.scale(x, factor)\n",
        "scale_cpu/scale.cpp": component,
        "tests/test_scale.py": TEST_SCALE,
    }
    # The Torch 2.11 and 2.15 pins of the reference kernel: no resolution against the index.
    files["kbuild.lock"] = (IMG2GRAY / "kbuild.lock").read_text()
    return write_kernel_files(root, files)


def test_variants_lists_one_stable_abi_variant_built_with_the_newest_torch(tmp_path):
    kernel = write_stable_kernel(tmp_path / "scale")
    listed = json.loads(run_kbuild("variants", kernel, "--json").stdout)
    assert [(v["name"], v["torch"], v["stable_abi"]) for v in listed["variants"]] == [(STABLE_VARIANT, "2.15", "2.11")]
    # A stable ABI newer than every Torch of the matrix: kernel-builder's verdict, as a reason.
    newer = write_stable_kernel(tmp_path / "newer", stable_abi='"2.16"')
    listed = json.loads(run_kbuild("variants", newer, "--json").stdout)
    assert listed["variants"] == []
    assert any("is less than the stable ABI version 2.16" in reason for reason in listed["left_out"]), listed


@pytest.mark.slow
@pytest.mark.heavy  # installs Torch 2.15 into a test environment
def test_a_stable_abi_variant_built_on_torch_2_15_loads_and_passes_under_torch_2_11_and_2_15(tmp_path):
    kernel = write_stable_kernel(tmp_path / "scale")
    run_kbuild("build", kernel, "--matrix", "--locked", "--python", PYTHON, timeout=1800)
    assert sorted(p.name for p in (kernel / "build").iterdir()) == [STABLE_VARIANT]
    compile_command = next(c for c in json.loads((kernel / ".kbuild" / "compile_commands.json").read_text())
                           if c["file"].endswith("scale.cpp"))
    assert "-DTORCH_TARGET_VERSION=0x20b000000000000" in compile_command["arguments"]
    assert "/toolchains/torch-2.15.0-" in " ".join(compile_command["arguments"])
    check = run_kbuild("check", kernel)
    assert "ok" in check.stdout
    from test_compat import official_abi_check
    assert official_abi_check(kernel / "build" / STABLE_VARIANT) == ""
    # Torch 2.11 (the oldest it serves, and the test environment's own Torch) and Torch 2.15.
    for torch_args, torch_version in (([], "2.11."), (["--torch", "2.15"], "2.15.")):
        result = run_kbuild("test", kernel, "--python", PYTHON, "--json", "--create-env", "--torch-index", "pypi",
                            *torch_args, timeout=3600)
        (only,) = json.loads(result.stdout)
        assert only["variant"] == STABLE_VARIANT and only["status"] == "passed", only
        assert only["torch"].startswith(torch_version) and only["tests"] == 1, only


def test_a_local_build_needs_a_torch_at_least_as_new_as_the_stable_abi(tmp_path):
    kernel = write_stable_kernel(tmp_path / "scale", stable_abi='"2.12"')
    result = run_kbuild(*build_args(kernel), check=False)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "Torch 2.11.0 is less than the stable ABI version 2.12" in result.stderr
    assert not (kernel / "build").exists()
    # With the local Torch 2.11, a 2.11 target builds the stable variant with the local Torch.
    ok = write_stable_kernel(tmp_path / "ok")
    run_kbuild(*build_args(ok))
    assert sorted(p.name for p in (ok / "build").iterdir()) == [STABLE_VARIANT]
    code = f"""
import torch
from pathlib import Path
from kernels import get_local_kernel
kernel = get_local_kernel(Path({str(ok)!r}), backend="cpu")
x = torch.arange(8, dtype=torch.float32)
assert torch.equal(kernel.scale(x, 2.0), x * 2), kernel.scale(x, 2.0)
print(Path(kernel.__file__).parent.name)
"""
    loaded = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=300)
    assert loaded.returncode == 0, loaded.stdout + loaded.stderr
    assert loaded.stdout.strip().splitlines()[-1] == STABLE_VARIANT


# Reaching past the stable API: Torch's non-stable headers are empty under TORCH_TARGET_VERSION, so a
# kernel that declares a libtorch function itself is what gets through the compiler.
UNSTABLE_CPU = SCALE_CPU.replace("using torch::stable::Tensor;", """\
namespace at {
int get_num_threads();
}

using torch::stable::Tensor;""").replace("return out;", "return at::get_num_threads() > 0 ? out : input;")


def test_a_stable_abi_variant_using_torch_outside_its_stable_api_is_refused(tmp_path):
    kernel = write_stable_kernel(tmp_path / "scale", component=UNSTABLE_CPU)
    result = run_kbuild(*build_args(kernel), check=False)
    assert result.returncode == 1, result.stdout + result.stderr
    output = result.stdout + result.stderr
    assert "uses at::get_num_threads(), which is not in Torch's stable ABI" in output, output
    assert "used by scale_cpu/scale.cpp" in output, output
    assert not (kernel / "build" / STABLE_VARIANT).exists()
    # Torch's own guard: its non-stable headers are empty for a stable-ABI target.
    including = write_stable_kernel(tmp_path / "including",
                                    component="#include <ATen/Parallel.h>\n" + UNSTABLE_CPU.replace(
                                        "namespace at {\nint get_num_threads();\n}\n", ""))
    refused = run_kbuild(*build_args(including), check=False)
    assert refused.returncode == 1 and "get_num_threads" in refused.stdout + refused.stderr
