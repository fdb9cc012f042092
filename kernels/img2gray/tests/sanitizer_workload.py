"""A small workload that runs every CUDA code path once, for compute-sanitizer:

    compute-sanitizer --tool memcheck --error-exitcode 1 python tests/sanitizer_workload.py
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import load  # noqa: E402

kernel = load("cuda")
for dtype in (torch.uint8, torch.float16, torch.bfloat16, torch.float32, torch.float64):
    base = (torch.rand(2, 3, 37, 101, device="cuda") * 255).to(dtype)
    views = [
        base,  # planar, unaligned tail
        base.contiguous(memory_format=torch.channels_last),  # interleaved
        base.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2),  # interleaved view
        base[..., 1:],  # strided (misaligned)
        base[:, :, ::2, ::3],  # strided
        (torch.rand(4, 3, 64, 64, device="cuda") * 255).to(dtype),  # planar, aligned
    ]
    for view in views:
        out = kernel.img2gray(view)
        kernel.img2gray_out(view, torch.empty_like(out))
torch.cuda.synchronize()
print("sanitizer workload done")
