"""The workflow `kbuild init` writes, executed for real: act (tests/e2e/act_harness.py) runs it on this
machine, which has no GPU as GitHub's hosted runners have none, from a push to main to a published
release that `kernels` loads. Each job gets a fresh checkout (a stand-in of actions/checkout), artifacts
and the Actions cache move between jobs and runs through local stand-ins, kbuild comes from a pinned
wheel (vars.KBUILD_WHEEL_URL/SHA256), and the Hub is `kbuild hub serve` on loopback.

The kernel is `kbuild init`'s, with its matrix narrowed to Torch 2.11 (CPU and CUDA 13.0, the Torch of
the test environment, which the runner has installed: KBUILD_PYTHON) and its CUDA component to sm_90, so
that three runs take minutes."""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from act_harness import ActRunner, dev_wheel, said
from conftest import KBUILD, PYTHON, git, run_kbuild
from test_publish import ORG, TOKEN, hub, hub_env  # noqa: F401 (hub is a fixture)

pytestmark = pytest.mark.slow

NAME = "act-demo"
CPU = "torch211-cxx11-cpu-x86_64-linux"
CUDA = "torch211-cxx11-cu130-x86_64-linux"
CACHE_BUDGET = 1024 ** 3  # what the workflow lets each variant's entry hold (KBUILD_CACHE_MAX_SIZE 1G)


