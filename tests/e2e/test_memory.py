"""Memory-aware scheduling (issue 45, exec/memory_budget.hpp) under a real cgroup memory limit.

A kernel with four C++ units that each take about 650 MiB to compile is built with -j 4 inside a
cgroup limited to 1.6 GB: scheduling by job count starts all four and the kernel's OOM killer stops
the build; kbuild's default (the budget read from the cgroup, 1 GiB expected per never-measured C++
unit) runs them so that they fit, and the build finishes. Both are first builds (no history), cold
(no compile cache). The figures (peak RSS per job, the budget) are printed for docs/benchmarks.md.
"""

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import KBUILD, PYTHON, run_kbuild

pytestmark = pytest.mark.slow

LIMIT_BYTES = 1_600_000_000
UNITS = 4
ELEMENTS = 4_000_000  # about 650 MiB of g++ memory per unit


def make_memory_cgroup(name: str):
    """A child memory cgroup (v1 or v2) limited to LIMIT_BYTES; None where this machine has none to give."""
    v2 = Path("/sys/fs/cgroup/cgroup.controllers")
    if v2.is_file() and "memory" in v2.read_text().split():
        group = Path("/sys/fs/cgroup") / name
        limit_file, procs = "memory.max", "cgroup.procs"
    else:
        group = Path("/sys/fs/cgroup/memory") / name
        limit_file, procs = "memory.limit_in_bytes", "cgroup.procs"
    try:
        group.mkdir(exist_ok=True)
        (group / limit_file).write_text(str(LIMIT_BYTES))
        if (group / "memory.swappiness").exists():
            (group / "memory.swappiness").write_text("0")
        if (group / "memory.swap.max").exists():
            (group / "memory.swap.max").write_text("0")
    except OSError:
        return None
    return group, group / procs


@pytest.fixture
def cgroup():
    made = make_memory_cgroup(f"kbuild-test-{os.getpid()}")
    if made is None:
        pytest.fail("this machine gives no memory cgroup (root with cgroup v1 or v2 is what CI has)")
    group, procs = made
    yield procs
    for attempt in range(50):  # empty once its processes have gone
        try:
            group.rmdir()
            break
        except OSError:
            time.sleep(0.1)


def hungry_kernel(tmp_path: Path) -> Path:
    run_kbuild("init", "hungry", "--backends", "cpu", "--no-git", "--no-ci", "--no-lock", cwd=tmp_path)
    kernel = tmp_path / "hungry"
    sources = []
    for unit in range(UNITS):
        name = f"hungry_cpu/table_{unit}.cpp"
        numbers = ",".join(str((i * (unit + 3)) % 1000) for i in range(ELEMENTS))
        (kernel / name).write_text(f"extern const int table_{unit}[] = {{{numbers}}};\n")
        sources.append(f'"{name}"')
    build_toml = kernel / "build.toml"
    text = build_toml.read_text()
    listed = 'src = ["hungry_cpu/hungry_cpu.cpp"'
    assert listed in text
    build_toml.write_text(text.replace(listed, "src = [" + ", ".join(sources) + ', "hungry_cpu/hungry_cpu.cpp"'))
    return kernel


def build_in(procs: Path, kernel: Path, *extra):
    def enter_cgroup():
        procs.write_text(str(os.getpid()))
    return subprocess.run([str(KBUILD), "build", str(kernel), "-j", str(UNITS), "--no-cache", "--python", PYTHON,
                           "--timings", "--json", *extra], capture_output=True, text=True, preexec_fn=enter_cgroup,
                          timeout=600)


def test_a_build_that_job_counting_runs_out_of_memory_finishes_within_the_cgroup(tmp_path, cgroup):
    kernel = hungry_kernel(tmp_path)
    counted = build_in(cgroup, kernel, "--memory", "unlimited")
    assert counted.returncode != 0, "four 650 MiB compiles at once fit 1.6 GB: the test proves nothing"
    assert "killed (SIGKILL), most often for want of memory" in counted.stderr, counted.stderr[-3000:]
    assert "--memory SIZE" in json.loads(counted.stdout)["error"]["hint"]
    run_kbuild("clean", kernel)  # no history: the next build is a first build too
    budgeted = build_in(cgroup, kernel)
    assert budgeted.returncode == 0, budgeted.stderr[-3000:]
    timings = json.loads(budgeted.stdout)["timings"]
    memory = timings["memory"]
    peaks = {job["job"].split()[1]: job["peak_rss_mib"] for job in timings["slowest_jobs"]}
    tables = [peak for name, peak in peaks.items() if "table_" in name]
    assert len(tables) == UNITS and min(tables) > 400, peaks
    assert 0 < memory["budget_mib"] * 2**20 <= LIMIT_BYTES and memory["starts_that_waited"] > 0, memory
    print(f"\njob-count scheduling (-j {UNITS}, --memory unlimited): exit {counted.returncode} (OOM-killed)"
          f"\nmemory-aware (-j {UNITS}, budget {memory['budget_mib']:.0f} MiB from the cgroup): exit 0, "
          f"{memory['starts_that_waited']} starts waited, at most {memory['peak_expected_mib']:.0f} MiB expected "
          f"at once\npeak RSS per unit (MiB): " + ", ".join(f"{peak:.0f}" for peak in tables))
