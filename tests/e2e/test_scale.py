"""The compile cache's remote tier against a real HTTP cache server (nginx from Debian, with WebDAV's
PUT, configured here): "machines" are separate kernel checkouts with separate local caches that share
one server. docs/scale.md has the picture and the figures these runs print."""

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import PYTHON, build_args, copy_kernel, empty_compile_cache, free_port, run_kbuild, running_nginx
from test_matrix import MATRIX
from test_publish import ORG, hub, hub_env  # noqa: F401 (hub is a fixture)

pytestmark = pytest.mark.slow  # they compile kernels (pytest.ini)

CPU_VARIANT = "torch211-cxx11-cpu-x86_64-linux"
CUDA_VARIANT = "torch211-cxx11-cu130-x86_64-linux"

NGINX_CONF = """\
{user}
worker_processes 1;
daemon off;
pid {root}/nginx.pid;
error_log {root}/error.log;
events {{ worker_connections 64; }}
http {{
  access_log {root}/access.log;
  client_body_temp_path {root}/body;
  proxy_temp_path {root}/proxy;
  fastcgi_temp_path {root}/fastcgi;
  uwsgi_temp_path {root}/uwsgi;
  scgi_temp_path {root}/scgi;
  server {{
    listen 127.0.0.1:{port};
    location /kbuild/ {{
      alias {root}/data/;
      dav_methods PUT;
      create_full_put_path on;
      client_max_body_size 2g;
    }}
  }}
}}
"""


@pytest.fixture
def cache_server(tmp_path):
    root = tmp_path / "cache-server"
    (root / "data").mkdir(parents=True)
    port = free_port()
    with running_nginx(root, NGINX_CONF, port):
        yield f"http://127.0.0.1:{port}/kbuild", root / "data"


def machine(tmp_path, name, url, mode="read-write"):
    """A checkout of img2gray with its own empty local cache, pointed at the shared server."""
    kernel = copy_kernel(tmp_path / name / "img2gray")
    env = dict(os.environ, KBUILD_CACHE=str(empty_compile_cache(tmp_path / name / "cache")),
               KBUILD_REMOTE_CACHE=url, KBUILD_REMOTE_CACHE_MODE=mode)
    return kernel, env


def stats(env):
    text = run_kbuild("cache", "stats", env=env).stdout
    return {key: int(value) for key, value in re.findall(r"^(remote \w+|damaged entries)\s+(\d+)", text, re.M)}


def server_files(data):
    return sorted(p.relative_to(data).as_posix() for p in data.rglob("*") if p.is_file())


def test_a_second_machine_compiles_nothing_the_first_compiled(tmp_path, cache_server):
    url, data = cache_server
    first, first_env = machine(tmp_path, "runner-1", url)
    started = time.monotonic()
    cold = run_kbuild(*build_args(first), env=first_env)
    cold_seconds = time.monotonic() - started
    assert " 0 from cache" in cold.stdout, cold.stdout
    stored = server_files(data)
    assert any(p.startswith("objects/") for p in stored) and any(p.startswith("manifests/") for p in stored)
    assert stats(first_env)["remote stores"] >= 8  # 7 objects and 2 libraries of two variants

    second, second_env = machine(tmp_path, "runner-2", url)
    started = time.monotonic()
    warm = run_kbuild(*build_args(second), env=second_env)
    warm_seconds = time.monotonic() - started
    ran, cached = map(int, re.search(r"\((\d+) jobs? run, (\d+) from cache\)", warm.stdout).groups())
    # Only GEN (registration.h) and the two installs ran: every compile and link was a remote hit.
    assert ran == 3 and cached == 9, warm.stdout
    assert stats(second_env)["remote hits"] == cached
    for variant in (CPU_VARIANT, CUDA_VARIANT):
        for library in (first / "build" / variant).glob("*.so"):
            assert (second / "build" / variant / library.name).read_bytes() == library.read_bytes()
    print(f"\nremote cache: cold build {cold_seconds:.1f} s, second runner {warm_seconds:.1f} s "
          f"({cold_seconds / warm_seconds:.1f}x)")


