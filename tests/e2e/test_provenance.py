"""What a pin proves (docs/matrix.md, "What a pin proves"): a kbuild.lock of a kernel's repository may
point a pin anywhere, so before a pinned toolchain is assembled kbuild checks each .deb against Debian's
signed indices (real InRelease files, real gpgv, the real Debian archive keyring) and each wheel
against PyPI's Simple API. Each test forges one thing in the bundled kernel's lock and builds with no
assembled toolchain, so the check runs; the downloads stay shared, so nothing big is fetched."""

import contextlib
import hashlib
import http.server
import json
import os
import re
import threading
from pathlib import Path

import pytest

from conftest import USER_CACHE, build_args, run_kbuild

pytestmark = pytest.mark.slow

CPU = "torch211-cxx11-cpu-x86_64-linux"
CU132 = "torch211-cxx11-cu132-x86_64-linux"


@pytest.fixture
def no_toolchains(tmp_path):
    """An environment whose KBUILD_CACHE has no assembled toolchain but the user's downloads."""
    cache = tmp_path / "cache"
    cache.mkdir()
    (USER_CACHE / "downloads").mkdir(parents=True, exist_ok=True)
    (cache / "downloads").symlink_to(USER_CACHE / "downloads")
    return dict(os.environ, KBUILD_CACHE=str(cache))


def forge(kernel, entry, package, **fields):
    """Changes `fields` of one pin in the kernel's kbuild.lock; the pin as it was."""
    path = kernel / "kbuild.lock"
    lock = json.loads(path.read_text())
    pin = next(p for p in lock["toolchains"][entry] if p["package"] == package)
    original = dict(pin)
    pin.update(fields)
    path.write_text(json.dumps(lock, indent=2) + "\n")
    return original


def flipped(sha):
    return ("0" if sha[0] != "0" else "1") + sha[1:]


def build_with_forged_sha(kernel, env, variant, entry, package):
    """Builds `variant` --locked after changing the sha256 of one pin: (the pin as it was, the forged
    sha256, the finished kbuild)."""
    pin = forge(kernel, entry, package)
    forged = flipped(pin["sha256"])
    forge(kernel, entry, package, sha256=forged)
    return pin, forged, run_kbuild(*build_args(kernel, "--variant", variant, "--locked"), env=env, check=False)


def host_toolchains(env):
    return sorted(p.name for p in Path(env["KBUILD_CACHE"], "toolchains").glob("gcc-12.2-*"))


def test_a_debian_package_debian_did_not_publish_is_refused_before_it_is_fetched(kernel_copy, no_toolchains):
    """The attack the check exists for: a lock whose libc6 pin names a crafted file by its own sha256,
    served by a mirror (KBUILD_DEBIAN_MIRROR) that has it. Without the check, the sha256 matches and
    the build runs it."""
    crafted = b"!<arch>\ndebian-binary   0           0     0     100644  4         `\n2.0\n"
    libc = forge(kernel_copy, "gcc-12.2", "libc6")
    forged = hashlib.sha256(crafted).hexdigest()
    forge(kernel_copy, "gcc-12.2", "libc6", sha256=forged)
    Recording.answers, Recording.paths = {f"/debs/{libc['file']}": crafted}, []
    with serving(Recording) as base:
        env = dict(no_toolchains, KBUILD_DEBIAN_MIRROR=base + "/debs/{file}")
        result = run_kbuild(*build_args(kernel_copy, "--variant", CPU, "--locked"), env=env, check=False)
    assert result.returncode == 3, result.stdout + result.stderr
    assert (f"kbuild.lock pins 1 Debian package that the signed indices of bookworm, bookworm-updates, "
            f"bookworm-security do not list with that sha256: {libc['file']} (sha256 {forged[:12]}…)"
            in result.stderr), result.stderr
    assert "hint: Debian did not publish these files" in result.stderr
    assert Recording.paths == []  # nothing was fetched from the mirror
    assert not (USER_CACHE / "downloads" / forged).exists()
    assert host_toolchains(no_toolchains) == []
    assert not (kernel_copy / "build").exists()


def test_a_debian_package_from_another_origin_is_refused_unless_the_user_allows_it(kernel_copy, no_toolchains):
    gcc = forge(kernel_copy, "gcc-12.2", "gcc-12")
    url = "https://debian.invalid/debian/pool/main/g/gcc-12/" + gcc["file"]
    forge(kernel_copy, "gcc-12.2", "gcc-12", url=url, sha256=flipped(gcc["sha256"]))
    args = build_args(kernel_copy, "--variant", CPU, "--locked")
    result = run_kbuild(*args, env=no_toolchains, check=False)
    assert result.returncode == 3, result.stdout + result.stderr
    assert f"kbuild.lock pins {gcc['file']} from {url}, which is not Debian's archive" in result.stderr
    assert "--allow-toolchain-origin https://debian.invalid/" in result.stderr
    # Allowed, the pin is used as it is: kbuild goes on to fetch it (and this origin does not exist).
    allowed = run_kbuild(*args, "--allow-toolchain-origin", "https://debian.invalid/debian", env=no_toolchains,
                         check=False)
    assert allowed.returncode != 0
    assert "not Debian's archive" not in allowed.stderr
    assert "debian.invalid" in allowed.stderr, allowed.stderr
    # ... and so is it through the user config.
    config = kernel_copy.parent / "xdg"
    (config / "kbuild").mkdir(parents=True)
    (config / "kbuild" / "config.toml").write_text('toolchain-origins = ["https://debian.invalid/debian/"]\n')
    configured = run_kbuild(*args, env=dict(no_toolchains, XDG_CONFIG_HOME=str(config)), check=False)
    assert "not Debian's archive" not in configured.stderr and "debian.invalid" in configured.stderr


