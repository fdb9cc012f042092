"""Shared fixtures of the end-to-end tests: the kbuild binary, fresh copies of kernels/img2gray
(as git repositories, so ops ids are deterministic), and one session-wide build of it."""

import contextlib
import os
import re
import signal
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KBUILD = Path(os.environ.get("KBUILD_BIN", ROOT / ".build" / "tool" / "kbuild"))
PYTHON = sys.executable
IMG2GRAY = ROOT / "kernels" / "img2gray"
USER_CACHE = Path(os.environ.get("KBUILD_CACHE", Path.home() / ".cache" / "kbuild"))


def run_kbuild(*args, cwd=None, check=True, env=None, timeout=900):
    """Runs kbuild with the test environment's Python as the Torch source."""
    result = subprocess.run([str(KBUILD), *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"kbuild {' '.join(map(str, args))} failed ({result.returncode}):\n"
                             f"{result.stdout}\n{result.stderr}")
    return result


@contextlib.contextmanager
def hub_server(root: Path, *extra):
    """`kbuild hub serve --root ROOT` on a free loopback port, stopped (SIGTERM) afterwards; yields its URL."""
    server = subprocess.Popen([str(KBUILD), "hub", "serve", "--root", str(root), "--port", "0", *map(str, extra)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    match = re.search(r"at (http://\S+)", line)
    assert match, line + server.stderr.read()
    try:
        yield match.group(1)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=10)


def build_args(kernel_dir, *extra):
    return ["build", kernel_dir, "--python", PYTHON, *extra]


# Commits made by the tests carry a fixed date, so that copies of one kernel committed in different
# seconds are the same commit (as the checkouts of one commit on several CI runners are).
FIXED_GIT_DATE = "2026-01-01T00:00:00+0000"


def git(*args, cwd):
    env = dict(os.environ, GIT_AUTHOR_DATE=FIXED_GIT_DATE, GIT_COMMITTER_DATE=FIXED_GIT_DATE)
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env).stdout.strip()


def copy_kernel(destination: Path, source: Path = IMG2GRAY, init_git: bool = True) -> Path:
    shutil.copytree(source, destination, ignore=shutil.ignore_patterns("build", ".kbuild", "__pycache__"))
    if init_git:
        git("init", "-q", cwd=destination)
        git("-c", "user.name=t", "-c", "user.email=t@example.com", "add", "-A", cwd=destination)
        git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "kernel", cwd=destination)
    return destination


def write_kernel_files(root: Path, files: dict) -> Path:
    """Writes a kernel of the tests' own ({relative path: text}, dedented) as a git repository."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    git("init", "-q", cwd=root)
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "add", "-A", cwd=root)
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "kernel", cwd=root)
    return root


def empty_compile_cache(directory: Path) -> Path:
    """A KBUILD_CACHE with no compiled objects that shares the user's fetched toolchains and
    downloads and the test environments of `kbuild test` (gigabytes) by symlink."""
    directory.mkdir(parents=True, exist_ok=True)
    for shared in ("toolchains", "downloads", "test-envs"):
        (USER_CACHE / shared).mkdir(parents=True, exist_ok=True)
        (directory / shared).symlink_to(USER_CACHE / shared)
    return directory


@pytest.fixture(scope="session", autouse=True)
def private_compile_cache(tmp_path_factory):
    """Every kbuild the tests run uses a compile cache of this session's own, so that results neither
    depend on nor add to the user's cache."""
    cache = empty_compile_cache(tmp_path_factory.mktemp("kbuild-cache"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KBUILD_CACHE", str(cache))
        yield cache


@pytest.fixture
def kernel_copy(tmp_path):
    return copy_kernel(tmp_path / "img2gray")


@pytest.fixture(scope="session")
def built_kernel(tmp_path_factory):
    """kernels/img2gray copied into a git repository and built once (both variants)."""
    kernel = copy_kernel(tmp_path_factory.mktemp("built") / "img2gray")
    result = run_kbuild(*build_args(kernel))
    assert "kbuild: built" in result.stdout
    return kernel


C_FAMILY = (".h", ".hh", ".hpp", ".hxx", ".cuh", ".inc", ".inl", ".ipp", ".tcc", ".c", ".cc", ".cpp", ".cxx", ".cu")


def source_id(kernel: Path) -> str:
    """The unique part of the ops id as docs/build-toml.md defines it, computed independently of kbuild:
    "src" + 8 hex of SHA-256 over the build inputs (build.toml, files listed in src, C-family files of
    include directories, the Python package), each as its relative path, NUL, raw SHA-256 of the bytes
    (of build.toml: of its values but [general.hub], as sorted compact JSON)."""
    import hashlib
    import json
    import tomllib
    config = tomllib.loads((kernel / "build.toml").read_text())
    listed, prefixes = {"build.toml"}, []
    for section in [config.get("torch", {}), *config.get("kernel", {}).values()]:
        listed.update(os.path.normpath(src) for src in section.get("src", []))
        prefixes += ["" if os.path.normpath(d) == "." else os.path.normpath(d) + "/" for d in section.get("include", [])]
    package = "torch-ext/" + config["general"]["name"].replace("-", "_") + "/"
    files = []
    for path in kernel.rglob("*"):
        rel = path.relative_to(kernel).as_posix()
        parts = rel.split("/")
        if not path.is_file() or parts[0] == "build" or any(p.startswith(".") or p == "__pycache__" for p in parts):
            continue
        if rel.endswith(".pyc"):
            continue
        if rel in listed or rel.startswith(package) or any(rel.startswith(p) and rel.endswith(C_FAMILY) for p in prefixes):
            files.append(rel)
    digest = hashlib.sha256(b"kbuild-source-id-v3\n")
    for rel in sorted(files):
        content = (kernel / rel).read_bytes()
        if rel == "build.toml":  # its values without [general.hub], as sorted compact JSON
            values = tomllib.loads(content.decode())
            values.get("general", {}).pop("hub", None)
            content = b"kbuild-build-toml 1\n" + json.dumps(values, sort_keys=True, separators=(",", ":"),
                                                            ensure_ascii=False).encode()
        digest.update(rel.encode() + b"\0" + hashlib.sha256(content).digest())
    return "src" + digest.hexdigest()[:8]


def variant_dirs(kernel: Path):
    return sorted(p for p in (kernel / "build").iterdir() if p.is_dir())


def free_port() -> int:
    """A loopback TCP port nobody listens on now."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_nginx(root: Path, conf_template: str, port: int, **fields):
    """Debian's nginx (nginx-light, installed by scripts/bootstrap) run from `root` with the
    configuration `conf_template` formatted with root, port, user and `fields`; stopped on exit."""
    import socket
    import time

    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(nginx).exists():
        pytest.fail("nginx is missing: scripts/bootstrap installs nginx-light")
    root.mkdir(parents=True, exist_ok=True)
    conf = root / "nginx.conf"
    conf.write_text(conf_template.format(root=root, port=port, user="user root;" if os.geteuid() == 0 else "",
                                         **fields))
    server = subprocess.Popen([nginx, "-p", str(root), "-e", str(root / "error.log"), "-c", str(conf)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"nginx did not start: {server.stderr.read().decode()}")
            time.sleep(0.1)
    try:
        yield server
    finally:
        server.terminate()
        server.wait(timeout=20)
