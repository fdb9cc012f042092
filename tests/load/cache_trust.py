#!/usr/bin/env python3
"""Damaged and hostile compile caches, measured (issue 29; docs/reliability.md).

Builds kernels/img2gray's CPU variant once into a cache, then, per trial, copies that cache, plants one
kind of damage (below) and builds a fresh copy of the kernel against it, with a deadline. A trial
passes when the build exits 0 in time, installs the reference library byte for byte, and every file
of a decoy tree outside the cache is still there. Then it times Ctrl-C while a build waits for the
kernel directory's lock. Standard library only.

    python3 tests/load/cache_trust.py --kbuild .build/tool/kbuild --python PY [--rounds 2]
"""

import argparse
import fcntl
import hashlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VARIANT = "torch211-cxx11-cpu-x86_64-linux"


def entries(cache, part):
    return sorted(p for p in (cache / part).rglob("*") if p.is_file() and not p.is_symlink())


def wrong_key_copy(cache, outside):
    objects = entries(cache, "objects")
    shutil.copyfile(objects[1], objects[0])


def consistent_header_other_bytes(cache, outside):
    """The attack a checksum cannot see: another object's bytes under this key, header recomputed."""
    objects = entries(cache, "objects")
    victim, donor = objects[0], objects[1]
    body = donor.read_bytes().split(b"\n", 1)[1]
    key = victim.name
    victim.write_bytes(f"KBOBJ2 {key} {hashlib.sha256(body).hexdigest()} {len(body)}\n".encode() + body)


def manifest_points_elsewhere(cache, outside):
    manifest = entries(cache, "manifests")[0]
    other = entries(cache, "objects")[-1].name
    text = manifest.read_text()
    start = text.index('"result":"') + 10
    manifest.write_text(text[:start] + other + text[start + 64:])


def fifo_object(cache, outside):
    obj = entries(cache, "objects")[0]
    obj.unlink()
    os.mkfifo(obj)


def fifo_manifest(cache, outside):
    manifest = entries(cache, "manifests")[0]
    manifest.unlink()
    os.mkfifo(manifest)


def directory_in_place(cache, outside):
    obj = entries(cache, "objects")[0]
    obj.unlink()
    (obj / "x").mkdir(parents=True)


def link_to_outside_file(cache, outside):
    obj = entries(cache, "objects")[0]
    obj.unlink()
    obj.symlink_to(outside / "precious.txt")


def shard_links_out(cache, outside):
    obj = entries(cache, "objects")[0]
    shard = obj.parent
    shutil.rmtree(shard)
    shard.symlink_to(outside)
    (cache / "manifests" / "zz").symlink_to(outside)


def truncated(cache, outside):
    obj = entries(cache, "objects")[0]
    obj.write_bytes(obj.read_bytes()[:-9])


DAMAGE = [wrong_key_copy, consistent_header_other_bytes, manifest_points_elsewhere, fifo_object, fifo_manifest,
          directory_in_place, link_to_outside_file, shard_links_out, truncated]


def run(argv, env, timeout):
    start = time.monotonic()
    try:
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
        return proc.returncode, time.monotonic() - start, proc.stderr
    except subprocess.TimeoutExpired:
        return None, time.monotonic() - start, "timed out"


def library(kernel):
    variant = kernel / "build" / VARIANT
    return {p.name: p.read_bytes() for p in variant.iterdir() if p.suffix == ".so"}


def decoy(root):
    outside = root / "outside"
    outside.mkdir()
    for i in range(20):
        (outside / f"{i:02x}{'e' * 62}").write_text("decoy")
    (outside / "precious.txt").write_text("do not touch")
    return outside


def decoy_intact(outside):
    return (outside / "precious.txt").exists() and len(list(outside.iterdir())) == 21


def copy_kernel(destination):
    shutil.copytree(ROOT / "kernels" / "img2gray", destination,
                    ignore=shutil.ignore_patterns("build", ".kbuild", "__pycache__"))
    return destination


def ctrl_c_latency(args, work, trials):
    kernel = copy_kernel(work / "lock-kernel")
    (kernel / ".kbuild").mkdir()
    latencies, codes = [], []
    with open(kernel / ".kbuild" / "lock", "w") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)
        for _ in range(trials):
            proc = subprocess.Popen([args.kbuild, "build", str(kernel), "--python", args.python, "--backend", "cpu"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            for line in proc.stderr:
                if "waiting for the build" in line:
                    break
            start = time.monotonic()
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)
            latencies.append(time.monotonic() - start)
            codes.append(proc.returncode)
    return latencies, codes


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kbuild", required=True)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--rounds", type=int, default=1, help="trials per kind of damage")
    parser.add_argument("--deadline", type=float, default=600)
    args = parser.parse_args()
    args.kbuild = str(Path(args.kbuild).resolve())
    work = Path(tempfile.mkdtemp(prefix="kbuild-cache-trust-"))
    base_cache = work / "cache"
    env = dict(os.environ, KBUILD_CACHE=str(base_cache))
    reference = copy_kernel(work / "reference")
    code, seconds, err = run([args.kbuild, "build", str(reference), "--python", args.python, "--backend", "cpu"],
                             env, args.deadline)
    assert code == 0, err
    expected = library(reference)
    print(f"reference build: {seconds:.1f} s, {len(entries(base_cache, 'objects'))} objects")
    print(f"{'damage':34} {'trials':>6} {'exit 0':>6} {'same .so':>8} {'decoy ok':>8} {'warned':>6} {'max s':>6}")
    totals = [0, 0, 0, 0]
    for damage in DAMAGE:
        row = [0, 0, 0, 0]
        slowest = 0.0
        for trial in range(args.rounds):
            trial_dir = work / f"{damage.__name__}-{trial}"
            trial_dir.mkdir()
            cache = trial_dir / "cache"
            shutil.copytree(base_cache, cache, symlinks=True)
            outside = decoy(trial_dir)
            damage(cache, outside)
            kernel = copy_kernel(trial_dir / "img2gray")
            trial_env = dict(os.environ, KBUILD_CACHE=str(cache), KBUILD_CACHE_MAX_SIZE="0" if trial % 2 else "10G")
            code, seconds, err = run([args.kbuild, "build", str(kernel), "--python", args.python, "--backend", "cpu"],
                                     trial_env, args.deadline)
            slowest = max(slowest, seconds)
            row[0] += code == 0
            row[1] += code == 0 and library(kernel) == expected
            row[2] += decoy_intact(outside)
            row[3] += "damaged entry" in err or "from the compile cache" in err
            verify = subprocess.run([args.kbuild, "cache", "verify"], env=trial_env, capture_output=True, text=True,
                                    timeout=60)
            row[2] -= not decoy_intact(outside) or verify.returncode != 0
        totals = [a + b for a, b in zip(totals, row)]
        print(f"{damage.__name__:34} {args.rounds:>6} {row[0]:>6} {row[1]:>8} {row[2]:>8} {row[3]:>6} {slowest:>6.1f}")
    trials = args.rounds * len(DAMAGE)
    print(f"{'all':34} {trials:>6} {totals[0]:>6} {totals[1]:>8} {totals[2]:>8} {totals[3]:>6}")
    latencies, codes = ctrl_c_latency(args, work, 10)
    print(f"Ctrl-C while waiting for the lock: {len(codes)} trials, exit codes {sorted(set(codes))}, "
          f"median {statistics.median(latencies) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms")
    shutil.rmtree(work, ignore_errors=True)
    return 0 if totals[1] == trials and totals[2] == trials and set(codes) == {130} else 1


if __name__ == "__main__":
    sys.exit(main())
