#!/usr/bin/env python3
"""Stress trials for `kbuild build` (figures in docs/reliability.md):

  kill     kbuild is killed with SIGKILL at a random moment of a build, then built again: the
           result must equal an undisturbed build, and no compiler may be left running.
  race     4 builds of one kernel directory start at once, and `kbuild clean` at a random moment among
           them: all must exit 0 and leave the undisturbed result.
  damage   a random byte of a random compile-cache object is flipped (or the object truncated),
           then a fresh checkout is built from the cache: exit 0 with the undisturbed result.

  python3 tests/load/build_stress.py --kbuild .build/tool/kbuild --python PY --trials 20

Needs git, and Torch for --python (the CPU variant of kernels/img2gray is built)."""

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VARIANT = "torch211-cxx11-cpu-x86_64-linux"


def libraries(kernel):
    """The variant's files but metadata.json, whose provenance names each copy's own git commit."""
    return {p.name: p.read_bytes() for p in sorted((kernel / "build" / VARIANT).iterdir())
            if p.is_file() and p.name != "metadata.json"}


def git_copy(source, destination):
    shutil.copytree(source, destination, ignore=shutil.ignore_patterns("build", ".kbuild", "__pycache__", ".git"))
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "k"]):
        subprocess.run(["git", *args], cwd=destination, check=True, capture_output=True)
    return destination


def build(args, kernel, env, *extra, check=True):
    result = subprocess.run([args.kbuild, "build", str(kernel), "--python", args.python, "--backend", "cpu", *extra],
                            env=env, capture_output=True, text=True)
    if check and result.returncode != 0:
        raise RuntimeError(result.stdout + result.stderr)
    return result


def compilers_alive(since_pids, work):
    """Compilers started for the trials (their command line names the scratch directory) still running."""
    alive = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) not in since_pids:
            try:
                comm = (proc / "comm").read_text().strip()
                state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if str(work).encode() not in (proc / "cmdline").read_bytes():
                    continue
            except (OSError, IndexError):
                continue
            if state != "Z" and comm in ("cc1plus", "g++", "c++", "nvcc", "cicc", "ptxas", "as", "ld", "collect2"):
                alive.append((int(proc.name), comm))
    return alive


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kbuild", required=True)
    parser.add_argument("--python", required=True)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=20261203)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="kbuild-stress-"))
    origin = git_copy(ROOT / "kernels" / "img2gray", work / "origin")
    env = dict(os.environ, KBUILD_CACHE=str(work / "cache"))
    reference = git_copy(origin, work / "reference")
    build(args, reference, dict(env, KBUILD_CACHE=str(work / "reference-cache")))
    expected = libraries(reference)
    baseline = {int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()}
    failures = {"kill": 0, "race": 0, "damage": 0}

    def report(kind, trial, why):
        print(f"{kind} trial {trial}: {why}", file=sys.stderr)

    for trial in range(args.trials):  # kill -9 at a random moment, then build again
        kernel = git_copy(origin, work / f"kill-{trial}")
        proc = subprocess.Popen([args.kbuild, "build", str(kernel), "--python", args.python, "--backend", "cpu",
                                 "--no-cache"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.05, 4.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 5  # the guardian needs a moment to notice and kill
        while (leftover := compilers_alive(baseline, work)) and time.monotonic() < deadline:
            time.sleep(0.1)
        result = build(args, kernel, env, "--no-cache", check=False)
        ok = not leftover and result.returncode == 0 and libraries(kernel) == expected
        if not ok:
            report("kill", trial, f"leftover={leftover} rc={result.returncode} {result.stderr[-400:]}")
        failures["kill"] += not ok
        shutil.rmtree(kernel)

    for trial in range(max(1, args.trials // 4)):  # four builds of one directory at once
        kernel = git_copy(origin, work / f"race-{trial}")
        procs = [subprocess.Popen([args.kbuild, "build", str(kernel), "--python", args.python, "--backend", "cpu"],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(4)]
        time.sleep(rng.uniform(0.0, 3.0))
        cleaned = subprocess.run([args.kbuild, "clean", str(kernel)], env=env, capture_output=True).returncode
        codes = [p.wait() for p in procs]
        ok = codes == [0, 0, 0, 0] and cleaned == 0 and libraries(kernel) == expected
        if not ok:
            report("race", trial, f"builds={codes} clean={cleaned}")
        failures["race"] += not ok
        shutil.rmtree(kernel)

    for trial in range(args.trials):  # a damaged cache object, then a fresh checkout from the cache
        objects = [p for p in (work / "cache" / "objects").rglob("*") if p.is_file()]
        victim = rng.choice(objects)
        data = bytearray(victim.read_bytes())
        if rng.random() < 0.5:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        else:
            del data[rng.randrange(len(data)):]
        victim.write_bytes(bytes(data))
        kernel = git_copy(origin, work / f"damage-{trial}")
        result = build(args, kernel, env, check=False)
        ok = result.returncode == 0 and libraries(kernel) == expected
        if not ok:
            report("damage", trial, f"rc={result.returncode} {result.stderr[-400:]}")
        failures["damage"] += not ok
        shutil.rmtree(kernel)

    races = max(1, args.trials // 4)
    print(f"kill -9 during a build:  {args.trials} trials, {failures['kill']} failures")
    print(f"4 builds + clean, 1 dir:  {races} trials, {failures['race']} failures")
    print(f"damaged cache object:    {args.trials} trials, {failures['damage']} failures")
    shutil.rmtree(work, ignore_errors=True)
    return 1 if any(failures.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
