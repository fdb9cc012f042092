"""Runs a sample of a heavy kernel's own tests against the variant kbuild built for this machine.

Usage: heavy_tests.py KERNEL_DIR [--every N] [--tests PATH]

The variant is imported as `kbuild test` arranges it (a directory where `import <python name>` finds
build/<variant>/), and pytest collects the kernel's tests/ unchanged. Suites such as flash-attn2's hold
tens of thousands of parametrized cases; every Nth collected case (default: enough for about 400) runs,
so that each test function and most parameter values are exercised within a device call. --tests
narrows collection to a part of tests/ (e.g. tests/ops where other modules need packages that are not
installed). Prints the
variant, the number collected and run, and pytest's summary; exits with pytest's code.
"""

import json
import os
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import torch


def variant_for_this_torch(kernel: Path) -> Path:
    major, minor = torch.__version__.split("+")[0].split(".")[:2]
    candidates = []
    for metadata in sorted(kernel.glob("build/*/metadata.json")):
        name = metadata.parent.name
        if name.startswith(f"torch{major}{minor}-") or name.startswith("torch-"):
            candidates.append(metadata.parent)
    if not candidates:
        sys.exit(f"heavy_tests: no variant for torch {major}.{minor} in {kernel}/build")
    return candidates[0]


def main() -> int:
    kernel = Path(sys.argv[1]).resolve()
    every = int(sys.argv[sys.argv.index("--every") + 1]) if "--every" in sys.argv else 0
    tests = sys.argv[sys.argv.index("--tests") + 1] if "--tests" in sys.argv else "tests"
    variant = variant_for_this_torch(kernel)
    with open(kernel / "build.toml", "rb") as build_toml:
        python_name = tomllib.load(build_toml)["general"]["name"].replace("-", "_")
    import_dir = Path(tempfile.mkdtemp())
    (import_dir / python_name).symlink_to(variant)
    env = dict(os.environ, PYTHONPATH=f"{import_dir}:{os.environ.get('PYTHONPATH', '')}", HF_HUB_OFFLINE="1")
    metadata = json.loads((variant / "metadata.json").read_text())
    print("variant", variant.name, "id", metadata.get("id"), flush=True)
    # The kernel is its own rootdir: a kernel copied under this repository would otherwise get test
    # ids relative to the repository's pytest.ini, which the run inside the kernel cannot resolve.
    collected = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                                f"--rootdir={kernel}", "--continue-on-collection-errors", tests],
                               cwd=kernel, env=env, capture_output=True, text=True)
    ids = [line for line in collected.stdout.splitlines() if "::" in line]
    for line in collected.stdout.splitlines():
        if line.startswith("ERROR"):
            print("not collected:", line, flush=True)
    if not ids:
        print(collected.stdout[-3000:], collected.stderr[-3000:])
        return 1
    step = every or max(1, len(ids) // 400)
    sample = ids[::step]
    print(f"collected {len(ids)} tests, running every {step}th: {len(sample)}", flush=True)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--rootdir={kernel}",
                          *sample], cwd=kernel, env=env)
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
