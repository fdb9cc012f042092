"""`kbuild ci github`: the generated workflow passes the GitHub workflow schema, and the commands its
jobs run, played here in separate checkouts ("runners") with separate caches, build the variants,
gather them into one checkout and publish them to `kbuild hub serve`, where `kernels` loads them."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import IMG2GRAY, KBUILD, PYTHON, ROOT, empty_compile_cache, git, run_kbuild
from test_publish import ORG, hub, hub_env  # noqa: F401 (hub is a fixture)

pytestmark = pytest.mark.slow

KERNEL = Path("kernels") / "img2gray"


def repository(root):
    """A repository with the kernel in a subdirectory, as in a monorepo."""
    shutil.copytree(IMG2GRAY, root / KERNEL, ignore=shutil.ignore_patterns("build", ".kbuild", "__pycache__"))
    git("init", "-q", cwd=root)
    git("add", "-A", cwd=root)
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "kernel", cwd=root)
    return root


def workflow_runs(workflow):
    from ruamel.yaml import YAML  # comes with check-jsonschema
    document = YAML(typ="safe").load(workflow.read_text())
    return {name: [step.get("run", "") for step in job["steps"]] for name, job in document["jobs"].items()}, document


def test_the_workflow_is_valid_and_its_steps_build_gather_and_publish(tmp_path, hub):  # noqa: F811
    repo = repository(tmp_path / "repo")
    written = run_kbuild("ci", "github", repo / KERNEL)
    workflow = repo / ".github" / "workflows" / "kbuild-img2gray.yml"
    assert str(workflow) in written.stdout
    again = run_kbuild("ci", "github", repo / KERNEL)  # as right after kbuild init: nothing to do
    assert "already there and up to date" in again.stdout
    workflow.write_text(workflow.read_text() + "# edited\n")
    refused = run_kbuild("ci", "github", repo / KERNEL, check=False)
    assert refused.returncode == 2 and "--force" in refused.stderr
    run_kbuild("ci", "github", repo / KERNEL, "--force")

    lint = subprocess.run([str(Path(PYTHON).parent / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows",
                           str(workflow)], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    runs, document = workflow_runs(workflow)
    assert any("kbuild variants kernels/img2gray --json" in run for run in runs["variants"])
    assert any('kbuild build kernels/img2gray --variant "$VARIANT" --locked' in run for run in runs["build"])
    # Tests run as far as a runner without a GPU can (CPU variants; CUDA variants loaded), their results
    # reported for the release summary.
    assert any('kbuild test kernels/img2gray --variant "$VARIANT" --create-env --best-effort' in run and
               "--report" in run for run in runs["build"]), runs["build"]
    assert any('kbuild publish kernels/img2gray --tag "$GITHUB_REF_NAME" --require-all' in run
               for run in runs["publish"]), runs["publish"]
    # kbuild is installed from one wheel made (or fetched) once, never compiled in the build jobs.
    assert any("scripts/wheel" in run for run in runs["kbuild"])
    for job in ("variants", "build", "publish"):
        assert any("pip\" install --quiet --no-index --no-deps" in run for run in runs[job]), runs[job]
        assert not any("cmake" in run or "bootstrap" in run for run in runs[job]), runs[job]
    # Compiled objects are kept across runs, per variant, kbuild.lock and commit, so that a later commit
    # stores its own (never restored into a release build); not the toolchains or test environments.
    cache = [s for s in document["jobs"]["build"]["steps"] if s.get("uses", "").startswith("actions/cache@")]
    assert cache and "hashFiles('kernels/img2gray/kbuild.lock')" in cache[0]["with"]["key"]
    assert cache[0]["with"]["key"].endswith("-${{ github.sha }}")
    assert "~/.cache/kbuild/objects" in cache[0]["with"]["path"] and "test-envs" not in cache[0]["with"]["path"]
    assert "refs/tags/" in cache[0]["if"]
    # On tags each build job signs its variant's metadata.json with the workflow's identity, where there
    # is an OIDC token (else says why not); publish requires signatures when the settings ask.
    assert any("sigstore sign --bundle" in run and "ACTIONS_ID_TOKEN_REQUEST_URL" in run for run in runs["build"])
    assert any("--require-signed" in run for run in runs["publish"])
    assert document["jobs"]["build"]["permissions"]["id-token"] == "write"
    gather = [s for s in document["jobs"]["publish"]["steps"] if s.get("name") == "Gather the variants"]
    assert gather and gather[0]["with"]["path"] == "kernels/img2gray/build"

    # The variants job, then one build job per variant (two of the matrix here), each on its own runner.
    listing = json.loads(run_kbuild("variants", repo / KERNEL, "--json").stdout)
    chosen = [v["name"] for v in listing["variants"] if v["name"] in (
        "torch211-cxx11-cpu-x86_64-linux", "torch211-cxx11-cu130-x86_64-linux")]
    assert len(chosen) == 2, listing
    artifacts = tmp_path / "artifacts"
    for index, variant in enumerate(chosen):
        runner = tmp_path / f"runner-{index}"
        git("clone", "-q", str(repo), str(runner), cwd=tmp_path)
        env = dict(os.environ, KBUILD_CACHE=str(empty_compile_cache(tmp_path / f"cache-{index}")))
        run_kbuild("build", runner / KERNEL, "--variant", variant, "--locked", env=env)
        run_kbuild("check", runner / KERNEL, env=env)
        shutil.copytree(runner / KERNEL / "build" / variant, artifacts / variant)  # upload-artifact

    # The publish job: a fresh checkout, the artifacts downloaded into build/, checked, published.
    publisher = tmp_path / "publisher"
    git("clone", "-q", str(repo), str(publisher), cwd=tmp_path)
    shutil.copytree(artifacts, publisher / KERNEL / "build")
    run_kbuild("check", publisher / KERNEL)
    repo_id = f"{ORG}/img2gray-ci"
    outcome = json.loads(run_kbuild("publish", publisher / KERNEL, "--tag", "v1.0.0", "--repo-id", repo_id, "--json",
                                    env=hub_env(hub, tmp_path)).stdout)
    assert outcome["tag"] == "v1.0.0"
    script = r"""