def test_damaged_remote_entries_are_misses_and_read_only_runners_never_write(tmp_path, cache_server):
    url, data = cache_server
    first, first_env = machine(tmp_path, "runner-1", url)
    run_kbuild(*build_args(first, "--backend", "cpu"), env=first_env)
    objects = sorted(p for p in data.rglob("*") if p.is_file() and "objects" in p.parts)
    victim = objects[0]
    damaged = bytearray(victim.read_bytes())
    damaged[-1] ^= 1
    victim.write_bytes(bytes(damaged))
    before = {p: p.read_bytes() for p in data.rglob("*") if p.is_file()}

    reader, reader_env = machine(tmp_path, "untrusted", url, mode="read-only")
    result = run_kbuild(*build_args(reader, "--backend", "cpu"), env=reader_env)
    ran, cached = map(int, re.search(r"\((\d+) jobs? run, (\d+) from cache\)", result.stdout).groups())
    assert ran == 3 and cached == 3, result.stdout  # GEN, INSTALL and the job whose object was damaged
    assert stats(reader_env)["damaged entries"] >= 1
    assert {p: p.read_bytes() for p in data.rglob("*") if p.is_file()} == before  # read-only: nothing written
    for library in (first / "build" / CPU_VARIANT).glob("*.so"):
        assert (reader / "build" / CPU_VARIANT / library.name).read_bytes() == library.read_bytes()


def test_an_unreachable_cache_server_is_a_warning_not_a_failure(tmp_path):
    kernel, env = machine(tmp_path, "offline", f"http://127.0.0.1:{free_port()}/kbuild")
    env["KBUILD_REMOTE_CACHE_TIMEOUT"] = "2"
    result = run_kbuild(*build_args(kernel, "--backend", "cpu"), env=env)
    assert "remote compile cache" in result.stderr and "building without it" in result.stderr, result.stderr
    assert result.stderr.count("remote compile cache") == 1
    assert stats(env)["remote errors"] == 1
    bad = run_kbuild(*build_args(kernel, "--backend", "cpu"), env=dict(env, KBUILD_REMOTE_CACHE="ftp://x"),
                     check=False)
    assert bad.returncode == 2 and "KBUILD_REMOTE_CACHE" in bad.stderr


def put_paths(access_log: Path, after_line: int = 0):
    """The paths the cache server stored (PUT answered 2xx), from its access log."""
    paths = set()
    for line in access_log.read_text().splitlines()[after_line:]:
        match = re.search(r'"PUT (\S+) HTTP/[\d.]+" (\d{3})', line)
        if match and match.group(2).startswith("2"):
            paths.add(match.group(1))
    return paths


def signature_bundle_over(data: bytes) -> str:
    """A Sigstore bundle (v0.3 shape) whose message digest covers `data`: what CI's keyless `sigstore
    sign` leaves next to metadata.json (its certificate and log entry cannot be made offline)."""
    digest = base64.b64encode(hashlib.sha256(data).digest()).decode()
    return json.dumps({"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
                       "verificationMaterial": {"certificate": {"rawBytes": "MIIB"}, "tlogEntries": []},
                       "messageSignature": {"messageDigest": {"algorithm": "SHA2_256", "digest": digest},
                                            "signature": "MEUCIQ"}})


