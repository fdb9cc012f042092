"""tvm-ffi kernels ([tvm-ffi]): no Torch, a plain shared library opened by tvm_ffi.load_module, one
tvm-ffi<XY> variant per compute; apache-tvm-ffi's headers and libtvm_ffi.so come from its PyPI wheel,
pinned in kbuild.lock. A kernel of our own, written for these tests, with a CPU and a CUDA function."""

import json
import shutil
import subprocess

import pytest

from conftest import PYTHON, build_args, run_kbuild, write_kernel_files
from test_compat import official_abi_check

pytestmark = pytest.mark.slow  # they compile kernels (pytest.ini)

CPU_VARIANT = "tvm-ffi01-cpu-x86_64-linux"
CUDA_VARIANT = "tvm-ffi01-cu130-x86_64-linux"

BINDING = """\
#include <tvm/ffi/tvm_ffi.h>

#ifdef CPU_KERNEL
void axpy_cpu(tvm::ffi::TensorView out, tvm::ffi::TensorView x, double alpha);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(axpy_cpu, axpy_cpu);
#endif

#ifdef CUDA_KERNEL
void axpy_cuda(tvm::ffi::TensorView out, tvm::ffi::TensorView x, double alpha);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(axpy_cuda, axpy_cuda);
#endif
"""

# out += alpha * x, float32, contiguous.
CHECKS = """\
#include <tvm/ffi/tvm_ffi.h>

inline void check_pair(const tvm::ffi::TensorView& out, const tvm::ffi::TensorView& x, int device_type) {
  TVM_FFI_CHECK(x.dtype().code == kDLFloat && x.dtype().bits == 32, TypeError) << "axpy: expected float32";
  TVM_FFI_CHECK(out.dtype().code == kDLFloat && out.dtype().bits == 32, TypeError) << "axpy: expected float32";
  TVM_FFI_CHECK(x.numel() == out.numel(), ValueError) << "axpy: sizes differ";
  TVM_FFI_CHECK(x.device().device_type == device_type && out.device().device_type == device_type, ValueError)
      << "axpy: wrong device";
  TVM_FFI_CHECK(x.IsContiguous() && out.IsContiguous(), ValueError) << "axpy: expected contiguous tensors";
}
"""

AXPY_CPU = """\
#include <cstdint>

#include "../common/checks.h"

void axpy_cpu(tvm::ffi::TensorView out, tvm::ffi::TensorView x, double alpha) {
  check_pair(out, x, kDLCPU);
  const auto* src = static_cast<const float*>(x.data_ptr());
  auto* dst = static_cast<float*>(out.data_ptr());
  for (int64_t i = 0; i < x.numel(); ++i) dst[i] += static_cast<float>(alpha) * src[i];
}
"""

AXPY_CU = """\
#include <cstdint>

#include "../common/checks.h"

__global__ void axpy_kernel(float* out, const float* x, float alpha, int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] += alpha * x[i];
}

void axpy_cuda(tvm::ffi::TensorView out, tvm::ffi::TensorView x, double alpha) {
  check_pair(out, x, kDLCUDA);
  int64_t n = x.numel();
  if (n == 0) return;
  axpy_kernel<<<static_cast<unsigned>((n + 255) / 256), 256>>>(static_cast<float*>(out.data_ptr()),
                                                              static_cast<const float*>(x.data_ptr()),
                                                              static_cast<float>(alpha), n);
  cudaError_t error = cudaGetLastError();
  TVM_FFI_CHECK(error == cudaSuccess, RuntimeError) << "axpy: " << cudaGetErrorString(error);
}
"""

PACKAGE = """\
import tvm_ffi

from ._ops import ops, torch_add_op_namespace_prefix


def axpy(out, x, alpha):
    \"\"\"out += alpha * x (float32, contiguous; CPU or CUDA tensors of any DLPack framework).\"\"\"
    out_view, x_view = tvm_ffi.from_dlpack(out), tvm_ffi.from_dlpack(x)
    function = ops.axpy_cuda if x_view.device.type == "cuda" else ops.axpy_cpu
    function(out_view, x_view, alpha)
    return out
"""

TEST_AXPY = """\
import os
from pathlib import Path

import pytest
import torch
from kernels import get_local_kernel

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() and os.environ["KBUILD_TEST_BACKEND"] == "cuda" else [])


@pytest.mark.parametrize("device", DEVICES)
def test_axpy(device):
    kernel = get_local_kernel(Path(os.environ["KBUILD_TEST_VARIANT_DIR"]).parents[1],
                              backend=os.environ["KBUILD_TEST_BACKEND"])
    if device == "cpu" and os.environ["KBUILD_TEST_BACKEND"] == "cuda":
        pytest.skip("the CUDA variant exports the CUDA function only")
    x = torch.randn(10007, device=device)
    out = torch.ones(10007, device=device)
    torch.testing.assert_close(kernel.axpy(out, x, 0.5), 1 + 0.5 * x)
"""


