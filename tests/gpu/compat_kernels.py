"""GPU runs of kernels that exercise kernel-builder features (run on the GPU machine by
`scripts/gpu-run compat`; that machine has no network and no `kernels` package):

- a stable-ABI CUDA kernel (torch-stable-abi211) whose CUDA component uses a device lambda, a host
  constexpr function called from device code (nvcc's --expt-extended-lambda and
  --expt-relaxed-constexpr), ENABLE_FP8, and CUTLASS 3.6 (depends = ["cutlass_3_6"]);
- the tvm-ffi kernel of tests/e2e/test_tvm_ffi.py, its CUDA function called on CUDA tensors.

Each is built with kbuild on that machine, from pins and toolchains carried in .device/ (see
scripts/gpu-bundle), imported as the loader imports a variant, and checked against Torch.
Usage: python3 tests/gpu/compat_kernels.py KBUILD DEVICE_DIR WORK_DIR"""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
from conftest import write_kernel_files  # noqa: E402
from test_tvm_ffi import write_tvm_kernel  # noqa: E402

BINDING = """\
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/accelerator.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/core/ScalarType.h>

#include <cstdint>

#include "registration.h"

const char* launch_twice(const float* in, float* out, int64_t n, void* stream);
const char* launch_halve(const void* in, void* out, int64_t n, void* stream);

using torch::headeronly::ScalarType;
using torch::stable::Tensor;

template <typename Launch>
Tensor map(const Tensor& x, ScalarType type, Launch launch) {
  STD_TORCH_CHECK(!x.is_cpu() && x.scalar_type() == type, "expected a CUDA tensor of the right type");
  const Tensor input = torch::stable::contiguous(x);
  Tensor out = torch::stable::empty_like(input);
  const torch::stable::accelerator::DeviceGuard guard(input.get_device_index());
  void* stream = nullptr;
  TORCH_ERROR_CODE_CHECK(aoti_torch_get_current_cuda_stream(input.get_device_index(), &stream));
  const char* error = launch(input.data_ptr(), out.data_ptr(), input.numel(), stream);
  STD_TORCH_CHECK(error == nullptr, error);
  return out;
}

Tensor twice(const Tensor& x) {
  return map(x, ScalarType::Float, [](void* in, void* out, int64_t n, void* stream) {
    return launch_twice(static_cast<const float*>(in), static_cast<float*>(out), n, stream);
  });
}

Tensor halve(const Tensor& x) { return map(x, ScalarType::Half, launch_halve); }

STABLE_TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("twice(Tensor x) -> Tensor");
  ops.def("halve(Tensor x) -> Tensor");
}
STABLE_TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, CUDA, ops) {
  ops.impl("twice", TORCH_BOX(&twice));
  ops.impl("halve", TORCH_BOX(&halve));
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
"""

FEATURES_CU = """\
#include <cuda_runtime.h>
#include <cutlass/numeric_types.h>

#include <cstdint>

#ifndef ENABLE_FP8
#error "kernel-builder defines ENABLE_FP8 for every CUDA compile"
#endif

constexpr float twice_of(float v) { return 2.0f * v; }  // host constexpr, called from device code

template <typename F>
__global__ void map_kernel(const float* in, float* out, int64_t n, F f) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = f(in[i]);
}

__global__ void halve_kernel(const cutlass::half_t* in, cutlass::half_t* out, int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = in[i] * cutlass::half_t(0.5f);
}

static const char* last_error() {
  cudaError_t error = cudaGetLastError();
  return error == cudaSuccess ? nullptr : cudaGetErrorString(error);
}

const char* launch_twice(const float* in, float* out, int64_t n, void* stream) {
  if (n == 0) return nullptr;
  map_kernel<<<(n + 255) / 256, 256, 0, static_cast<cudaStream_t>(stream)>>>(
      in, out, n, [] __device__(float v) { return twice_of(v); });
  return last_error();
}

const char* launch_halve(const void* in, void* out, int64_t n, void* stream) {
  if (n == 0) return nullptr;
  halve_kernel<<<(n + 255) / 256, 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const cutlass::half_t*>(in), static_cast<cutlass::half_t*>(out), n);
  return last_error();
}
"""


def features_kernel(root, lock):
    return write_kernel_files(root, {
        "build.toml": """\
            [general]
            name = "features"
            version = 1
            edition = 5
            license = "Apache-2.0"
            backends = ["cuda"]

            [torch]
            src = ["torch-ext/torch_binding.cpp"]
            stable-abi = "2.11"

            [kernel.features_cuda]
            backend = "cuda"
            depends = ["cutlass_3_6"]
            src = ["features_cuda/features.cu"]
            cuda-capabilities = ["9.0"]
            """,
        "torch-ext/torch_binding.cpp": BINDING,
        "torch-ext/features/__init__.py":
            "from ._ops import ops\n\n\ndef twice(x):\n    return ops.twice(x)\n\n\n"
            "def halve(x):\n    return ops.halve(x)\n",
        "features_cuda/features.cu": FEATURES_CU,
        "kbuild.lock": json.dumps(lock, indent=2) + "\n",
    })


def import_variant(variant):
    """Imports build/<variant>/ as the kernels loader does (package named after metadata's id)."""
    metadata = json.loads((variant / "metadata.json").read_text())
    spec = importlib.util.spec_from_file_location(metadata["id"], variant / "__init__.py",
                                                  submodule_search_locations=[str(variant)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[metadata["id"]] = module
    spec.loader.exec_module(module)
    return module


def build(kbuild, kernel):
    result = subprocess.run([kbuild, "build", str(kernel), "--python", sys.executable, "-j", str(os.cpu_count())],
                            capture_output=True, text=True)
    print(result.stdout[-2000:], result.stderr[-4000:])
    assert result.returncode == 0, f"kbuild build {kernel.name} failed"
    check = subprocess.run([kbuild, "check", str(kernel)], capture_output=True, text=True)
    print(check.stdout.strip())
    assert check.returncode == 0, check.stderr


def main(kbuild, device_dir, work):
    work.mkdir(parents=True, exist_ok=True)
    pins = json.loads((device_dir / "pins.json").read_text())
    cuda = f"cu{torch.version.cuda.replace('.', '')}"

    features = features_kernel(work / "features", pins)
    build(kbuild, features)
    module = import_variant(features / "build" / f"torch-stable-abi211-{cuda}-x86_64-linux")
    x = torch.randn(1 << 20, device="cuda")
    torch.testing.assert_close(module.twice(x), 2 * x)
    h = torch.randn(1 << 20, device="cuda", dtype=torch.float16)
    torch.testing.assert_close(module.halve(h), h * 0.5)
    print(f"stable-ABI CUDA kernel (lambda, relaxed constexpr, ENABLE_FP8, CUTLASS 3.6): matches Torch on "
          f"{torch.cuda.get_device_name()} with Torch {torch.__version__}")

    axpy = write_tvm_kernel(work / "axpy", backends=("cuda",))
    (axpy / "kbuild.lock").write_text(json.dumps(pins, indent=2) + "\n")
    build(kbuild, axpy)
    module = import_variant(axpy / "build" / f"tvm-ffi01-{cuda}-x86_64-linux")
    x = torch.randn(10007, device="cuda")
    out = torch.ones(10007, device="cuda")
    module.axpy(out, x, 0.5)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, 1 + 0.5 * x)
    import tvm_ffi
    print(f"tvm-ffi CUDA kernel: axpy matches Torch (tvm_ffi {tvm_ffi.__version__})")


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]))