import sys, torch
from kernels import get_kernel
from torchvision.transforms.functional import rgb_to_grayscale
image = torch.randint(0, 256, (1, 3, 9, 7), dtype=torch.uint8)
kernel = get_kernel(sys.argv[1], version=1)
assert torch.equal(kernel.img2gray(image), rgb_to_grayscale(image))
print(kernel.__file__)
"""
    loaded = subprocess.run([PYTHON, "-c", script, repo_id], env=hub_env(hub, tmp_path), capture_output=True,
                            text=True)
    assert loaded.returncode == 0, loaded.stdout + loaded.stderr
    assert "torch211-cxx11-cu130-x86_64-linux" in loaded.stdout


def test_the_workflow_passes_actionlint_and_zizmor(tmp_path):
    """Current actions pinned to commits, least permissions per job, no template injection: the two
    linters GitHub users run find nothing (zizmor offline, so that no finding depends on the network)."""
    repo = repository(tmp_path / "repo")
    run_kbuild("ci", "github", repo / KERNEL)
    workflow = repo / ".github" / "workflows" / "kbuild-img2gray.yml"
    tools = Path(PYTHON).parent
    lint = subprocess.run([str(tools / "actionlint"), "-no-color", str(workflow)], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    for persona in ("pedantic", "auditor"):
        audit = subprocess.run([str(tools / "zizmor"), "--offline", "--no-progress", "--persona", persona,
                                str(workflow)], capture_output=True, text=True)
        assert audit.returncode == 0, persona + "\n" + audit.stdout + audit.stderr
    text = workflow.read_text()
    for action in ("actions/checkout@", "actions/upload-artifact@", "actions/download-artifact@", "actions/cache@"):
        assert all(len(line.split("@")[1].split()[0]) == 40 for line in text.splitlines() if action in line), action


def test_kbuilds_own_release_workflow_passes_actionlint_and_zizmor():
    workflow = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "release.yml"
    tools = Path(PYTHON).parent
    lint = subprocess.run([str(tools / "actionlint"), "-no-color", str(workflow)], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    audit = subprocess.run([str(tools / "zizmor"), "--offline", "--no-progress", str(workflow)], capture_output=True,
                           text=True)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    text = workflow.read_text()
    assert "scripts/wheel dist" in text
    # PyPI by trusted publishing: a pinned action, an OIDC token for that job alone, no stored secret.
    assert re.search(r"uses: pypa/gh-action-pypi-publish@[0-9a-f]{40}", text), text
    assert "id-token: write" in text and "secrets." not in text


def test_every_apt_list_that_builds_kbuild_holds_what_cmake_finds(tmp_path):
    """The Debian packages that own what CMake found for this build (the -dev packages of every library,
    the CMake packages' config directories) are in templates/ci/kbuild-build-deps.txt, which the
    generated workflow, kbuild's release workflow and scripts/bootstrap install from."""
    cache = (KBUILD.parents[1] / "CMakeCache.txt").read_text()
    found = set()
    for name, path in re.findall(r"^(\w+):(?:PATH|FILEPATH)=(/\S+)$", cache, re.M):
        wanted = name.startswith("pkgcfg_lib_") or re.search(r"(_DIR|_LIBRARY|_LIBRARY_RELEASE)$", name)
        if wanted and not name.startswith(("GTest", "CMAKE_")) and "INCLUDE" not in name:
            found.add(path)
    assert len(found) >= 11, found  # the libraries and CMake packages of CMakeLists.txt
    owners = set()
    for path in found:
        owner = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True, check=True).stdout
        owners.add(owner.split(":")[0].split(",")[0].strip())
    listing = (ROOT / "templates" / "ci" / "kbuild-build-deps.txt").read_text()
    listed = {line.split("#")[0].strip() for line in listing.splitlines()} - {""}
    assert owners <= listed, sorted(owners - listed)
    assert {"build-essential", "cmake", "ninja-build", "pkg-config", "patchelf", "git"} <= listed
    # The generated workflow installs every one of them when it builds kbuild from source ...
    repo = repository(tmp_path / "repo")
    run_kbuild("ci", "github", repo / KERNEL)
    runs, _ = workflow_runs(repo / ".github" / "workflows" / "kbuild-img2gray.yml")
    install = next(run for run in runs["kbuild"] if "apt-get install" in run)
    assert listed <= set(install.replace("\\", " ").split()), sorted(listed - set(install.split()))
    # ... and the bootstrap reads the list itself, as it and kbuild's release workflow read the wheel's.
    assert "templates/ci/kbuild-build-deps.txt" in (ROOT / "scripts" / "bootstrap").read_text()
    for reader in (ROOT / "scripts" / "bootstrap", ROOT / ".github" / "workflows" / "release.yml"):
        assert "tool/wheel/apt-packages.txt" in reader.read_text(), reader
