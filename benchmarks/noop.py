"""No-op rebuild time of kernels/img2gray: kbuild against a baseline kbuild (another build of it),
run alternately in one session so that both see the same machine.

    python benchmarks/noop.py --kbuild .build/tool/kbuild --baseline /tmp/kbuild-old [--runs 20]

Builds the kernel once (local variants, the given --python), then times `kbuild build` with
nothing to do, `--runs` times each, alternating; prints the medians, the ratio, and one
`--timings` line of each (where the milliseconds go inside the build)."""

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kbuild", required=True)
    parser.add_argument("--baseline", help="another kbuild executable, timed alternately")
    parser.add_argument("--kernel", default=str(ROOT / "kernels" / "img2gray"))
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    tools = {"kbuild": args.kbuild}
    if args.baseline:
        tools["baseline"] = args.baseline
    command = ["build", args.kernel, "--python", args.python, "-q"]
    for tool in tools.values():  # builds what is missing, and warms the page cache
        subprocess.run([tool, *command], check=True)
        subprocess.run([tool, *command], check=True)
    times = {name: [] for name in tools}
    for _ in range(args.runs):
        for name, tool in tools.items():
            start = time.perf_counter()
            subprocess.run([tool, *command], check=True, stdout=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - start)
    for name, tool in tools.items():
        timings = subprocess.run([tool, *command[:-1], "--timings"], check=True, capture_output=True, text=True)
        line = next((l for l in (timings.stdout + timings.stderr).splitlines() if "timings:" in l), "")
        print(f"{name:9} no-op median of {args.runs}: {statistics.median(times[name]) * 1e3:6.1f} ms "
              f"(min {min(times[name]) * 1e3:.1f})   {line.strip()}")
    if args.baseline:
        print(f"baseline / kbuild: {statistics.median(times['baseline']) / statistics.median(times['kbuild']):.2f}x")


if __name__ == "__main__":
    main()
