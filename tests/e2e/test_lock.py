"""The consumer loop against `kbuild hub serve` on loopback, checked with the real `kernels` package:
publish two releases of img2gray -> kbuild lock (each kind of spec) -> kbuild download ->
kernels.get_locked_kernel offline. The lock file for integer versions must equal `kernels lock`'s
byte for byte."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from conftest import KBUILD, PYTHON, build_args, copy_kernel, run_kbuild

pytestmark = pytest.mark.slow

TOKEN = "hf_kbuild_lock_e2e_token_0123456789"
ORG = "kbuild-community"
CUDA_VARIANT = "torch211-cxx11-cu130-x86_64-linux"
CPU_VARIANT = "torch211-cxx11-cpu-x86_64-linux"
KERNELS_CLI = str(Path(PYTHON).parent / "kernels")


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    root = tmp_path_factory.mktemp("lock-hub")
    (root / "config.toml").write_text(
        f'[[tokens]]\ntoken = "{TOKEN}"\nuser = "alice"\nnamespaces = ["{ORG}", "newcomers"]\n\n'
        f'[[organizations]]\nname = "{ORG}"\ntrusted-kernel-publisher = true\n')
    server = subprocess.Popen([str(KBUILD), "hub", "serve", "--root", str(root), "--port", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    match = re.search(r"at (http://\S+)", line)
    assert match, line + server.stderr.read()
    yield {"url": match.group(1), "root": root}
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=10)


def env_for(hub, home: Path, token=TOKEN, **extra):
    env = dict(os.environ, HF_ENDPOINT=hub["url"], HF_HOME=str(home), HF_HUB_DISABLE_XET="1")
    env.update(extra)
    env.pop("HF_TOKEN", None)
    env.pop("KERNELS_CACHE", None)
    env.pop("HF_HUB_CACHE", None)
    if token:
        env["HF_TOKEN"] = token
    return env


def kbuild(hub, home, *args, check=True, token=TOKEN, **extra):
    return run_kbuild(*args, env=env_for(hub, home, token, **extra), check=check)


def kernels_cli(hub, home, *args, token=TOKEN):
    return subprocess.run([KERNELS_CLI, *map(str, args)], env=env_for(hub, home, token), capture_output=True,
                          text=True)


def refs(hub, home, repo):
    out = kbuild(hub, home, "versions", repo, "--json", "--python", PYTHON).stdout
    return json.loads(out)


def project(path: Path, dependencies: str) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "pyproject.toml").write_text(f'[project]\nname = "app"\n\n[tool.kernels.dependencies]\n{dependencies}\n')
    return path


@pytest.fixture(scope="module")
def changed_kernel(built_kernel, tmp_path_factory):
    """A copy of the built kernel whose CPU variant was rebuilt from a changed __init__.py (so a
    second publish makes a second commit on branch v1)."""
    kernel = tmp_path_factory.mktemp("changed") / "img2gray"
    shutil.copytree(built_kernel, kernel, ignore=shutil.ignore_patterns(".kbuild"))
    shutil.rmtree(kernel / "build")
    init = kernel / "torch-ext" / "img2gray" / "__init__.py"
    init.write_text(init.read_text() + "\n# release 1.1\n")
    run_kbuild(*build_args(kernel, "--backend", "cpu"))
    return kernel


@pytest.fixture(scope="module")
def releases(hub, built_kernel, changed_kernel, tmp_path_factory):
    """img2gray published twice: v1.0.0, then v1.1.0 (changed CPU variant) on branch v1."""
    home = tmp_path_factory.mktemp("publisher")
    repo = f"{ORG}/img2gray-lock"
    first = json.loads(kbuild(hub, home, "publish", built_kernel, "--tag", "v1.0.0", "--repo-id", repo,
                              "--json").stdout)
    second = json.loads(kbuild(hub, home, "publish", changed_kernel, "--tag", "v1.1.0", "--repo-id", repo,
                               "--json").stdout)
    assert first["commit"] != second["commit"]
    return {"repo": repo, "v1.0.0": first["commit"], "v1.1.0": second["commit"]}


LOAD_OFFLINE = r"""
import sys, torch
from pathlib import Path
from kernels import get_locked_kernel
from torchvision.transforms.functional import rgb_to_grayscale
kernel = get_locked_kernel(sys.argv[1], lockfile=Path(sys.argv[2]))
image = torch.randint(0, 256, (2, 3, 19, 23), dtype=torch.uint8)
assert torch.equal(kernel.img2gray(image), rgb_to_grayscale(image))
print(kernel.__file__)
"""


def test_integer_version_lock_equals_kernels_lock_byte_for_byte(hub, releases, tmp_path):
    ours = project(tmp_path / "ours", f'"{releases["repo"]}" = 1')
    theirs = project(tmp_path / "theirs", f'"{releases["repo"]}" = 1')
    kbuild(hub, tmp_path / "home", "lock", ours)
    result = kernels_cli(hub, tmp_path / "home", "lock", theirs)
    assert result.returncode == 0, result.stderr
    assert (ours / "kernels.lock").read_bytes() == (theirs / "kernels.lock").read_bytes()
    lock = json.loads((ours / "kernels.lock").read_text())
    assert lock == [{"dependency": {"repo-id": releases["repo"], "version": 1},
                     "lock": {"commit": releases["v1.1.0"]}}]


@pytest.mark.parametrize("spec, revision, release", [
    ("1", None, "v1.1.0"),
    ('"^1.0"', "v1.1.0", "v1.1.0"),
    ('">=1.0,<1.1"', "v1.0.0", "v1.0.0"),
    ('"==1.0.*"', "v1.0.0", "v1.0.0"),
    ('"~=1.0"', "v1.1.0", "v1.1.0"),
    ('"v1.0.0"', "v1.0.0", "v1.0.0"),
    ('{ revision = "v1.1.0" }', "v1.1.0", "v1.1.0"),
    ("COMMIT", "COMMIT", "v1.0.0"),
])
def test_each_kind_of_spec_locks_downloads_and_loads_offline(hub, releases, tmp_path, spec, revision, release):
    commit = releases[release]
    spec = spec.replace("COMMIT", f'"{releases["v1.0.0"]}"')
    revision = revision.replace("COMMIT", releases["v1.0.0"]) if revision else None
    app = project(tmp_path / "app", f'"{releases["repo"]}" = {spec}')
    home = tmp_path / "home"
    kbuild(hub, home, "lock", app)
    lock = json.loads((app / "kernels.lock").read_text())
    dependency = {"repo-id": releases["repo"], **({"revision": revision} if revision else {"version": 1})}
    assert lock == [{"dependency": dependency, "lock": {"commit": commit}}]
    downloaded = json.loads(kbuild(hub, home, "download", app, "--python", PYTHON, "--json").stdout)
    assert [v["variant"] for v in downloaded["variants"]] == [CUDA_VARIANT]
    assert downloaded["variants"][0]["commit"] == commit
    # The loader finds the variant without the network (and without the server, which stays up to
    # prove nothing reaches it: the kernels package is told it is offline).
    load = subprocess.run([PYTHON, "-c", LOAD_OFFLINE, releases["repo"], app / "kernels.lock"],
                          env=env_for(hub, home, HF_HUB_OFFLINE="1"), capture_output=True, text=True)
    assert load.returncode == 0, load.stdout + load.stderr
    assert f"/snapshots/{commit}/build/{CUDA_VARIANT}/" in load.stdout


def test_locks_stay_until_upgraded_and_check_guards_ci(hub, releases, built_kernel, changed_kernel, tmp_path):
    repo = f"{ORG}/img2gray-moving"
    home = tmp_path / "home"
    first = json.loads(kbuild(hub, home, "publish", built_kernel, "--tag", "v1.0.0", "--repo-id", repo,
                              "--json").stdout)["commit"]
    app = project(tmp_path / "app", f'"{repo}" = 1')
    assert kbuild(hub, home, "lock", app, "--check", check=False).returncode == 1  # no lock yet
    assert not (app / "kernels.lock").exists()
    kbuild(hub, home, "lock", app)
    locked = (app / "kernels.lock").read_bytes()
    second = json.loads(kbuild(hub, home, "publish", changed_kernel, "--tag", "v1.1.0", "--repo-id", repo,
                               "--json").stdout)["commit"]
    # A new release does not move the lock (kernels lock would): --check still passes.
    assert kbuild(hub, home, "lock", app, "--check").returncode == 0
    assert "up to date" in kbuild(hub, home, "lock", app).stdout
    assert (app / "kernels.lock").read_bytes() == locked
    dry = kbuild(hub, home, "lock", app, "--upgrade", "--dry-run")
    assert f"~ {repo}@1 {first[:12]} -> {second[:12]}" in dry.stdout
    assert (app / "kernels.lock").read_bytes() == locked
    report = json.loads(kbuild(hub, home, "lock", app, f"--upgrade={repo}", "--json").stdout)
    assert report["written"] and report["dependencies"][0]["commit"] == second
    assert report["dependencies"][0]["source"] == "branch v1"
    # A dependency added to pyproject.toml makes the lock stale for CI.
    project(app, f'"{repo}" = 1\n"{releases["repo"]}" = "^1.0"')
    stale = kbuild(hub, home, "lock", app, "--check", check=False)
    assert stale.returncode == 1 and f"+ {ORG}/img2gray-lock@v1.1.0" in stale.stderr, stale.stderr


def test_kernel_dependencies_are_locked_recursively_and_cycles_refused(hub, releases, built_kernel, tmp_path):
    home = tmp_path / "home"

    def publish_depending_on(name, dependencies):
        kernel = tmp_path / name
        shutil.copytree(built_kernel, kernel, ignore=shutil.ignore_patterns(".kbuild"))
        for metadata in (kernel / "build").glob("*/metadata.json"):
            data = json.loads(metadata.read_text())
            data["kernel-depends"] = dependencies
            metadata.write_text(json.dumps(data, indent=2) + "\n")  # metadata.json is not part of the digest
        kbuild(hub, home, "publish", kernel, "--tag", "v1.0.0", "--repo-id", f"{ORG}/{name}")

    publish_depending_on("uses-img2gray", [{"repo-id": releases["repo"], "version": 1}])
    ours = project(tmp_path / "ours", f'"{ORG}/uses-img2gray" = 1')
    theirs = project(tmp_path / "theirs", f'"{ORG}/uses-img2gray" = 1')
    report = json.loads(kbuild(hub, home, "lock", ours, "--json").stdout)
    assert [d["dependency"]["repo-id"] for d in report["dependencies"]] == [f"{ORG}/img2gray-lock",
                                                                          f"{ORG}/uses-img2gray"]
    assert report["dependencies"][0]["required_by"] == [f"{ORG}/uses-img2gray@1"]
    assert kernels_cli(hub, home, "lock", theirs).returncode == 0
    assert (ours / "kernels.lock").read_bytes() == (theirs / "kernels.lock").read_bytes()

    publish_depending_on("cycle-a", [{"repo-id": f"{ORG}/cycle-b", "version": 1}])
    publish_depending_on("cycle-b", [{"repo-id": f"{ORG}/cycle-a", "version": 1}])
    cyclic = project(tmp_path / "cyclic", f'"{ORG}/cycle-a" = 1')
    result = kbuild(hub, home, "lock", cyclic, check=False)
    assert result.returncode == 1
    assert f"cyclic kernel dependency: {ORG}/cycle-a@1 -> {ORG}/cycle-b@1 -> {ORG}/cycle-a@1" in result.stderr
    assert not (cyclic / "kernels.lock").exists()
    assert "Cyclic kernel dependency" in kernels_cli(hub, home, "lock", cyclic).stderr  # the same verdict

    # A dependency's metadata names a commit the Hub does not have: the kernel's fault, named.
    gone = "0" * 40
    publish_depending_on("uses-gone", [{"repo-id": releases["repo"], "revision": gone}])
    dangling = project(tmp_path / "dangling", f'"{ORG}/uses-gone" = 1')
    result = kbuild(hub, home, "lock", dangling, check=False)
    assert result.returncode == 1, result.stderr
    assert f"{releases['repo']}@{gone} (commit {gone}) not found on the Hub" in result.stderr
    assert f"(required by {ORG}/uses-gone@1)" in result.stderr
    assert not (dangling / "kernels.lock").exists()


def test_untrusted_publishers_and_registry_changes_without_restart(hub, built_kernel, tmp_path):
    home = tmp_path / "home"
    repo = "newcomers/img2gray"
    kbuild(hub, home, "publish", built_kernel, "--tag", "v1.0.0", "--repo-id", repo)
    app = project(tmp_path / "app", f'"{repo}" = 1')
    refused = kbuild(hub, home, "lock", app, check=False)
    assert refused.returncode == 1 and "not from a trusted publisher" in refused.stderr
    assert "kbuild hub org newcomers --trusted" in refused.stderr and "--trust newcomers" in refused.stderr
    assert not (app / "kernels.lock").exists()
    assert kernels_cli(hub, home, "lock", app).returncode != 0  # kernels refuses it too
    assert kbuild(hub, home, "lock", app, "--trust", "newcomers").returncode == 0
    (app / "kernels.lock").unlink()
    # The registry's administrator trusts the organisation; the running server applies it at once.
    run_kbuild("hub", "org", "newcomers", "--trusted", "--root", hub["root"])
    kbuild(hub, home, "lock", app)
    theirs = project(tmp_path / "theirs", f'"{repo}" = 1')
    assert kernels_cli(hub, home, "lock", theirs).returncode == 0
    assert (app / "kernels.lock").read_bytes() == (theirs / "kernels.lock").read_bytes()
    # So does a token added while it serves.
    token = run_kbuild("hub", "token", "--root", hub["root"], "--user", "carol").stdout.strip()
    assert kbuild(hub, home, "whoami", token=token).stdout.startswith("carol ")


def test_errors_users_hit(hub, releases, built_kernel, tmp_path):
    home = tmp_path / "home"
    unknown = kbuild(hub, home, "lock", project(tmp_path / "unknown", f'"{ORG}/no-such-kernel" = 1'), check=False)
    assert unknown.returncode == 4 and "repository not found" in unknown.stderr
    missing = kbuild(hub, home, "lock", project(tmp_path / "v7", f'"{releases["repo"]}" = 7'), check=False)
    assert missing.returncode == 1 and "version 7 of" in missing.stderr and "available versions: 1" in missing.stderr
    unsatisfied = kbuild(hub, home, "lock", project(tmp_path / "b", f'"{releases["repo"]}" = ">=2"'), check=False)
    assert unsatisfied.returncode == 1 and 'satisfies ">=2"' in unsatisfied.stderr
    assert "v1.0.0, v1.1.0" in unsatisfied.stderr
    bad = project(tmp_path / "bad", f'"{releases["repo"]}" = ">=1.2,<x"\n"no-slash" = 1')
    malformed = kbuild(hub, home, "lock", bad, check=False)
    assert malformed.returncode == 2
    assert f"{bad / 'pyproject.toml'}:5:" in malformed.stderr and ":6:1: error:" in malformed.stderr
    assert "(2 errors)" in malformed.stderr
    # Every dependency that cannot be locked, in one run.
    both = project(tmp_path / "both", f'"{ORG}/no-such-kernel" = 1\n"{releases["repo"]}" = 7')
    result = kbuild(hub, home, "lock", both, check=False)
    assert result.returncode == 1 and "2 kernel dependencies could not be locked" in result.stderr
    assert "repository not found" in result.stderr and "version 7 of" in result.stderr
    # kbuild's documented limit on pyproject.toml's shape (docs/lock.md, "Limits"), named with its place.
    deep = project(tmp_path / "deep", f'"{releases["repo"]}" = 1')
    (deep / "pyproject.toml").write_text((deep / "pyproject.toml").read_text() + "[tool.other]\nx = " +
                                         "[" * 65 + "]" * 65 + "\n")
    refused = kbuild(hub, home, "lock", deep, check=False)
    assert refused.returncode == 2 and "nested more than 64 deep" in refused.stderr
    assert f"{deep / 'pyproject.toml'}:7:69: error:" in refused.stderr

    # No network: exit 4 in seconds, the existing lock untouched, no temporary file left behind.
    app = project(tmp_path / "offline", f'"{releases["repo"]}" = 1')
    kbuild(hub, home, "lock", app)
    before = (app / "kernels.lock").read_bytes()
    project(app, f'"{releases["repo"]}" = "^1.0"')
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"
    offline = run_kbuild("lock", app, env=dict(env_for(hub, home), HF_ENDPOINT=closed), check=False, timeout=60)
    assert offline.returncode == 4 and "cannot reach" in offline.stderr
    assert (app / "kernels.lock").read_bytes() == before
    assert sorted(p.name for p in app.iterdir()) == ["kernels.lock", "pyproject.toml"]

    # A private repository needs a token that can see it.
    private = f"{ORG}/img2gray-private"
    kbuild(hub, home, "publish", built_kernel, "--tag", "v1.0.0", "--repo-id", private, "--private")
    secret = project(tmp_path / "secret", f'"{private}" = 1')
    anonymous = kbuild(hub, home, "lock", secret, token=None, check=False)
    assert anonymous.returncode == 4 and "repository not found" in anonymous.stderr and "token" in anonymous.stderr
    assert kbuild(hub, home, "lock", secret).returncode == 0


def test_download_refuses_a_variant_that_does_not_match_its_digest(hub, built_kernel, tmp_path):
    # A variant uploaded behind kbuild's back (huggingface_hub), with an __init__.py that is not the
    # one its metadata.json digests.
    home = tmp_path / "home"
    repo = f"{ORG}/img2gray-tampered"
    folder = tmp_path / "upload"
    shutil.copytree(built_kernel / "build", folder / "build")
    init = folder / "build" / CUDA_VARIANT / "__init__.py"
    init.write_text(init.read_text() + "\nimport os  # injected\n")
    script = ("import sys\nfrom huggingface_hub import HfApi\napi = HfApi()\n"
              "api.create_repo(sys.argv[1], repo_type='kernel')\n"
              "api.create_branch(sys.argv[1], branch='v1', repo_type='kernel')\n"
              "api.upload_folder(repo_id=sys.argv[1], folder_path=sys.argv[2], revision='v1', repo_type='kernel')\n")
    subprocess.run([PYTHON, "-c", script, repo, folder], env=env_for(hub, home), check=True, capture_output=True)
    app = project(tmp_path / "app", f'"{repo}" = 1')
    kbuild(hub, home, "lock", app)
    result = kbuild(hub, home, "download", app, "--python", PYTHON, check=False)
    assert result.returncode == 1
    assert f"build/{CUDA_VARIANT}/__init__.py does not match metadata.json's digest" in result.stderr
    snapshots = home / "hub" / "kernels--kbuild-community--img2gray-tampered" / "snapshots"
    assert not list(snapshots.glob(f"*/build/{CUDA_VARIANT}"))  # nothing of the variant is visible


def test_versions_and_info_say_what_is_published_and_what_loads(hub, releases, tmp_path):
    home = tmp_path / "home"
    report = refs(hub, home, releases["repo"])
    assert [v["version"] for v in report["versions"]] == [1]
    v1 = report["versions"][0]
    assert v1["commit"] == releases["v1.1.0"] and v1["loads"] == CUDA_VARIANT
    assert sorted(v1["variants"]) == [CPU_VARIANT, CUDA_VARIANT]
    assert [(r["tag"], r["commit"]) for r in v1["releases"]] == [("v1.0.0", releases["v1.0.0"]),
                                                                ("v1.1.0", releases["v1.1.0"])]
    rejected = {d["variant"]: d["reason"] for d in v1["decisions"] if not d["accepted"]}
    assert rejected == {CPU_VARIANT: "backend (cpu) does not match selected backend (cu130)"}
    text = kbuild(hub, home, "versions", releases["repo"], "--python", PYTHON).stdout
    assert f"v1  {releases['v1.1.0'][:12]}  2 variants  this machine loads {CUDA_VARIANT}" in text
    info = json.loads(kbuild(hub, home, "info", releases["repo"], "--revision", "v1.0.0", "--json", "--python",
                             PYTHON).stdout)
    assert info["commit"] == releases["v1.0.0"] and info["source"] == "tag v1.0.0" and info["loads"] == CUDA_VARIANT
    by_name = {v["variant"]: v for v in info["variants"]}
    assert by_name[CUDA_VARIANT]["metadata"]["backend"] == "cuda"
    assert by_name[CPU_VARIANT]["metadata"]["id"].startswith("_img2gray_cpu_")
    assert not by_name[CPU_VARIANT]["signed"] and by_name[CPU_VARIANT]["files"] >= 4
    missing = kbuild(hub, home, "info", releases["repo"], "--version", "3", check=False)
    assert missing.returncode != 0 and "version 3 of" in missing.stderr


def test_a_hub_that_accepts_but_never_answers_is_exit_4_within_30_seconds(tmp_path):
    import socket
    import time
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)  # connections are accepted by the kernel, never answered
    endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}"
    try:
        for extra, limit in (({}, 30), ({"KBUILD_HUB_TIMEOUT": "1"}, 6)):
            env = dict(os.environ, HF_ENDPOINT=endpoint, HF_HOME=str(tmp_path / "hf"), **extra)
            start = time.monotonic()
            result = run_kbuild("versions", f"{ORG}/img2gray", env=env, check=False, timeout=120)
            elapsed = time.monotonic() - start
            assert result.returncode == 4 and "did not answer within" in result.stderr, result.stderr
            assert elapsed < limit, elapsed
            assert "KBUILD_HUB_TIMEOUT" in result.stderr
    finally:
        silent.close()


def test_a_hub_answering_nonsense_is_reported_in_plain_words(tmp_path):
    import http.server
    import threading

    class Nonsense(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # valid JSON of the wrong shape for every request
            body = b"[1, 2]"
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Nonsense)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = dict(os.environ, HF_ENDPOINT=f"http://127.0.0.1:{server.server_port}", HF_HOME=str(tmp_path / "hf"))
        result = run_kbuild("versions", f"{ORG}/img2gray", env=env, check=False, timeout=60)
        assert result.returncode == 4, result.stderr
        assert "with something kbuild cannot read" in result.stderr and "json.exception" not in result.stderr
        assert "-v" in result.stderr
    finally:
        server.shutdown()


def test_a_consumer_with_a_complete_lock_and_cache_works_offline(hub, releases, tmp_path):
    """HF_HUB_OFFLINE=1 (or --offline): lock --check, download, info and versions answer from kernels.lock
    and the Hugging Face cache, without a request, and name what is missing when something is. Before,
    each of them asked the Hub and failed with exit 4 after its retries."""
    home = tmp_path / "home"
    app = project(tmp_path / "app", f'"{releases["repo"]}" = 1')
    kbuild(hub, home, "lock", app)
    kbuild(hub, home, "download", app, "--python", PYTHON)
    commit = releases["v1.1.0"]
    # No Hub at all now: an endpoint where nothing listens.
    offline = dict(HF_ENDPOINT="http://127.0.0.1:9", HF_HUB_OFFLINE="1")

    def run(*args, **extra):
        env = env_for(hub, home, **{**offline, **extra})
        started = time.monotonic()
        result = run_kbuild(*args, env=env, check=False)
        return result, time.monotonic() - started

    check, seconds = run("lock", app, "--check")
    assert check.returncode == 0 and seconds < 5, (seconds, check.stdout + check.stderr)
    download, _ = run("download", app, "--python", PYTHON, "--json")
    assert download.returncode == 0, download.stdout + download.stderr
    outcome = json.loads(download.stdout)
    assert outcome["offline"] is True and outcome["bytes_downloaded"] == 0
    assert [v["variant"] for v in outcome["variants"]] == [CUDA_VARIANT]
    info, _ = run("info", releases["repo"], "--revision", commit, "--python", PYTHON, "--json")
    assert info.returncode == 0, info.stdout + info.stderr
    assert CUDA_VARIANT in info.stdout
    # versions needs branches and tags, which a download by commit does not record: exit 4, saying so.
    versions, _ = run("versions", releases["repo"], "--python", PYTHON)
    assert versions.returncode == 4 and "knows no branch or tag" in versions.stderr, versions.stderr
    # --offline is the same as HF_HUB_OFFLINE.
    flag = run_kbuild("lock", app, "--check", "--offline", env=env_for(hub, home, HF_ENDPOINT="http://127.0.0.1:9"),
                      check=False)
    assert flag.returncode == 0, flag.stdout + flag.stderr

    # A damaged cached file: offline, exit 4 naming it; online, replaced and reported.
    cache = home / "hub" / f"kernels--{releases['repo'].replace('/', '--')}"
    library = next((cache / "snapshots" / commit / "build" / CUDA_VARIANT).glob("*.so"))
    blob = library.resolve()
    blob.write_bytes(b"damaged")
    damaged, _ = run("download", app, "--python", PYTHON)
    assert damaged.returncode == 4, damaged.stdout + damaged.stderr
    assert f"build/{CUDA_VARIANT}/{library.name}" in damaged.stderr and "damaged" in damaged.stderr
    repaired = kbuild(hub, home, "download", app, "--python", PYTHON)
    assert "was damaged" in repaired.stderr and "downloaded again" in repaired.stderr, repaired.stderr
    assert "1 damaged cached file(s) replaced" in repaired.stdout, repaired.stdout
    # A dependency the lock lacks cannot be resolved offline: exit 4, naming it.
    (app / "pyproject.toml").write_text((app / "pyproject.toml").read_text() + f'"{ORG}/not-locked" = 1\n')
    missing, _ = run("lock", app, "--check")
    assert missing.returncode == 4, missing.stdout + missing.stderr
    assert f"{ORG}/not-locked" in missing.stderr and "HF_HUB_OFFLINE" in missing.stderr, missing.stderr
