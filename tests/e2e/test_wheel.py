"""kbuild as a wheel (issue 22): `pip wheel .` through scripts/wheel, installed into a bare venv with
no other package and no network, gives a working `kbuild` that builds and checks a kernel."""

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import PYTHON, ROOT

pytestmark = [pytest.mark.slow, pytest.mark.heavy]  # scikit-build compiles kbuild again (10 min here)

# The test environment's Python builds the wheel (pip fetches scikit-build-core in its isolated build).
BUILDER = os.environ.get("KBUILD_WHEEL_PYTHON", PYTHON)


@pytest.fixture(scope="session")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    result = subprocess.run([str(ROOT / "scripts" / "wheel"), str(out)], capture_output=True, text=True,
                            env=dict(os.environ, KBUILD_WHEEL_PYTHON=BUILDER), timeout=3600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    path = Path(result.stdout.strip().splitlines()[-1])
    assert path.is_file(), result.stdout
    return path


@pytest.fixture(scope="session")
def installed(wheel, tmp_path_factory):
    """A bare venv (no packages but pip), the wheel installed from the file alone."""
    venv = tmp_path_factory.mktemp("venv") / "kbuild"
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    start = time.monotonic()
    subprocess.run([venv / "bin" / "pip", "install", "--no-index", "--no-deps", "-q", wheel], check=True)
    return venv, time.monotonic() - start


def test_the_wheel_is_named_and_tagged_honestly(wheel):
    version = re.search(r"project\(kbuild VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text()).group(1)
    match = re.fullmatch(rf"kbuild-{re.escape(version)}-py3-none-manylinux_2_(\d+)_x86_64\.whl", wheel.name)
    assert match, wheel.name
    # No symbol of the executable or of a bundled library needs a newer glibc than the tag says.
    import zipfile
    tmp = wheel.parent / "unpacked"
    zipfile.ZipFile(wheel).extractall(tmp)
    needed = set()
    for path in tmp.rglob("*"):
        if path.is_file() and (path.name == "kbuild" or ".so" in path.name):
            out = subprocess.run(["objdump", "-T", path], capture_output=True, text=True, check=True).stdout
            needed |= {int(minor) for minor in re.findall(r"GLIBC_2\.(\d+)", out)}
    assert max(needed) == int(match.group(1)), (sorted(needed), wheel.name)
    # The C++ runtime comes with it: the system's libstdc++ may be older than the one it was built with.
    assert list(tmp.rglob("kbuild.libs/libstdc++.so.6")), sorted(p.name for p in tmp.rglob("*"))


def test_pip_install_gives_a_small_kbuild_that_names_its_commit(installed):
    venv, seconds = installed
    assert seconds < 30, f"pip install took {seconds:.1f} s"
    kbuild = venv / "bin" / "kbuild"
    assert kbuild.stat().st_size <= 25 * 1024 * 1024, kbuild.stat().st_size
    head = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    version = subprocess.run([kbuild, "--version"], capture_output=True, text=True, check=True).stdout
    assert f"(commit {head[:12]}" in version, version
    # Every library it loads beyond glibc's comes from the wheel.
    ldd = subprocess.run(["ldd", kbuild], capture_output=True, text=True, check=True).stdout
    for name, path in re.findall(r"^\s*(\S+) => (\S+)", ldd, re.M):
        if not re.match(r"(libc|libm|libdl|librt|libpthread|libresolv|ld-linux)", name):
            assert os.path.normpath(path).startswith(str(venv / "lib" / "kbuild.libs")), (name, path)
    # So do the libraries it loads on first use (libcurl, libarchive, libzip: `--version` loads them
    # all), and what they load: the dynamic loader's trace names each library as it initialises it.
    traced = subprocess.run([kbuild, "--version"], capture_output=True, text=True, check=True,
                            env=dict(os.environ, LD_DEBUG="files")).stderr
    initialised = re.findall(r"calling init: (\S+)", traced)
    lazy = [path for path in initialised if re.search(r"/lib(curl|archive|zip)\.so", path)]
    assert len(lazy) == 3, initialised
    for path in initialised:
        if not re.search(r"/(libc|libm|libdl|librt|libpthread|libresolv|ld-linux)[.-]", path):
            assert os.path.normpath(path).startswith(str(venv / "lib" / "kbuild.libs")), (path, initialised)


def test_the_installed_kbuild_builds_and_checks_a_kernel(installed, tmp_path):
    venv, _ = installed
    env = dict(os.environ, PATH=f"{venv / 'bin'}:/usr/local/cuda/bin:/usr/bin:/bin", KBUILD_PYTHON=PYTHON,
               KBUILD_CACHE=str(tmp_path / "cache"))
    assert shutil.which("kbuild", path=env["PATH"]) == str(venv / "bin" / "kbuild")
    for argv in (["init", "demo", "--backends", "cpu", "--no-ci", "--no-git"], ["build", "demo"], ["check", "demo"]):
        result = subprocess.run(["kbuild", *argv], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert result.returncode == 0, (argv, result.stdout, result.stderr)
    assert "ok" in result.stdout


@pytest.mark.parametrize("installer", ["uv", "pipx"])
def test_uv_tool_install_and_pipx_install_work_the_same_way(wheel, installer, tmp_path):
    tools = Path(PYTHON).parent
    env = dict(os.environ, UV_TOOL_DIR=str(tmp_path / "tools"), UV_TOOL_BIN_DIR=str(tmp_path / "bin"),
               PIPX_HOME=str(tmp_path / "pipx"), PIPX_BIN_DIR=str(tmp_path / "bin"), UV_OFFLINE="1",
               UV_PYTHON=sys.executable)
    argv = ([str(tools / "uv"), "tool", "install", str(wheel)] if installer == "uv"
            else [str(tools / "pipx"), "install", "--python", sys.executable, str(wheel)])
    result = subprocess.run(argv, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    version = subprocess.run([tmp_path / "bin" / "kbuild", "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.startswith("kbuild ")
