"""kbuild's release wheel (issue 43): scripts/wheel builds the sdist, then from it a static wheel for
glibc 2.28 (zig, libraries from tool/wheel/deps.toml). The wheel is small, needs nothing but glibc
2.28, installs from a PEP 503 index with pip, uv and pipx, and runs the author's loop inside a Debian 11
root (glibc 2.31, its own Python 3.9 and pip: the oldest userland this machine can make)."""

import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import textwrap
import threading
import time
import zipfile
from pathlib import Path

import pytest

from conftest import PYTHON, ROOT

pytestmark = [pytest.mark.slow, pytest.mark.heavy]  # builds the libraries once, then kbuild (minutes)

BUILDER = os.environ.get("KBUILD_WHEEL_PYTHON", "python3")
VERSION = re.search(r"project\(kbuild VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text()).group(1)
GLIBC_LIBRARIES = re.compile(r"^(libc|libm|libdl|librt|libpthread|libresolv|libutil|ld-linux-x86-64)\.so")


@pytest.fixture(scope="session")
def dist(tmp_path_factory):
    """scripts/wheel's wheel and sdist; KBUILD_TEST_WHEEL_DIST names a directory that already holds
    both (to rerun one test without rebuilding; the checks of the build's own output are then skipped)."""
    given = os.environ.get("KBUILD_TEST_WHEEL_DIST")
    if given:
        wheel, = Path(given).glob("kbuild-*-manylinux_*.whl")
        sdist, = Path(given).glob("kbuild-*.tar.gz")
        return {"wheel": wheel, "sdist": sdist, "dir": Path(given), "log": ""}
    out = tmp_path_factory.mktemp("dist")
    result = subprocess.run([str(ROOT / "scripts" / "wheel"), str(out)], capture_output=True, text=True,
                            env=dict(os.environ, KBUILD_WHEEL_PYTHON=BUILDER), timeout=3600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    wheel = Path(result.stdout.strip().splitlines()[-1])
    assert wheel.is_file(), result.stdout
    # Progress: one line per step, and where the build's output went.
    assert re.search(r"wheel: building the sdist \(log: \S+\)", result.stderr), result.stderr
    assert re.search(r"wheel: (building kbuild from kbuild-\S+\.tar\.gz \(log: \S+\)|kbuild built from this sdist "
                     r"before: \S+ \(sha256 checked\))", result.stderr), result.stderr
    sdists = list(out.glob("kbuild-*.tar.gz"))
    assert len(sdists) == 1, sorted(out.iterdir())
    return {"wheel": wheel, "sdist": sdists[0], "dir": out, "log": result.stderr}


@pytest.fixture(scope="session")
def unpacked(dist, tmp_path_factory):
    directory = tmp_path_factory.mktemp("unpacked")
    zipfile.ZipFile(dist["wheel"]).extractall(directory)
    return directory


def elf_files(directory):
    return [p for p in directory.rglob("*") if p.is_file() and p.read_bytes()[:4] == b"\x7fELF"]


def test_the_wheel_is_manylinux_2_28_and_every_elf_needs_at_most_glibc_2_28(dist, unpacked):
    assert dist["wheel"].name == f"kbuild-{VERSION}-py3-none-manylinux_2_28_x86_64.whl", dist["wheel"].name
    elves = elf_files(unpacked)
    assert [p.name for p in elves] == ["kbuild"], elves  # one static executable, no bundled library
    for elf in elves:
        symbols = subprocess.run(["objdump", "-T", elf], capture_output=True, text=True, check=True).stdout
        glibc = {int(minor) for minor in re.findall(r"GLIBC_2\.(\d+)", symbols)}
        assert glibc and max(glibc) <= 28, sorted(glibc)
        # The C++ runtime is linked in: no GLIBCXX or CXXABI version from the system's libstdc++.
        assert not re.search(r"GLIBCXX_|CXXABI_", symbols)
        dynamic = subprocess.run(["readelf", "-d", elf], capture_output=True, text=True, check=True).stdout
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^]]+)\]", dynamic)
        assert needed and all(GLIBC_LIBRARIES.match(name) for name in needed), needed
    # auditwheel, the PyPA tool PyPI's manylinux rules come from, agrees.
    show = subprocess.run([Path(PYTHON).parent / "auditwheel", "show", dist["wheel"]], capture_output=True,
                          text=True)
    assert show.returncode == 0, show.stdout + show.stderr
    flat = " ".join(show.stdout.split())
    assert 'consistent with the following platform tag: "manylinux_2_28_x86_64"' in flat, show.stdout


