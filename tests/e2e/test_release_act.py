"""kbuild's own release workflow (.github/workflows/release.yml) executed under act (issue 48): its `dist`
job builds the sdist and the static manylinux_2_28 wheel with scripts/wheel on the runner, its `test`
job installs kbuild from a local index into a bare venv and builds and checks a kernel with it. The
run is a workflow_dispatch: the PyPI and GitHub-release jobs, which need a tag, are skipped.

The library prefix and the wheel built from the same sdist are shared with tests/e2e/test_wheel.py
(KBUILD_WHEEL_DEPS, KBUILD_WHEEL_BUILD), so on a clean checkout this run compiles nothing again; the
checkout stand-in clones the repository's HEAD, so uncommitted changes are not in it."""

import re
import subprocess
from pathlib import Path

import pytest

from act_harness import ActRunner, said
from conftest import PYTHON, ROOT

pytestmark = [pytest.mark.slow, pytest.mark.heavy]

WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"


def test_the_release_workflow_builds_the_wheel_and_a_kernel_with_it(tmp_path):
    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    runner = ActRunner(tmp_path / "runner", ROOT)
    result, jobs, lines, artifacts = runner.run(
        WORKFLOW, event_name="workflow_dispatch", variables={"KBUILD_TORCH_PYTHON": PYTHON},
        env={"KBUILD_WHEEL_DEPS": str(Path.home() / ".cache" / "kbuild-dev" / "wheel-deps"),
             "KBUILD_WHEEL_BUILD": str(ROOT / ".build" / "wheel")},
        timeout=3000)
    log = (result.stdout + result.stderr)[-12000:]
    verdicts = {label.split("/")[-1]: verdict for label, verdict in jobs.items()}
    assert verdicts.get("Build the sdist and the manylinux_2_28 wheel") == "succeeded", (verdicts, log)
    assert verdicts.get("Install from an index and build a kernel (Ubuntu 24.04)") == "succeeded", (verdicts, log)
    assert not any("PyPI" in label or "release" in label.lower().split("/")[-1] for label in verdicts), verdicts
    # What the dist job uploaded: the sdist, the manylinux_2_28 wheel, the bare executable.
    dist = sorted(p.name for p in (artifacts / "python-dist").iterdir())
    assert len(dist) == 2 and dist[0].endswith("-py3-none-manylinux_2_28_x86_64.whl"), dist
    assert dist[1].endswith(".tar.gz"), dist
    assert (artifacts / "executable" / "kbuild-linux-x86_64").is_file()
    # The test job installed it from the index and built a kernel with it; it names the commit.
    assert said(lines, "Install from an index", f"(commit {head[:12]}"), log
    assert said(lines, "Install from an index", "compiler: Clang"), log
    assert said(lines, "Install from an index", "kbuild: built torch"), log
    assert any(re.search(r"torch\d+-cxx11-cpu-x86_64-linux: ok", line) for _, line in lines), log
