#!/usr/bin/env python3
"""The author's loop, measured: what `kbuild build` runs after each everyday change.

    python benchmarks/loop.py [--kbuild .build/tool/kbuild] [--python PY] [--cuda-archs all]

On a fresh git copy of kernels/img2gray and on a kernel of ours whose .cu is slow to compile (heavy
template instantiation, like a CUTLASS kernel), built once, then after each change in turn:
  edit one .cpp (a kernel source), edit one .cu, edit the README, commit, add a file (notes/todo.txt),
  touch nothing (no-op).
Prints, per change, the jobs run (compiles / link+install), what was compiled (not served from the
compile cache, which each kernel gets empty: KBUILD_CACHE points at a fresh directory), and the seconds.
Before this change (kbuild at ac710ba) each of "edit .cpp", "edit README" (once dirty) and "commit"
ran every job of both variants: 11 jobs, the .cu included (issue 21).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SLOW_CU = textwrap.dedent("""\
    // A kernel whose compile is dominated by template instantiation (as CUTLASS kernels are).
    #include <cstdint>
    #include "slow/launch.h"

    template <int N> struct Unroll {
      template <class F> __device__ static void run(F f) { f(N); Unroll<N - 1>::run(f); }
    };
    template <> struct Unroll<0> {
      template <class F> __device__ static void run(F) {}
    };

    template <int K> __global__ void mix(float* out, const float* in, int64_t n) {
      int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
      if (i >= n) return;
      float acc = in[i];
      Unroll<K>::run([&](int j) { acc = acc * 0.999f + float(j % 7) * 1e-3f; });
      out[i] = acc;
    }

    namespace slow {
    template <int... Ks> void launch_all(float* out, const float* in, int64_t n, int which,
                                         std::integer_sequence<int, Ks...>) {
      ((which == Ks ? (mix<Ks * 8 + 8><<<(n + 255) / 256, 256>>>(out, in, n), 0) : 0), ...);
    }
    void launch(float* out, const float* in, int64_t n, int which) {
      launch_all(out, in, n, which, std::make_integer_sequence<int, 24>{});
    }
    }  // namespace slow
    """)


def git(kernel, *args):
    subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", *args], cwd=kernel, check=True,
                   capture_output=True)


def slow_kernel(parent: Path) -> Path:
    """img2gray with a second CUDA component whose .cu compiles slowly."""
    kernel = parent / "slow"
    shutil.copytree(ROOT / "kernels" / "img2gray", kernel, ignore=shutil.ignore_patterns("build", ".kbuild", "__pycache__"))
    (kernel / "slow_cuda").mkdir()
    (kernel / "slow_cuda" / "slow.cu").write_text(SLOW_CU.replace("#include <cstdint>", "#include <cstdint>\n#include <utility>"))
    (kernel / "include" / "slow").mkdir()
    (kernel / "include" / "slow" / "launch.h").write_text(
        "#pragma once\n#include <cstdint>\nnamespace slow {\nvoid launch(float*, const float*, int64_t, int);\n}\n")
    with open(kernel / "build.toml", "a") as toml:
        toml.write('\n[kernel.slow_cuda]\nbackend = "cuda"\ndepends = []\ninclude = ["include"]\n'
                   'src = ["slow_cuda/slow.cu", "include/slow/launch.h"]\n')
    return kernel


def fresh(kernel: Path) -> Path:
    git(kernel, "init", "-q")
    git(kernel, "add", "-A")
    git(kernel, "commit", "-qm", "kernel")
    return kernel


def build(args, kernel):
    result = subprocess.run([args.kbuild, "build", kernel, "--python", args.python, "--cuda-archs", args.cuda_archs,
                             "-v"], capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"build failed:\n{result.stdout}\n{result.stderr}")
    summary = result.stdout.strip().splitlines()[-1]
    seconds = re.search(r"in ([\d.]+) s", summary)
    compiled = [name for name, cached in re.findall(r"^\[\d+/\d+\] (?:CXX|CUDA) (\S+).*?( \(cached\))?$",
                                                      result.stdout, re.M) if not cached]
    others = re.findall(r"^\[\d+/\d+\] (?:LINK|INSTALL|GEN) ", result.stdout, re.M)
    return compiled, len(others), float(seconds.group(1)) if seconds else 0.0


def edit(path: Path):
    path.write_text(path.read_text() + "\n// edited\n")


def scenarios(kernel: Path, cu: Path):
    return [
        ("edit one .cpp", lambda: edit(kernel / "img2gray_cpu" / "img2gray_cpu.cpp")),
        ("edit one .cu", lambda: edit(cu)),
        ("edit README", lambda: (kernel / "README.md").write_text("# notes\n")),
        ("commit", lambda: (git(kernel, "add", "-A"), git(kernel, "commit", "-qm", "change"))),
        ("add a file", lambda: ((kernel / "notes").mkdir(), (kernel / "notes" / "todo.txt").write_text("x\n"))),
        ("no change", lambda: None),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kbuild", default=str(ROOT / ".build" / "tool" / "kbuild"))
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--cuda-archs", default="all", help="what CUDA units compile for (default: all 10)")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for kernel, cu in ((fresh(shutil.copytree(ROOT / "kernels" / "img2gray", tmp / "img2gray",
                                                  ignore=shutil.ignore_patterns("build", ".kbuild", "__pycache__"))),
                            "img2gray_cuda/img2gray.cu"),
                           (fresh(slow_kernel(tmp)), "slow_cuda/slow.cu")):
            os.environ["KBUILD_CACHE"] = str(tmp / ("cache-" + kernel.name))  # cold means cold
            compiled, _, seconds = build(args, kernel)
            rows.append((kernel.name, "cold build", compiled, seconds))
            for name, change in scenarios(kernel, kernel / cu):
                change()
                compiled, others, seconds = build(args, kernel)
                rows.append((kernel.name, name, compiled, seconds, others))
    print(f"{'kernel':10} {'change':14} {'compiled':>8} {'link+install':>12} {'seconds':>8}  units compiled")
    for row in rows:
        kernel, name, compiled, seconds = row[:4]
        others = row[4] if len(row) > 4 else "-"
        units = ", ".join(sorted({c.split("/")[-1] + f" x{compiled.count(c)}" for c in compiled})) or "-"
        print(f"{kernel:10} {name:14} {len(compiled):>8} {others:>12} {seconds:>8.1f}  {units}")
    print(json.dumps([{"kernel": r[0], "change": r[1], "compiled": r[2], "seconds": r[3]} for r in rows]))


if __name__ == "__main__":
    main()