def test_the_wheel_is_small_and_holds_kbuild_alone(dist, unpacked):
    size = dist["wheel"].stat().st_size
    assert size <= 15 * 1024 * 1024, f"{size / 2**20:.1f} MiB"
    files = sorted(str(p.relative_to(unpacked)) for p in unpacked.rglob("*") if p.is_file())
    assert [f for f in files if ".dist-info/" not in f] == [f"kbuild-{VERSION}.data/scripts/kbuild"], files
    dist_info = {Path(f).name for f in files if ".dist-info/" in f}
    assert {"WHEEL", "RECORD", "METADATA"} <= dist_info, dist_info
    assert "Tag: py3-none-manylinux_2_28_x86_64" in next(unpacked.rglob("WHEEL")).read_text()


def test_the_sdist_holds_what_building_the_wheel_reads(dist):
    import tarfile
    with tarfile.open(dist["sdist"]) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    for needed in ("CMakeLists.txt", "pyproject.toml", "LICENSE", "tool/main.cpp", "tool/wheel/deps.toml",
                   "tool/static_deps.cmake", "templates/CARD.md.in", "scripts/wheel-deps"):
        assert needed in names, needed
    assert not [n for n in names if n.startswith((".build/", "tests/", "kernels/"))], sorted(names)[:20]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def index(dist, tmp_path_factory):
    """The built distributions served as a PEP 503 simple index on loopback."""
    root = tmp_path_factory.mktemp("index")
    project = root / "simple" / "kbuild"
    project.mkdir(parents=True)
    links = []
    for path in (dist["wheel"], dist["sdist"]):
        shutil.copy(path, project / path.name)
        links.append(f'<a href="{path.name}">{path.name}</a><br>')
    (project / "index.html").write_text("<!DOCTYPE html><html><body>" + "".join(links) + "</body></html>")
    (root / "simple" / "index.html").write_text('<!DOCTYPE html><html><body><a href="kbuild/">kbuild</a></body></html>')
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             functools.partial(_QuietHandler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    server.shutdown()


def run_installed(kbuild, *args, **kwargs):
    return subprocess.run([str(kbuild), *args], capture_output=True, text=True, timeout=120, **kwargs)


def test_pip_uv_and_pipx_install_kbuild_from_an_index(index, tmp_path):
    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    tools = Path(PYTHON).parent
    env = dict(os.environ, PIP_FIND_LINKS="", PIP_CONFIG_FILE=os.devnull, UV_TOOL_DIR=str(tmp_path / "uv-tools"),
               UV_TOOL_BIN_DIR=str(tmp_path / "uv-bin"), UV_PYTHON=sys.executable, UV_NO_CONFIG="1",
               PIPX_HOME=str(tmp_path / "pipx"), PIPX_BIN_DIR=str(tmp_path / "pipx-bin"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    installs = {
        "pip": ([venv / "bin" / "pip", "install", "--index-url", index, "kbuild"], venv / "bin" / "kbuild"),
        "uv": ([tools / "uv", "tool", "install", "--index-url", index, "kbuild"], tmp_path / "uv-bin" / "kbuild"),
        "pipx": ([tools / "pipx", "install", "--python", sys.executable, "--index-url", index, "kbuild"],
                 tmp_path / "pipx-bin" / "kbuild"),
    }
    for installer, (argv, kbuild) in installs.items():
        start = time.monotonic()
        result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
        seconds = time.monotonic() - start
        assert result.returncode == 0, (installer, result.stdout + result.stderr)
        assert seconds < 60, (installer, seconds)
        version = run_installed(kbuild, "--version")
        assert version.returncode == 0 and f"kbuild {VERSION}" in version.stdout, (installer, version)
        assert f"(commit {head[:12]}" in version.stdout, version.stdout
        # The libraries are in the executable: --version names them, nothing is loaded from the system.
        assert "linked in" in version.stdout or "libcurl" in version.stdout, version.stdout
        assert "manylinux_2_28" in result.stdout + result.stderr or installer != "pip", result.stdout


# --- Debian 11 ------------------------------------------------------------------------------------
# The root is made once per machine with debootstrap from Debian's mirror and kept, with a venv of its
# own Python 3.9 holding Torch 2.8 (the newest for 3.9, from PyPI) and pytest, in ~/.cache/kbuild-dev/;
# each session works in an overlay on it, so nothing it writes stays. The kernels package of Python 3.9
# (at most 0.13) fails to import there or predates the variant layout, so the kernel's test imports the
# variant itself; and Torch 2.8 predates the stable C++ API that `kbuild init`'s op uses, so the author
# writes the op against the classic one, as anyone on Torch 2.8 does.
CLASSIC_BINDING = {
    "torch-ext/torch_binding.h": """\
        #pragma once

        #include <ATen/core/Tensor.h>

        at::Tensor relu(const at::Tensor& x);
        """,
    "torch-ext/torch_binding.cpp": """\
        #include "torch_binding.h"

        #include <ATen/ATen.h>
        #include <torch/library.h>

        #include "../demo_cpu/demo.h"
        #include "registration.h"

        at::Tensor relu(const at::Tensor& x) {
          TORCH_CHECK(x.scalar_type() == at::kFloat, "relu: expected float32");
          at::Tensor input = x.contiguous();
          at::Tensor out = at::empty_like(input);
          demo_kernels::relu_cpu(input.data_ptr<float>(), out.data_ptr<float>(), input.numel());
          return out;
        }

        TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
          ops.def("relu(Tensor x) -> Tensor");
          ops.impl("relu", c10::kCPU, &relu);
        }

        REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
        """,
    "tests/test_demo.py": """\
        import importlib.util
        import sys
        from pathlib import Path

        import torch

        VARIANT = next((Path(__file__).resolve().parent.parent / "build").glob("torch28-*"))


        def test_relu_matches_torch():
            spec = importlib.util.spec_from_file_location("demo", VARIANT / "__init__.py",
                                                          submodule_search_locations=[str(VARIANT)])
            kernel = importlib.util.module_from_spec(spec)
            sys.modules["demo"] = kernel
            spec.loader.exec_module(kernel)
            x = torch.randn(1000, 33)
            torch.testing.assert_close(kernel.relu(x), torch.relu(x))
        """,
}
DEBIAN11_PACKAGES = ["python3", "python3-venv", "python3-pip", "python3-dev", "g++", "git", "ca-certificates"]
DEBIAN11_PIP = ["torch==2.8.0", "pytest==8.3.5", "numpy==2.0.2"]
DEBIAN11_MIRROR = "https://deb.debian.org/debian"
CHROOT = shutil.which("chroot") or "/usr/sbin/chroot"  # found before the root's PATH is in effect


def _debian11_base():
    import hashlib
    key = hashlib.sha256(repr((DEBIAN11_PACKAGES, DEBIAN11_PIP)).encode()).hexdigest()[:12]
    base = Path.home() / ".cache" / "kbuild-dev" / f"debian11-{key}"
    if (base / ".complete").exists():
        return base / "root"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    subprocess.run(["debootstrap", "--variant=minbase", "--include=" + ",".join(DEBIAN11_PACKAGES), "bullseye",
                    base / "root", DEBIAN11_MIRROR], check=True, capture_output=True, timeout=1800)
    with _mounted(base / "root"):
        _in_root(base / "root", "python3 -m venv /opt/venv && /opt/venv/bin/pip install -q --no-cache-dir "
                 + " ".join(DEBIAN11_PIP), timeout=1800)
    (base / ".complete").touch()
    return base / "root"


class _mounted:
    """/proc, /dev, the host's resolver and CA bundle (this network's proxy may sign with its own CA)
    inside `root` for as long as the block runs."""

    def __init__(self, root):
        self.root = Path(root)

    def __enter__(self):
        shutil.copy("/etc/resolv.conf", self.root / "etc" / "resolv.conf")
        shutil.copy("/etc/ssl/certs/ca-certificates.crt", self.root / "etc" / "ssl" / "certs" / "ca-certificates.crt")
        subprocess.run(["mount", "-t", "proc", "proc", self.root / "proc"], check=True)
        subprocess.run(["mount", "--rbind", "/dev", self.root / "dev"], check=True)
        return self

    def __exit__(self, *exc):
        subprocess.run(["umount", "-R", self.root / "dev"], check=False)
        subprocess.run(["umount", self.root / "proc"], check=False)


def _in_root(root, script, timeout=600, check=True):
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/root", "LANG": "C.UTF-8",
           "PIP_CERT": "/etc/ssl/certs/ca-certificates.crt"}
    result = subprocess.run([CHROOT, root, "/bin/bash", "-c", f"set -e; cd /root; {script}"], env=env,
                            capture_output=True, text=True, timeout=timeout)
    if check:
        assert result.returncode == 0, f"{script}\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result


@pytest.fixture(scope="session")
def debian11(index, tmp_path_factory):
    base = _debian11_base()
    work = tmp_path_factory.mktemp("debian11")
    for name in ("upper", "work", "root"):
        (work / name).mkdir()
    subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                    f"lowerdir={base},upperdir={work / 'upper'},workdir={work / 'work'}", work / "root"], check=True)
    try:
        with _mounted(work / "root"):
            yield work / "root"
    finally:
        subprocess.run(["umount", work / "root"], check=False)