def commit(repo, message):
    git("add", "-A", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", message, cwd=repo)
    return git("rev-parse", "HEAD", cwd=repo)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("act")
    run_kbuild("init", NAME, "--name", f"{ORG}/{NAME}", "--no-lock", cwd=root)
    repo = root / NAME
    (repo / "kbuild.toml").write_text('[matrix]\ntorch = ["2.11"]\ncuda = ["13.0"]\ncpu = true\n')
    build_toml = repo / "build.toml"
    build_toml.write_text(build_toml.read_text().replace('backend = "cuda"\n', 'backend = "cuda"\ncuda-capabilities = ["9.0"]\n'))
    run_kbuild("toolchains", "lock", repo)
    assert git("symbolic-ref", "HEAD", cwd=repo) == "refs/heads/main"  # the branch the workflow builds
    commit(repo, "kernel")
    wheel = dev_wheel(KBUILD, root / "dist")
    import hashlib
    settings = {"KBUILD_WHEEL_URL": wheel.as_uri(), "KBUILD_WHEEL_SHA256": hashlib.sha256(wheel.read_bytes()).hexdigest()}
    return repo, settings, ActRunner(root / "runner", repo)


def explain(result):
    return (result.stdout + result.stderr)[-12000:]


def saved_entries(lines):
    """{key: bytes} of the cache entries the stand-in saved in a run."""
    found = {}
    for _, line in lines:
        match = re.search(r"Cache saved with key: (\S+) \((\d+) bytes\)", line)
        if match:
            found[match.group(1)] = int(match.group(2))
    return found


def test_an_init_projects_workflow_goes_from_push_to_a_release_kernels_loads(project, hub, tmp_path):  # noqa: F811
    repo, settings, runner = project
    workflow = repo / ".github" / "workflows" / f"kbuild-{NAME}.yml"
    runner_env = {"KBUILD_PYTHON": PYTHON}  # the runner's Torch 2.11 (CUDA 13.0), no GPU

    # A push to main: every build job green, the CUDA variant included, built --locked, checked, and
    # tested as far as a machine without a GPU can (the CPU tests run; the CUDA variant is loaded).
    first = commit(repo, "first push") if git("status", "--porcelain", cwd=repo) else git("rev-parse", "HEAD", cwd=repo)
    result, jobs, lines, artifacts = runner.run(workflow, variables=settings, env=runner_env)
    assert result.returncode == 0, explain(result)
    assert "failed" not in jobs.values() and len(jobs) >= 4, (jobs, explain(result))
    for variant in (CPU, CUDA):
        assert said(lines, f"Build {variant}", "0 from cache)"), explain(result)  # each on a fresh machine
        assert (artifacts / variant / "metadata.json").is_file()
        report = json.loads((artifacts / f"{variant}.test-results" / f"{variant}.json").read_text())
        assert report[0]["status"] == ("passed" if variant == CPU else "loaded"), report
    assert said(lines, f"Build {CUDA}", "loaded: no GPU here, its tests were not run"), explain(result)
    # No release on a branch push.
    assert not any("Publish" in label for label in jobs), jobs
    lock_hash = None
    first_entries = saved_entries(lines)
    for variant in (CPU, CUDA):
        key = next((k for k in first_entries if k.startswith(f"kbuild-{variant}-") and k.endswith(f"-{first}")), None)
        assert key, (first_entries, explain(result))
        lock_hash = key[len(f"kbuild-{variant}-"):-len(f"-{first}")]
        assert 0 < first_entries[key] < CACHE_BUDGET, first_entries

    # The next commit restores the previous commit's objects (the prefix restore-key), compiles
    # nothing, and stores an entry of its own.
    (repo / "README.md").write_text((repo / "README.md").read_text() + "\nA second commit.\n")
    second = commit(repo, "second push")
    runner.clean_workspaces()
    result, jobs, lines, _ = runner.run(workflow, variables=settings, env=runner_env)
    assert result.returncode == 0 and "failed" not in jobs.values(), explain(result)
    for variant in (CPU, CUDA):
        assert said(lines, f"Build {variant}", f"Cache restored from key: kbuild-{variant}-{lock_hash}-{first}"), \
            explain(result)
        built = next(line for label, line in lines if f"Build {variant}" in label and "kbuild: built" in line)
        assert re.search(r"\(2 jobs run, [45] from cache\)", built), built  # compiles and links nothing
    second_entries = saved_entries(lines)
    assert {f"kbuild-{variant}-{lock_hash}-{second}" for variant in (CPU, CUDA)} <= set(second_entries), second_entries
    print("\ncache entries (gzip):", {k: f"{v / 1e6:.1f} MB" for k, v in {**first_entries, **second_entries}.items()})

    # With a GPU runner configured, the CUDA variants' tests must pass there before anything is
    # published: here that "GPU runner" has no GPU, so its job fails and the release does not happen.
    git("tag", "v0.9.0", cwd=repo)
    runner.clean_workspaces()
    result, jobs, lines, _ = runner.run(workflow, ref="refs/tags/v0.9.0", env=runner_env,
                                        variables=dict(settings, KBUILD_GPU_RUNNER="ubuntu-24.04"))
    assert result.returncode != 0, explain(result)
    assert [verdict for label, verdict in jobs.items() if "on a GPU" in label] == ["failed"], jobs
    assert said(lines, "on a GPU", "no GPU here"), explain(result)
    assert not any("Publish" in label for label in jobs), jobs

    # The tag: built clean (no cache), not signed (no OIDC token here: said, not failed), gathered,
    # summarised, checked and published to the Hub, from which kernels loads version 1.
    git("tag", "v1.0.0", cwd=repo)
    runner.clean_workspaces()
    env = dict(runner_env, **{k: v for k, v in hub_env(hub, tmp_path).items() if k.startswith("HF_") and k != "HF_TOKEN"})
    result, jobs, lines, _ = runner.run(workflow, ref="refs/tags/v1.0.0", variables=settings,
                                        secrets={"HF_TOKEN": TOKEN}, env=env)
    assert result.returncode == 0 and "failed" not in jobs.values(), explain(result)
    assert any("Publish" in label and verdict == "succeeded" for label, verdict in jobs.items()), jobs
    assert not said(lines, "Build", "Cache restored"), explain(result)
    assert said(lines, f"Build {CPU}", "0 from cache)") and said(lines, f"Build {CUDA}", "0 from cache)"), \
        explain(result)
    assert said(lines, f"Build {CUDA}", "not signed: this job has no OIDC token"), explain(result)
    assert said(lines, "Publish", f"| {CPU} | passed |"), explain(result)
    assert said(lines, "Publish", f"| {CUDA} | loaded: no GPU here"), explain(result)
    assert said(lines, "Publish", "v1.0.0"), explain(result)
    script = r"""
import sys, torch
from kernels import get_kernel
kernel = get_kernel(sys.argv[1], version=1, backend="cpu")
x = torch.randn(64, 33)
torch.testing.assert_close(kernel.relu(x), torch.relu(x))
print(kernel.__file__)
"""
    loaded = subprocess.run([PYTHON, "-c", script, f"{ORG}/{NAME}"], env=hub_env(hub, tmp_path), capture_output=True,
                            text=True)
    assert loaded.returncode == 0, loaded.stdout + loaded.stderr
    assert CPU in loaded.stdout
