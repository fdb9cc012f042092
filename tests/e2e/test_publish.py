"""kbuild publish against `kbuild hub serve` on loopback, checked with the real `kernels` package
and huggingface_hub: the whole loop build -> publish -> get_kernel."""

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import KBUILD, PYTHON, build_args, copy_kernel, hub_server, run_kbuild, variant_dirs

pytestmark = pytest.mark.slow

TOKEN = "hf_kbuild_e2e_token_0123456789"
ORG = "kbuild-community"


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    root = tmp_path_factory.mktemp("hub")
    (root / "config.toml").write_text(
        "[limits]\nmultipart-chunk = 262144\n\n"
        f'[[tokens]]\ntoken = "{TOKEN}"\nuser = "alice"\nnamespaces = ["{ORG}"]\n\n'
        f'[[organizations]]\nname = "{ORG}"\ntrusted-kernel-publisher = true\n')
    log = root / "access.log"
    with hub_server(root, "--log", log) as url:
        yield {"url": url, "root": root, "log": log}


def hub_env(hub, tmp_path, token=TOKEN):
    # (No HF_HUB_DISABLE_TELEMETRY: with it, kernels 0.17.2 builds a user agent httpx refuses.)
    env = dict(os.environ, HF_ENDPOINT=hub["url"], HF_HOME=str(tmp_path / "hf-home"), HF_HUB_DISABLE_XET="1")
    env.pop("HF_TOKEN", None)
    if token:
        env["HF_TOKEN"] = token
    return env


def publish(kernel, hub, tmp_path, *args, token=TOKEN, check=True):
    return run_kbuild("publish", kernel, *args, env=hub_env(hub, tmp_path, token), check=check)


def remote_tree(hub, tmp_path, repo, revision):
    script = ("import json, sys\nfrom huggingface_hub import HfApi\n"
              "api = HfApi()\n"
              "files = [(f.path, f.blob_id, f.lfs.sha256 if f.lfs else None) for f in "
              "api.list_repo_tree(sys.argv[1], revision=sys.argv[2], repo_type='kernel', recursive=True) "
              "if hasattr(f, 'blob_id')]\n"
              "print(json.dumps(sorted(files)))\n")
    out = subprocess.run([PYTHON, "-c", script, repo, revision], env=hub_env(hub, tmp_path), check=True,
                         capture_output=True, text=True).stdout
    return [tuple(x) for x in json.loads(out)]


def refs(hub, tmp_path, repo):
    script = ("import json, sys\nfrom huggingface_hub import HfApi\n"
              "r = HfApi().list_repo_refs(sys.argv[1], repo_type='kernel')\n"
              "print(json.dumps({'branches': {b.name: b.target_commit for b in r.branches},"
              " 'tags': {t.name: t.target_commit for t in r.tags}}))\n")
    out = subprocess.run([PYTHON, "-c", script, repo], env=hub_env(hub, tmp_path), check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)


