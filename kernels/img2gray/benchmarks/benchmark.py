#!/usr/bin/env python3
"""img2gray benchmark: GB/s against torchvision (eager and torch.compile) and a memory copy.

    python benchmarks/benchmark.py            # GPU (CUDA events, median of --reps after warm-up)
    python benchmarks/benchmark.py --cpu      # CPU: against OpenCV cvtColor, torchvision, a copy

Traffic is counted as input bytes + output bytes. The ceiling is a copy moving the same traffic
(reading and writing half of it each), measured in the same run; "% copy" = GB/s / copy GB/s.
The kernel is loaded from ../build (override with IMG2GRAY_KERNEL_DIR) through the `kernels`
package when it is installed.

The same file serves the `kernels` CLI: `kernels benchmark .` (after `kbuild build .`) or
`kernels benchmark <org>/img2gray` finds Img2grayBenchmark below (a kernels.benchmark.Benchmark) and
times its workloads, verified against torchvision.
"""

import argparse
import importlib.util
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch
from torchvision.transforms.functional import rgb_to_grayscale


def load_kernel(backend):
    kernel_dir = Path(os.environ.get("IMG2GRAY_KERNEL_DIR", Path(__file__).resolve().parent.parent))
    try:
        import kernels

        return kernels.get_local_kernel(kernel_dir, backend=backend)
    except ImportError:
        major, minor = torch.__version__.split("+")[0].split(".")[:2]
        compute = "cpu" if backend == "cpu" else "cu" + torch.version.cuda.replace(".", "")[:3]
        path = kernel_dir / "build" / f"torch{major}{minor}-cxx11-{compute}-x86_64-linux"
        metadata = json.loads((path / "metadata.json").read_text())
        spec = importlib.util.spec_from_file_location(metadata["id"], path / "__init__.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[metadata["id"]] = module
        spec.loader.exec_module(module)
        return module


def make_image(shape, dtype, device, layout):
    if dtype == torch.uint8:
        base = torch.randint(0, 256, shape, dtype=dtype, device=device)
    else:
        base = torch.rand(shape, device=device).to(dtype)
    if layout == "nchw":
        return base
    if layout == "channels_last":
        return base.contiguous(memory_format=torch.channels_last)
    if layout == "hwc_view":  # an interleaved [N, H, W, 3] image seen as [N, 3, H, W]
        return base.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
    raise ValueError(layout)


def traffic_bytes(image):
    return image.numel() * image.element_size() * 4 // 3  # 3 channels in, 1 out


def gpu_time(fn, reps, warmup):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


def cpu_times(impls, reps, warmup):
    """Median time of each implementation, measured round-robin so that a noisy neighbour on a
    shared machine slows every implementation alike instead of whichever ran at the time."""
    for _ in range(warmup):
        for _, fn in impls:
            fn()
    times = {label: [] for label, _ in impls}
    for _ in range(reps):
        for label, fn in impls:
            start = time.perf_counter()
            fn()
            times[label].append(time.perf_counter() - start)
    return {label: statistics.median(values) for label, values in times.items()}


GPU_CASES = [
    ("batch 16x3x2160x3840 float32", (16, 3, 2160, 3840), torch.float32, "nchw"),
    ("batch 16x3x2160x3840 bfloat16", (16, 3, 2160, 3840), torch.bfloat16, "nchw"),
    ("batch 16x3x2160x3840 float16", (16, 3, 2160, 3840), torch.float16, "nchw"),
    ("batch 16x3x2160x3840 uint8", (16, 3, 2160, 3840), torch.uint8, "nchw"),
    ("batch 16x2160x3840x3 uint8 HWC view", (16, 3, 2160, 3840), torch.uint8, "hwc_view"),
    ("batch 16x3x2160x3840 float32 channels_last", (16, 3, 2160, 3840), torch.float32, "channels_last"),
    ("1x3x1080x1920 float32", (1, 3, 1080, 1920), torch.float32, "nchw"),
    ("1x3x1080x1920 uint8", (1, 3, 1080, 1920), torch.uint8, "nchw"),
    ("tiny 1x3x64x64 float32", (1, 3, 64, 64), torch.float32, "nchw"),
]


def run_gpu(args):
    kernel = load_kernel("cuda")
    print(f"# img2gray GPU benchmark  {time.strftime('%Y-%m-%d')}  {torch.cuda.get_device_name()}  "
          f"torch {torch.__version__}  (median of {args.reps}, CUDA events)")
    header = f"{'case':44} {'impl':20} {'time':>10} {'GB/s':>8} {'% copy':>7} {'vs compiled':>11}"
    print(header)
    print("-" * len(header))
    results = []
    for name, shape, dtype, layout in GPU_CASES:
        if args.filter and args.filter not in name:
            continue
        image = make_image(shape, dtype, "cuda", layout)
        out = torch.empty((shape[0], 1, shape[2], shape[3]), dtype=dtype, device="cuda")
        traffic = traffic_bytes(image)
        half = traffic // 2
        src, dst = torch.empty(half, dtype=torch.uint8, device="cuda"), torch.empty(half, dtype=torch.uint8, device="cuda")
        torch._dynamo.reset()
        compiled = torch.compile(rgb_to_grayscale, dynamic=False)
        assert torch.allclose(kernel.img2gray(image).float(), rgb_to_grayscale(image).float(), atol=1.01 if dtype == torch.uint8 else 1e-2)
        impls = [
            ("img2gray", lambda: kernel.img2gray_out(image, out)),
            ("img2gray (alloc)", lambda: kernel.img2gray(image)),
            # The op called directly: through the Python autograd kernel that register_autograd
            # installs, which the public img2gray skips when no gradient can flow.
            ("op via autograd", lambda: kernel.ops.img2gray(image)),
            ("torchvision eager", lambda: rgb_to_grayscale(image)),
            ("torchvision compile", lambda: compiled(image)),
            ("copy (ceiling)", lambda: dst.copy_(src)),
        ]
        timings = {label: gpu_time(fn, args.reps, args.warmup) for label, fn in impls}
        copy_rate = traffic / timings["copy (ceiling)"] / 1e9
        for label, _ in impls:
            t = timings[label]
            rate = traffic / t / 1e9
            speedup = timings["torchvision compile"] / t
            shown = f"{t * 1e6:8.1f}us" if t < 1e-3 else f"{t * 1e3:8.3f}ms"
            print(f"{name:44} {label:20} {shown:>10} {rate:8.0f} {100 * rate / copy_rate:6.1f}% {speedup:10.2f}x")
            results.append({"case": name, "impl": label, "seconds": t, "gbps": rate, "pct_copy": 100 * rate / copy_rate})
        del image, out, src, dst
        torch.cuda.empty_cache()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


CPU_CASES = [
    ("1080p uint8 HWC", (1080, 1920), torch.uint8, "hwc"),
    ("4K uint8 HWC", (2160, 3840), torch.uint8, "hwc"),
    ("4K float32 NCHW", (2160, 3840), torch.float32, "nchw"),
    ("1080p float32 NCHW", (1080, 1920), torch.float32, "nchw"),
]


def run_cpu(args):
    """Every case at each thread count of --threads (Torch's intra-op pool and OpenCV's alike)."""
    import cv2

    kernel = load_kernel("cpu")
    counts = [int(n) for n in args.threads.split(",")] if args.threads else [torch.get_num_threads()]
    print(f"# img2gray CPU benchmark  {time.strftime('%Y-%m-%d')}  {platform.processor() or platform.machine()}  "
          f"{os.cpu_count()} CPUs  threads {','.join(map(str, counts))}  torch {torch.__version__}  "
          f"opencv {cv2.__version__}  (median of {args.reps}, round-robin)")
    header = f"{'case':22} {'thr':>3} {'impl':18} {'time':>10} {'GB/s':>7} {'% copy':>7} {'vs opencv':>9}"
    print(header)
    print("-" * len(header))
    results = []
    for threads in counts:
        torch.set_num_threads(threads)
        cv2.setNumThreads(threads)
        for case in CPU_CASES:
            if not args.filter or args.filter in case[0]:
                results += cpu_case(kernel, cv2, case, threads, args)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


def cpu_case(kernel, cv2, case, threads, args):
    name, (h, w), dtype, layout = case
    if layout == "hwc":
        hwc = torch.randint(0, 256, (h, w, 3), dtype=torch.uint8)
        image = hwc.permute(2, 0, 1).unsqueeze(0)  # [1, 3, H, W] view
        hwc_np = hwc.numpy()
        gray_np = hwc_np[..., 0].copy()
    else:
        image = torch.rand(1, 3, h, w).to(dtype)
        hwc_np = None
    out = torch.empty(1, 1, h, w, dtype=dtype)
    traffic = traffic_bytes(image)
    src, dst = torch.empty(traffic // 2, dtype=torch.uint8), torch.empty(traffic // 2, dtype=torch.uint8)
    impls = [("img2gray", lambda: kernel.img2gray_out(image, out)),
             ("torchvision eager", lambda: rgb_to_grayscale(image)),
             ("copy (ceiling)", lambda: dst.copy_(src))]
    if hwc_np is not None:
        impls.insert(1, ("opencv cvtColor", lambda: cv2.cvtColor(hwc_np, cv2.COLOR_RGB2GRAY, dst=gray_np)))
    timings = cpu_times(impls, args.reps, args.warmup)
    copy_rate = traffic / timings["copy (ceiling)"] / 1e9
    results = []
    for label, _ in impls:
        t = timings[label]
        rate = traffic / t / 1e9
        versus = f"{timings['opencv cvtColor'] / t:8.2f}x" if "opencv cvtColor" in timings else f"{'-':>9}"
        print(f"{name:22} {threads:3} {label:18} {t * 1e3:8.3f}ms {rate:7.2f} {100 * rate / copy_rate:6.1f}% {versus}",
              flush=True)
        results.append({"case": name, "threads": threads, "impl": label, "seconds": t, "gbps": rate,
                        "pct_copy": 100 * rate / copy_rate})
    return results


try:
    from kernels.benchmark import Benchmark
except ImportError:  # the GPU machine may have no `kernels`; main() does not need it
    Benchmark = object


class Img2grayBenchmark(Benchmark):
    """Workloads for `kernels benchmark`: a 1080p float32 image, allocating and into `out`."""

    seed = 0

    def setup(self):
        self.image = torch.rand(1, 3, 1080, 1920, device=self.device)

    def benchmark_img2gray_1080p(self):
        self.out = self.kernel.img2gray(self.image)

    def verify_img2gray_1080p(self) -> torch.Tensor:
        return rgb_to_grayscale(self.image)

    def setup_img2gray_out_1080p(self):
        self.setup()
        self.out = torch.empty(1, 1, 1080, 1920, device=self.device)

    def benchmark_img2gray_out_1080p(self):
        self.kernel.img2gray_out(self.image, self.out)

    def verify_img2gray_out_1080p(self) -> torch.Tensor:
        return rgb_to_grayscale(self.image)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cpu", action="store_true", help="benchmark the CPU kernel instead of the GPU one")
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--filter", help="only cases whose name contains this")
    parser.add_argument("--threads", help="CPU: thread counts to run each case with, e.g. 1,2,4,8,16 (default: Torch's)")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    if args.cpu:
        run_cpu(args)
    else:
        if not torch.cuda.is_available():
            sys.exit("no CUDA device; use --cpu for the CPU benchmark")
        run_gpu(args)


if __name__ == "__main__":
    main()
