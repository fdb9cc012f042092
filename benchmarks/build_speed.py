#!/usr/bin/env python3
"""Build-speed benchmark of kbuild against torch.utils.cpp_extension, in one run.

    python benchmarks/build_speed.py [--kbuild .build/tool/kbuild] [--jobs N]

Measures, on a fresh git copy of kernels/img2gray:
  1. cold build of the torch 2.11 CUDA variant with the default architecture list (10 archs),
     kbuild (no compile cache) vs torch.utils.cpp_extension building the same sources with the same
     archs and MAX_JOBS (ninja, as PyTorch extensions are built). The peer gets the kernel's own
     sources and kbuild's generated registration.h, not kbuild's glibc_compat.cpp: that file is made
     for kbuild's link line (-Wl,--wrap=dlsym, GCC 13's std::ios_base_library_init hidden inside the
     library) and does not link into cpp_extension's .so with GCC 13; it compiles in well under a
     second, so leaving it out does not tilt the comparison;
  2. a no-op rebuild (median of 20);
  3. the full matrix cold (empty compile cache, toolchains already fetched), then after
     `rm -rf build .kbuild` again (everything from the compile cache).
The Python running this script must have torch 2.11 (the local toolchain of step 1).
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARCHS = "7.5;8.0;8.6;8.7;8.9;9.0;10.0;11.0;12.0;12.1+PTX"


def fresh_kernel(parent: Path) -> Path:
    kernel = parent / "img2gray"
    shutil.copytree(ROOT / "kernels" / "img2gray", kernel, ignore=shutil.ignore_patterns("build", ".kbuild", "__pycache__"))
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "k"]):
        subprocess.run(["git", *args], cwd=kernel, check=True)
    return kernel


def timed(argv, env=None, cwd=None):
    start = time.perf_counter()
    result = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(map(str, argv))}\n{result.stdout}\n{result.stderr}")
    return elapsed, result.stdout


CPP_EXTENSION = r"""
import os, sys, time
from pathlib import Path
import torch.utils.cpp_extension as ext
kernel, build, jobs = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
os.environ["MAX_JOBS"] = jobs
os.environ["TORCH_CUDA_ARCH_LIST"] = sys.argv[4]
start = time.perf_counter()
ext.load(
    name="_img2gray_cuda_bench",
    sources=[str(kernel / "torch-ext/torch_binding.cpp"), str(kernel / "img2gray_cpu/img2gray_cpu.cpp"),
             str(kernel / "img2gray_cuda/img2gray.cu")],
    extra_include_paths=[str(kernel / "include"), str(build)],
    extra_cflags=["-O3", "-DCUDA_KERNEL", "-DUSE_CUDA=1", "-DPy_LIMITED_API=0x03090000", "-ffp-contract=off"],
    extra_cuda_cflags=["-O3", "-DCUDA_KERNEL", "-fmad=false"],
    build_directory=str(build), is_python_module=False, verbose=False)
print(f"{time.perf_counter() - start:.2f}")
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kbuild", default=str(ROOT / ".build" / "tool" / "kbuild"))
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--skip-matrix", action="store_true", help="only steps 1 and 2 (no toolchain downloads)")
    args = parser.parse_args()
    kbuild, python, jobs = args.kbuild, sys.executable, str(args.jobs)
    import torch

    print(f"# kbuild build-speed benchmark  {time.strftime('%Y-%m-%d')}  {os.cpu_count()} CPUs  -j{jobs}  "
          f"torch {torch.__version__}  nvcc {subprocess.run(['nvcc', '--version'], capture_output=True, text=True).stdout.split('release ')[1].split(',')[0]}")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        real_cache = Path(os.environ.get("KBUILD_CACHE", Path.home() / ".cache" / "kbuild"))
        cache = tmp / "cache"
        cache.mkdir()
        if (real_cache / "toolchains").is_dir():
            (cache / "toolchains").symlink_to(real_cache / "toolchains")
        env = dict(os.environ, KBUILD_CACHE=str(cache))
        print(f"cold build of kernels/img2gray (CUDA variant) with kbuild and with torch.utils.cpp_extension...", flush=True)

        # 1. One CUDA variant, cold.
        kernel = fresh_kernel(tmp / "one")
        kb_cold, _ = timed([kbuild, "build", kernel, "--python", python, "--backend", "cuda", "--cuda-archs", "all", "--no-cache",
                               "-j", jobs], env)
        print(f"  kbuild {kb_cold:.1f} s", flush=True)
        ext_build = tmp / "ext"
        ext_build.mkdir()
        shutil.copy(kernel / ".kbuild" / "generated" / "registration.h", ext_build)
        _, out = timed([python, "-c", CPP_EXTENSION, kernel, ext_build, jobs, ARCHS], env)
        ext_cold = float(out.strip().splitlines()[-1])

        # 2. No-op rebuilds.
        noop = []
        for _ in range(20):
            elapsed, out = timed([kbuild, "build", kernel, "--python", python, "--backend", "cuda", "--cuda-archs", "all", "-q"], env)
            noop.append(elapsed)

        if args.skip_matrix:
            print(f"{'measure':58} {'kbuild':>10} {'peer':>10} {'ratio':>7}")
            print(f"{'cold build, torch211-cu130 variant, 10 archs':58} {kb_cold:9.1f}s {ext_cold:9.1f}s "
                  f"{ext_cold / kb_cold:6.2f}x   (peer: torch.utils.cpp_extension)")
            print(f"{'no-op rebuild (median of 20)':58} {statistics.median(noop) * 1e3:8.1f}ms")
            return
        # 3. Full matrix: cold compile cache, then again from the cache.
        matrix = fresh_kernel(tmp / "matrix")
        matrix_cold, _ = timed([kbuild, "build", matrix, "--matrix", "--locked", "--python", python, "-j", jobs], env)
        shutil.rmtree(matrix / "build")
        shutil.rmtree(matrix / ".kbuild")
        matrix_cached, out = timed([kbuild, "build", matrix, "--matrix", "--locked", "--python", python, "-j", jobs], env)
        summary = out.strip().splitlines()[-1]

    print(f"{'measure':58} {'kbuild':>10} {'peer':>10} {'ratio':>7}")
    print(f"{'cold build, torch211-cu130 variant, 10 archs':58} {kb_cold:9.1f}s {ext_cold:9.1f}s {ext_cold / kb_cold:6.2f}x"
          "   (peer: torch.utils.cpp_extension)")
    print(f"{'no-op rebuild (median of 20)':58} {statistics.median(noop) * 1e3:8.1f}ms")
    print(f"{'full matrix (6 variants), cold compile cache':58} {matrix_cold:9.1f}s")
    print(f"{'full matrix after rm -rf build .kbuild (from cache)':58} {matrix_cached:9.2f}s")
    print(f"  {summary}")


if __name__ == "__main__":
    main()