def test_three_runners_share_one_cache_server_and_one_release(tmp_path, cache_server, hub):  # noqa: F811
    """The matrix (6 variants) fanned out over three runners, two variants each, with separate local
    caches and one nginx cache server; their artifacts gathered with --from and published in one
    commit to `kbuild hub serve`."""
    url, data = cache_server
    access_log = data.parent / "access.log"
    groups = [MATRIX[0:2], MATRIX[2:4], MATRIX[4:6]]
    artifacts = tmp_path / "artifacts"
    stored_by = []
    for index, group in enumerate(groups):
        log_lines = len(access_log.read_text().splitlines()) if access_log.exists() else 0
        kernel, env = machine(tmp_path, f"runner-{index + 1}", url)
        selection = [arg for name in group for arg in ("--variant", name)]
        started = time.monotonic()
        built = run_kbuild(*build_args(kernel, "--locked", *selection), env=env, timeout=1800)
        run_kbuild("check", kernel, env=env)
        print(f"\nrunner-{index + 1}: {', '.join(group)} in {time.monotonic() - started:.1f} s; "
              f"{built.stdout.strip().splitlines()[-1]}; remote {stats(env)}")
        for name in group:  # upload-artifact, one per variant
            shutil.copytree(kernel / "build" / name, artifacts / f"runner-{index + 1}" / name)
        stored_by.append(put_paths(access_log, log_lines))
        print(f"runner-{index + 1} stored {len(stored_by[-1])} entries")
    # Every compile and link result a runner computes is stored; the later runners never store what
    # the first stored, so they compiled nothing it had compiled (its objects came from the server).
    assert stored_by[0], "the first runner stored nothing"
    assert not (stored_by[1] | stored_by[2]) & stored_by[0]
    assert stats(env)["remote hits"] > 0  # the third runner's objects shared with the others

    # CI signs each variant's metadata.json; the bundle travels with its variant.
    signed = artifacts / "runner-1" / MATRIX[0]
    (signed / "metadata.json.sigstore").write_text(signature_bundle_over((signed / "metadata.json").read_bytes()))

    publisher = copy_kernel(tmp_path / "publisher" / "img2gray")
    repo_id = f"{ORG}/img2gray-fanout"
    partial = run_kbuild("publish", publisher, "--from", artifacts / "runner-1", "--from", artifacts / "runner-2",
                         "--require-all", "--tag", "v1.0.0", "--repo-id", repo_id, env=hub_env(hub, tmp_path),
                         check=False)
    assert partial.returncode == 2, partial.stdout + partial.stderr
    assert f"2 variants of the matrix are missing: {MATRIX[4]}, {MATRIX[5]}" in partial.stderr
    sources = [arg for index in (1, 2, 3) for arg in ("--from", artifacts / f"runner-{index}")]
    outcome = json.loads(run_kbuild("publish", publisher, *sources, "--require-all", "--tag", "v1.0.0", "--repo-id",
                                    repo_id, "--json", env=hub_env(hub, tmp_path)).stdout)
    assert outcome["variants"] == MATRIX and outcome["missing"] == [] and outcome["signed"] == [MATRIX[0]]
    assert len(outcome["plan"]) == 2 and outcome["status"] == "uploaded"

    script = r"""
import json, sys
from pathlib import Path
from huggingface_hub import HfApi, snapshot_download
from kernels.verify import VerificationResult, verify_variant
api = HfApi()
files = api.list_repo_files(sys.argv[1], repo_type="kernel", revision="v1")
commits = api.list_repo_commits(sys.argv[1], repo_type="kernel", revision="v1")
variants = sorted({f.split("/")[1] for f in files if f.startswith("build/")})
root = Path(snapshot_download(sys.argv[1], repo_type="kernel", revision="v1.0.0",
                              allow_patterns=[f"build/{sys.argv[2]}/*"]))
verdict = verify_variant(root / "build" / sys.argv[2])
print(json.dumps({"variants": variants, "commits": len(commits), "verdict": type(verdict).__name__,
                  "bundle": f"build/{sys.argv[2]}/metadata.json.sigstore" in files}))
"""
    seen = subprocess.run([PYTHON, "-c", script, repo_id, MATRIX[0]], env=hub_env(hub, tmp_path),
                          capture_output=True, text=True)
    assert seen.returncode == 0, seen.stdout + seen.stderr
    hub_view = json.loads(seen.stdout.strip().splitlines()[-1])
    assert hub_view["variants"] == MATRIX and hub_view["bundle"]
    assert hub_view["commits"] == 2  # the repository's first commit, then all six variants in one
    # The kernels package finds the bundle where kbuild put it (it is not "missing"); it rejects this
    # one because its certificate is not a real Sigstore certificate (keyless signing cannot run here).
    assert hub_view["verdict"] == "SignatureBundleInvalid", hub_view