def test_the_authors_loop_runs_in_a_debian_11_root(debian11, index):
    root = debian11
    assert "2.31" in _in_root(root, "ldd --version").stdout  # the userland really is glibc 2.31
    # Installed from the index with the root's own Python 3.9 and pip.
    _in_root(root, f"python3 -m venv /opt/kbuild && /opt/kbuild/bin/pip install -q --index-url {index} kbuild"
                   " && ln -s /opt/kbuild/bin/kbuild /usr/local/bin/kbuild")
    loop = [
        "kbuild --version",
        "kbuild doctor",
        "kbuild init demo --backends cpu --no-ci --no-lock --repo-id team/demo",
        "kbuild config demo",
        "WRITE_CLASSIC_BINDING",
        "kbuild variants demo",
        "kbuild build demo --python /opt/venv/bin/python",
        "kbuild check demo",
        "kbuild test demo --python /opt/venv/bin/python",
    ]
    for command in loop:
        if command == "WRITE_CLASSIC_BINDING":
            for rel, text in CLASSIC_BINDING.items():
                (root / "root" / "demo" / rel).write_text(textwrap.dedent(text))
            continue
        result = _in_root(root, command, timeout=900, check=False)
        assert result.returncode == 0, f"{command}\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
        if command.startswith("kbuild build"):
            assert "kbuild: built torch28-cxx11-cpu-x86_64-linux" in result.stdout, result.stdout
        if command.startswith("kbuild test"):
            assert "1 variant passed" in result.stdout + result.stderr, result.stdout + result.stderr
    assert "torch28-cxx11-cpu-x86_64-linux" in _in_root(root, "ls demo/build").stdout
    # A registry on loopback and a publish round trip, with the root's git and HTTP stack.
    token = "hf_debian11_token_0123456789abcdef"
    _in_root(root, f"mkdir -p /srv/hub && printf '[[tokens]]\\ntoken = \"{token}\"\\nuser = \"alice\"\\n"
                   f"namespaces = [\"team\"]\\n' > /srv/hub/config.toml")
    script = ("kbuild hub serve --root /srv/hub --port 0 > /tmp/serve.log 2>&1 & server=$!; "
              "trap 'kill $server; wait $server' EXIT; "
              "for i in $(seq 100); do grep -q 'at http' /tmp/serve.log && break; sleep 0.2; done; "
              "url=$(grep -o 'http://[^ ]*' /tmp/serve.log | head -1); "
              f"export HF_ENDPOINT=$url HF_TOKEN={token}; "
              "kbuild publish demo --tag v1.0.0 --repo-id team/demo; kbuild versions team/demo")
    result = _in_root(root, script, timeout=600, check=False)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "v1.0.0" in result.stdout, result.stdout