def test_indices_signed_by_a_key_that_is_not_debians_are_refused(kernel_copy, no_toolchains):
    # Debian's keys that no longer sign anything: a real keyring that is not the archive's.
    env = dict(no_toolchains, KBUILD_DEBIAN_KEYRING="/usr/share/keyrings/debian-archive-removed-keys.gpg")
    result = run_kbuild(*build_args(kernel_copy, "--variant", CPU, "--locked"), env=env, check=False)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "is not signed by a key of /usr/share/keyrings/debian-archive-removed-keys.gpg" in result.stderr
    assert "hint: the index was tampered with, or the keyring is not Debian's" in result.stderr
    assert host_toolchains(no_toolchains) == []
    missing = dict(no_toolchains, KBUILD_DEBIAN_KEYRING=str(kernel_copy / "no-keyring.gpg"))
    result = run_kbuild(*build_args(kernel_copy, "--variant", CPU, "--locked"), env=missing, check=False)
    assert result.returncode == 3 and "no-keyring.gpg, which is no file" in result.stderr


def test_a_wheel_pypi_did_not_publish_is_refused_before_it_is_fetched(kernel_copy, no_toolchains):
    nvcc, forged, result = build_with_forged_sha(kernel_copy, no_toolchains, CU132, "cuda-13.2", "nvidia-cuda-nvcc")
    assert result.returncode == 3, result.stdout + result.stderr
    assert (f"kbuild.lock pins {nvcc['file']} with sha256 {forged[:12]}…, which https://pypi.org/simple does not "
            f"list for nvidia-cuda-nvcc") in result.stderr, result.stderr
    assert not (USER_CACHE / "downloads" / forged).exists()


class Recording(http.server.BaseHTTPRequestHandler):
    """Serves `answers` (path -> bytes) and records every path asked for."""
    answers = {}
    paths = []

    def do_GET(self):
        self.paths.append(self.path)
        body = self.answers.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.end_headers()
        self.wfile.write(body or b"")

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serving(handler):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()


def test_a_download_that_is_not_the_pinned_file_is_refused_even_when_the_index_vouches_for_it(
        kernel_copy, no_toolchains):
    nvcc = forge(kernel_copy, "cuda-13.2", "nvidia-cuda-nvcc")
    forged = flipped(nvcc["sha256"])
    forge(kernel_copy, "cuda-13.2", "nvidia-cuda-nvcc", sha256=forged)
    # A PEP 691 index that vouches for the forged sha256.
    Recording.answers, Recording.paths = {"/simple/nvidia-cuda-nvcc/": json.dumps(
        {"meta": {"api-version": "1.1"}, "files": [{"filename": nvcc["file"], "hashes": {"sha256": forged}}]}
    ).encode()}, []
    with serving(Recording) as base:
        env = dict(no_toolchains, KBUILD_PYPI_SIMPLE=base + "/simple")
        result = run_kbuild(*build_args(kernel_copy, "--variant", CU132, "--locked"), env=env, check=False)
    assert Recording.paths == ["/simple/nvidia-cuda-nvcc/"]
    assert result.returncode == 3, result.stdout + result.stderr
    assert (f"sha256 mismatch for {nvcc['file']}: got {nvcc['sha256']}, kbuild.lock pins {forged}"
            in result.stderr), result.stderr
    assert not (USER_CACHE / "downloads" / forged).exists()
    assert not (kernel_copy / "build").exists()


def test_toolchains_verify_audits_every_pin_of_a_lock_without_downloading_toolchains(kernel_copy, no_toolchains):
    result = run_kbuild("toolchains", "verify", kernel_copy, env=no_toolchains)
    lines = dict(re.findall(r"^  (\S+) +\d+ pins?: (.*)$", result.stdout, re.M))
    assert lines == {"cuda-13.0": "listed with these sha256 by PyPI", "cuda-13.2": "listed with these sha256 by PyPI",
                     "gcc-12.2": "listed with these sha256 by Debian's signed indices",
                     "torch-2.11": "listed with these sha256 by PyPI",
                     "torch-2.15": "listed with these sha256 by PyPI"}, result.stdout
    assert "is what upstream published" in result.stdout
    libc = forge(kernel_copy, "gcc-12.2", "libc6")
    forge(kernel_copy, "gcc-12.2", "libc6", sha256=flipped(libc["sha256"]))
    torch = forge(kernel_copy, "torch-2.15", "torch")
    forge(kernel_copy, "torch-2.15", "torch", sha256=flipped(torch["sha256"]))
    result = run_kbuild("toolchains", "verify", kernel_copy, env=no_toolchains, check=False)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "gcc-12.2 (24 pins): kbuild.lock pins 1 Debian package" in result.stderr
    assert f"torch-2.15 (1 pin): https://pypi.org/simple does not list {torch['file']}" in result.stderr
    assert "torch-2.11" in result.stdout and "is what upstream published" not in result.stdout
    assert not list(Path(no_toolchains["KBUILD_CACHE"]).glob("toolchains/*"))