def write_tvm_kernel(root, backends=("cpu", "cuda")):
    toml = f"""\
        [general]
        name = "axpy"
        version = 1
        edition = 5
        license = "Apache-2.0"
        backends = {json.dumps(list(backends))}

        [tvm-ffi]
        src = ["tvm-ffi-ext/tvm_ffi_binding.cpp"]

        [kernel.axpy_cpu]
        backend = "cpu"
        depends = []
        src = ["axpy_cpu/axpy.cpp", "common/checks.h"]

        [kernel.axpy_cuda]
        backend = "cuda"
        depends = []
        src = ["axpy_cuda/axpy.cu", "common/checks.h"]
        cuda-capabilities = ["9.0"]
        """
    files = {
        "build.toml": toml,
        "tvm-ffi-ext/tvm_ffi_binding.cpp": BINDING,
        "tvm-ffi-ext/axpy/__init__.py": PACKAGE,
        "common/checks.h": CHECKS,
        "axpy_cpu/axpy.cpp": AXPY_CPU,
        "axpy_cuda/axpy.cu": AXPY_CU,
        "tests/test_axpy.py": TEST_AXPY,
    }
    return write_kernel_files(root, files)


def test_a_tvm_ffi_kernel_builds_passes_the_checks_and_runs_through_kernels(tmp_path):
    kernel = write_tvm_kernel(tmp_path / "axpy")
    result = run_kbuild(*build_args(kernel), timeout=1800)
    assert sorted(p.name for p in (kernel / "build").iterdir()) == [CPU_VARIANT, CUDA_VARIANT], result.stdout
    lock = json.loads((kernel / "kbuild.lock").read_text())
    (pin,) = lock["toolchains"]["tvm-ffi-0.1"]
    assert pin["package"] == "apache-tvm-ffi" and pin["version"].startswith("0.1.") and len(pin["sha256"]) == 64
    for variant in (CPU_VARIANT, CUDA_VARIANT):
        directory = kernel / "build" / variant
        metadata = json.loads((directory / "metadata.json").read_text())
        library = directory / (metadata["id"] + ".so")
        assert library.is_file() and not list(directory.glob("*.abi3.so"))
        assert official_abi_check(directory) == ""
        needed = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True, check=True).stdout
        assert "libtvm_ffi.so" in needed and "libtorch" not in needed and "libc10" not in needed
    assert "ok" in run_kbuild("check", kernel).stdout
    commands = json.loads((kernel / ".kbuild" / "compile_commands.json").read_text())
    binding = next(c["arguments"] for c in commands if c["file"].endswith("tvm_ffi_binding.cpp"))
    assert any(a.startswith("-DTVM_FFI_EXTENSION_NAME=_axpy_") for a in binding) and "-std=c++17" in binding
    assert not any("torch" in a for a in binding if a.startswith("-I") or "/" in a and "include" in a), binding

    # The kernels loader picks the tvm-ffi variant for the installed tvm_ffi and runs it (CPU).
    code = f"""
import torch
from pathlib import Path
from kernels import get_local_kernel
kernel = get_local_kernel(Path({str(kernel)!r}), backend="cpu")
x = torch.arange(6, dtype=torch.float32)
print(kernel.axpy(torch.ones(6), x, 2.0).tolist(), Path(kernel.__file__).parent.name)
"""
    loaded = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=300)
    assert loaded.returncode == 0, loaded.stdout + loaded.stderr
    assert loaded.stdout.strip().splitlines()[-1] == f"[1.0, 3.0, 5.0, 7.0, 9.0, 11.0] {CPU_VARIANT}"

    tested = run_kbuild("test", kernel, "--python", PYTHON, "--variant", CPU_VARIANT, "--json", timeout=600)
    (only,) = json.loads(tested.stdout)
    assert only["status"] == "passed" and only["tests"] >= 1, only

    # The matrix: one tvm-ffi variant per compute, no Torch; `toolchains lock --update` keeps the pin.
    listed = json.loads(run_kbuild("variants", kernel, "--json").stdout)
    assert {v["name"] for v in listed["variants"]} >= {CPU_VARIANT, CUDA_VARIANT}, listed
    assert all(v["torch"] is None for v in listed["variants"]), listed
    run_kbuild("toolchains", "lock", kernel, "--update", "--python", PYTHON, timeout=600)
    assert "tvm-ffi-0.1" in json.loads((kernel / "kbuild.lock").read_text())["toolchains"]

    # A no-op rebuild runs nothing; the pin is reused with --locked.
    again = run_kbuild(*build_args(kernel, "--locked"))
    assert "CXX" not in again.stdout and "LINK" not in again.stdout, again.stdout


def test_a_tvm_ffi_function_missing_from_the_library_is_refused(tmp_path):
    """A library exporting no tvm-ffi function would load and then offer nothing."""
    kernel = write_tvm_kernel(tmp_path / "axpy", backends=("cpu",))
    (kernel / "tvm-ffi-ext" / "tvm_ffi_binding.cpp").write_text("#include <tvm/ffi/tvm_ffi.h>\n")
    result = run_kbuild(*build_args(kernel), check=False)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "exports no tvm-ffi function" in result.stdout + result.stderr
    assert not (kernel / "build" / CPU_VARIANT).exists()
    shutil.rmtree(kernel / ".kbuild")
