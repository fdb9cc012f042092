"""Builds under stress: concurrent builds of one kernel directory, kbuild killed mid-build, a
damaged compile cache. Every build that exits 0 must have installed the same libraries as an
undisturbed build, and no compiler may outlive a killed kbuild."""

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import KBUILD, PYTHON, build_args, copy_kernel, empty_compile_cache, run_kbuild

pytestmark = pytest.mark.slow

CPU_VARIANT = "torch211-cxx11-cpu-x86_64-linux"


def libraries(kernel: Path) -> dict:
    variant = kernel / "build" / CPU_VARIANT
    return {p.name: p.read_bytes() for p in sorted(variant.iterdir()) if p.is_file()}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """An undisturbed CPU build, and the git repository its copies are cloned from (same ops id)."""
    kernel = copy_kernel(tmp_path_factory.mktemp("reference") / "img2gray")
    env = dict(os.environ, KBUILD_CACHE=str(empty_compile_cache(tmp_path_factory.mktemp("ref-cache"))))
    run_kbuild(*build_args(kernel, "--backend", "cpu"), env=env)
    return kernel, libraries(kernel)


def clone(reference_kernel: Path, destination: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(reference_kernel), str(destination)], check=True)
    return destination


def test_concurrent_builds_of_one_directory_take_turns(reference, tmp_path):
    kernel = clone(reference[0], tmp_path / "img2gray")
    env = dict(os.environ, KBUILD_CACHE=str(empty_compile_cache(tmp_path / "cache")))
    procs = [subprocess.Popen([str(KBUILD), *map(str, build_args(kernel, "--backend", "cpu"))], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=900) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outs
    assert any("waiting for the build in kbuild pid" in err for _, err in outs), outs
    assert libraries(kernel) == reference[1]
    busy = subprocess.Popen([str(KBUILD), *map(str, build_args(kernel, "--backend", "cpu", "--no-cache"))], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    refused = run_kbuild(*build_args(kernel, "--backend", "cpu", "--no-wait"), env=env, check=False)
    busy.communicate(timeout=900)
    if busy.returncode == 0 and "is building" in refused.stderr:
        assert refused.returncode == 1 and "--no-wait" in refused.stderr


def test_no_compiler_outlives_a_killed_kbuild(reference, tmp_path):
    kernel = clone(reference[0], tmp_path / "img2gray")
    pids = tmp_path / "pids"
    pids.mkdir()
    launcher = tmp_path / "slow-launcher"
    launcher.write_text(f'#!/bin/sh\necho $$ > {pids}/$$\nsleep 60\nexec "$@"\n')
    launcher.chmod(0o755)
    env = dict(os.environ, KBUILD_CACHE=str(empty_compile_cache(tmp_path / "cache")))
    build = subprocess.Popen([str(KBUILD), *map(str, build_args(kernel, "--backend", "cpu", "--launcher",
                                                                  str(launcher)))],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while time.time() < deadline and not list(pids.iterdir()):
        time.sleep(0.05)
    started = [int(p.name) for p in pids.iterdir()]
    assert started, "no compile command started"
    build.send_signal(signal.SIGKILL)
    build.wait()
    deadline = time.time() + 5
    alive = started
    while time.time() < deadline and alive:
        alive = [pid for pid in started if Path(f"/proc/{pid}").exists() and
                 Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"]
        time.sleep(0.1)
    assert not alive, f"compile commands still running after kbuild was killed: {alive}"
    # The next build repairs everything and gives the undisturbed result.
    run_kbuild(*build_args(kernel, "--backend", "cpu"), env=env)
    assert libraries(kernel) == reference[1]


def test_a_damaged_compile_cache_never_gives_a_bad_library(reference, tmp_path):
    cache = empty_compile_cache(tmp_path / "cache")
    env = dict(os.environ, KBUILD_CACHE=str(cache))
    first = clone(reference[0], tmp_path / "first")
    run_kbuild(*build_args(first, "--backend", "cpu"), env=env)
    objects = sorted(p for p in (cache / "objects").rglob("*") if p.is_file())
    assert objects
    for i, path in enumerate(objects):  # flip a byte in half of them, truncate the others
        data = bytearray(path.read_bytes())
        if i % 2:
            data[len(data) // 2] ^= 0x40
        else:
            del data[-7:]
        path.write_bytes(bytes(data))
    for manifest in (cache / "manifests").rglob("*"):
        if manifest.is_file():
            manifest.write_text('{"entries": [{"result": "../../../../etc/passwd", "inputs": []}]}')
            break
    second = clone(reference[0], tmp_path / "second")
    result = run_kbuild(*build_args(second, "--backend", "cpu"), env=env)
    assert "from cache" in result.stdout
    assert libraries(second) == reference[1]
    stats = run_kbuild("cache", "stats", env=env).stdout
    damaged = int(stats.split("damaged entries")[1].split()[0])
    assert damaged >= len(objects) // 2, stats
    verify = run_kbuild("cache", "verify", env=env).stdout
    assert "0 damaged" in verify, verify