def test_publish_and_load_with_get_kernel_by_version_and_by_tag(built_kernel, hub, tmp_path):
    repo = f"{ORG}/img2gray"
    result = publish(built_kernel, hub, tmp_path, "--tag", "v1.0.0", "--repo-id", repo, "--json")
    outcome = json.loads(result.stdout)
    assert outcome["status"] == "uploaded" and outcome["branch"] == "v1" and outcome["tag"] == "v1.0.0"
    assert outcome["lfs_objects_uploaded"] == 2  # the two .so files; Python and JSON go inline
    state = refs(hub, tmp_path, repo)
    assert state["tags"]["v1.0.0"] == state["branches"]["v1"] == outcome["commit"]
    tree = remote_tree(hub, tmp_path, repo, "v1")
    paths = [p for p, _, _ in tree]
    for variant in variant_dirs(built_kernel):
        for file in variant.iterdir():
            assert f"build/{variant.name}/{file.name}" in paths
    assert "benchmarks/benchmark.py" in paths
    assert all(lfs for p, _, lfs in tree if p.endswith(".so"))
    script = r"""
import sys, torch
from kernels import get_kernel
from torchvision.transforms.functional import rgb_to_grayscale
image = torch.randint(0, 256, (2, 3, 31, 17), dtype=torch.uint8)
for kwargs in ({"version": 1}, {"revision": "v1.0.0"}):
    kernel = get_kernel(sys.argv[1], **kwargs)
    assert torch.equal(kernel.img2gray(image), rgb_to_grayscale(image)), kwargs
    print(kernel.__file__)
"""
    out = subprocess.run([PYTHON, "-c", script, repo], env=hub_env(hub, tmp_path), capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    loaded = out.stdout.split()
    assert len(loaded) == 2 and all("torch211-cxx11-cu130-x86_64-linux" in path for path in loaded)
    readme = subprocess.run([PYTHON, "-c", "import sys\nfrom huggingface_hub import hf_hub_download\n"
                             "print(open(hf_hub_download(sys.argv[1], 'README.md', repo_type='kernel')).read())", repo],
                            env=hub_env(hub, tmp_path), check=True, capture_output=True, text=True).stdout
    assert f'get_kernel("{repo}", version=1)' in readme and "library_name: kernels" in readme


def test_without_a_tag_the_variants_go_to_the_version_branch_only(built_kernel, hub, tmp_path):
    repo = f"{ORG}/img2gray-branch-only"
    outcome = json.loads(publish(built_kernel, hub, tmp_path, "--repo-id", repo, "--json").stdout)
    assert outcome["status"] == "uploaded" and outcome["branch"] == "v1" and outcome["tag"] is None
    state = refs(hub, tmp_path, repo)
    assert state["branches"]["v1"] == outcome["commit"] and state["tags"] == {}
    again = publish(built_kernel, hub, tmp_path, "--repo-id", repo)
    assert "no changes to img2gray" in again.stdout and "tag" not in again.stdout.split("\n")[-3]
    quiet = publish(built_kernel, hub, tmp_path, "--repo-id", repo, "-q")
    assert quiet.stderr == "" and len(quiet.stdout.strip().splitlines()) == 2, quiet  # the result and the URL


def test_a_dry_run_against_an_unreachable_hub_is_a_network_error_not_a_guessed_plan(built_kernel, tmp_path):
    env = dict(os.environ, HF_ENDPOINT="http://127.0.0.1:9", HF_TOKEN=TOKEN, HF_HOME=str(tmp_path / "hf"))
    result = run_kbuild("publish", built_kernel, "--tag", "v1.0.0", "--repo-id", f"{ORG}/x", "--dry-run", env=env,
                        check=False)
    assert result.returncode == 4, result.stdout + result.stderr
    assert "cannot reach" in result.stderr and "would publish" not in result.stdout


def test_unchanged_republish_uploads_nothing(built_kernel, hub, tmp_path):
    repo = f"{ORG}/img2gray-again"
    publish(built_kernel, hub, tmp_path, "--tag", "v1.0.0", "--repo-id", repo)
    outcome = json.loads(publish(built_kernel, hub, tmp_path, "--tag", "v1.0.1", "--repo-id", repo, "--json").stdout)
    assert outcome["status"] == "no_changes"
    assert outcome["lfs_bytes_uploaded"] == 0 and outcome["lfs_objects_uploaded"] == 0
    state = refs(hub, tmp_path, repo)
    assert state["tags"]["v1.0.1"] == state["tags"]["v1.0.0"] == state["branches"]["v1"]
    # The same build under the same tag again is done already (e.g. a rerun after the answer to the
    # tag request was lost): success, nothing sent.
    again = json.loads(publish(built_kernel, hub, tmp_path, "--tag", "v1.0.1", "--repo-id", repo, "--json").stdout)
    assert again["status"] == "no_changes" and again["lfs_objects_uploaded"] == 0
    # Anything else under an existing tag is refused without --force, before anything is uploaded.
    changed = tmp_path / "changed"
    shutil.copytree(built_kernel, changed, ignore=shutil.ignore_patterns(".kbuild"))
    (changed / "benchmarks" / "benchmark.py").write_text("# another benchmark\n")
    result = publish(changed, hub, tmp_path, "--tag", "v1.0.1", "--repo-id", repo, check=False)
    assert result.returncode == 2 and "tag v1.0.1 already exists" in result.stderr
    assert refs(hub, tmp_path, repo)["tags"]["v1.0.1"] == state["tags"]["v1.0.1"]


def test_publishing_one_changed_variant_leaves_the_others_untouched(built_kernel, hub, tmp_path):
    repo = f"{ORG}/img2gray-partial"
    publish(built_kernel, hub, tmp_path, "--tag", "v1.0.0", "--repo-id", repo)
    before = remote_tree(hub, tmp_path, repo, "v1")
    # A copy whose build/ holds only a rebuilt CPU variant (with a changed Python file).
    kernel = tmp_path / "changed"
    shutil.copytree(built_kernel, kernel, ignore=shutil.ignore_patterns(".kbuild"))
    shutil.rmtree(kernel / "build")
    init = kernel / "torch-ext" / "img2gray" / "__init__.py"
    init.write_text(init.read_text() + "\n# changed\n")
    run_kbuild(*build_args(kernel, "--backend", "cpu"))
    publish(kernel, hub, tmp_path, "--tag", "v1.1.0", "--repo-id", repo)
    after = remote_tree(hub, tmp_path, repo, "v1")
    cuda = "build/torch211-cxx11-cu130-x86_64-linux/"
    cpu = "build/torch211-cxx11-cpu-x86_64-linux/"
    assert [f for f in before if f[0].startswith(cuda)] == [f for f in after if f[0].startswith(cuda)]
    new_cpu = sorted(str(p.relative_to(kernel / "build")) for p in (kernel / "build").rglob("*") if p.is_file())
    assert sorted(f[0][len("build/"):] for f in after if f[0].startswith(cpu)) == new_cpu
    assert [f for f in before if f[0].startswith(cpu)] != [f for f in after if f[0].startswith(cpu)]


def test_an_interrupted_publish_ends_like_an_uninterrupted_one(built_kernel, hub, tmp_path):
    # A build that ships 32 MB of fresh data (pyext "bin"), uploaded in 256 KiB parts: slow enough
    # to interrupt on loopback.
    kernel = tmp_path / "fresh"
    shutil.copytree(built_kernel, kernel, ignore=shutil.ignore_patterns(".kbuild", "build"))
    build_toml = kernel / "build.toml"
    build_toml.write_text(build_toml.read_text().replace('include = ["include"]\n', 'include = ["include"]\npyext = ["py", "bin"]\n', 1))
    (kernel / "torch-ext" / "img2gray" / "weights.bin").write_bytes(os.urandom(32 << 20))
    run_kbuild(*build_args(kernel, "--backend", "cpu"))
    interrupted, reference = f"{ORG}/img2gray-interrupted", f"{ORG}/img2gray-reference"
    log = hub["log"]
    start = log.stat().st_size
    client = subprocess.Popen([str(KBUILD), "publish", str(kernel), "--tag", "v1.0.0", "--repo-id", interrupted],
                              env=hub_env(hub, tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # Kill the client in the middle of the multipart upload (the access log shows each part).
    deadline = time.time() + 60
    while time.time() < deadline and client.poll() is None:
        with open(log) as f:
            f.seek(start)
            if sum(1 for line in f if " PUT " in line) >= 2:
                break
        time.sleep(0.005)
    assert client.poll() is None, "the publish finished before it could be interrupted"
    client.send_signal(signal.SIGKILL)
    client.wait()
    assert "v1.0.0" not in refs(hub, tmp_path, interrupted)["tags"]
    publish(kernel, hub, tmp_path, "--tag", "v1.0.0", "--repo-id", interrupted)
    publish(kernel, hub, tmp_path, "--tag", "v1.0.0", "--repo-id", reference)  # never interrupted
    assert remote_tree(hub, tmp_path, interrupted, "v1") == remote_tree(hub, tmp_path, reference, "v1")
    # main holds the card (which names the repository) like the reference does.
    assert [p for p, _, _ in remote_tree(hub, tmp_path, interrupted, "main")] == [
        p for p, _, _ in remote_tree(hub, tmp_path, reference, "main")]
    state = refs(hub, tmp_path, interrupted)
    assert state["tags"]["v1.0.0"] == state["branches"]["v1"]


def test_a_wrong_token_gets_a_clear_401_and_tokens_never_reach_the_output(built_kernel, hub, tmp_path):
    result = publish(built_kernel, hub, tmp_path, "--tag", "v1.0.0", "--repo-id", f"{ORG}/img2gray-401",
                     token="hf_wrong_token_abcdef", check=False)
    assert result.returncode == 4
    assert "rejected the credentials" in result.stderr and "401" in result.stderr
    assert "hint:" in result.stderr and "HF_TOKEN" in result.stderr
    assert "hf_wrong_token_abcdef" not in result.stdout + result.stderr
    verbose = publish(built_kernel, hub, tmp_path, "--tag", "v1.0.0", "--repo-id", f"{ORG}/img2gray-verbose", "-v")
    assert "POST " in verbose.stderr and "/commit/v1" in verbose.stderr  # every request is shown
    assert TOKEN not in verbose.stdout + verbose.stderr
    who = run_kbuild("whoami", env=hub_env(hub, tmp_path))
    assert who.stdout.startswith("alice ") and TOKEN not in who.stdout


def test_dry_run_plans_without_writing(built_kernel, hub, tmp_path):
    repo = f"{ORG}/img2gray-dry"
    out = publish(built_kernel, hub, tmp_path, "--tag", "v1.0.0", "--repo-id", repo, "--dry-run").stdout
    assert "dry run" in out and "+ build/torch211-cxx11-cu130-x86_64-linux/" in out and "branch v1 (new)" in out
    check = subprocess.run([PYTHON, "-c", "import sys\nfrom huggingface_hub import HfApi\n"
                            "print(HfApi().repo_exists(sys.argv[1], repo_type='kernel'))", repo],
                           env=hub_env(hub, tmp_path), check=True, capture_output=True, text=True)
    assert check.stdout.strip() == "False"


def test_tag_and_build_are_validated_before_any_request(built_kernel, hub, tmp_path):
    for tag, message in (("1.0.0", "is not a release tag"), ("v2.0.0", "does not match the kernel's version 1")):
        for token in (TOKEN, None):  # the local checks come first, before the need for a token
            result = publish(built_kernel, hub, tmp_path, "--tag", tag, "--repo-id", f"{ORG}/never", token=token,
                             check=False)
            assert result.returncode == 2 and message in result.stderr, result.stderr
    result = publish(built_kernel, hub, tmp_path, "--tag", "v1.0.0", "--repo-id", f"{ORG}/never", token=None,
                     check=False)
    assert result.returncode == 2 and "no Hub token found" in result.stderr, result.stderr
    tampered = tmp_path / "tampered"
    shutil.copytree(built_kernel, tampered, ignore=shutil.ignore_patterns(".kbuild"))
    ops = next((tampered / "build").glob("*cpu*/_ops.py"))
    ops.write_text(ops.read_text() + "# tampered\n")
    result = publish(tampered, hub, tmp_path, "--tag", "v1.0.0", "--repo-id", f"{ORG}/never", check=False)
    assert result.returncode == 2 and "does not match the digest" in result.stderr
