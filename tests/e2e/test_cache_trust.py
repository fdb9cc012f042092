"""Trust in what is on disk (issue 29): the compile cache never follows a link out of itself, never
hangs on a FIFO, never serves an entry under the wrong key; a build never reads kernel files through
links out of the kernel directory; Ctrl-C while waiting for the directory lock exits 130 at once;
hostile inputs get clear errors. Our own attack on every case, with real builds."""

import fcntl
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import KBUILD, build_args, copy_kernel, empty_compile_cache, run_kbuild

pytestmark = pytest.mark.slow

CPU_VARIANT = "torch211-cxx11-cpu-x86_64-linux"


def libraries(kernel: Path) -> dict:
    variant = kernel / "build" / CPU_VARIANT
    return {p.name: p.read_bytes() for p in sorted(variant.iterdir()) if p.is_file() and p.suffix == ".so"}


def outside_tree(root: Path) -> Path:
    outside = root / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "precious.txt").write_text("do not touch")
    (outside / "sub" / ("e" * 64)).write_text("not an object")
    return outside


def intact(outside: Path) -> bool:
    return (outside / "precious.txt").read_text() == "do not touch" and (outside / "sub" / ("e" * 64)).is_file()


@pytest.fixture(scope="module")
def cached_build(tmp_path_factory):
    """A CPU build with a compile cache of its own: (kernel, cache, libraries)."""
    root = tmp_path_factory.mktemp("trust")
    cache = empty_compile_cache(root / "cache")
    kernel = copy_kernel(root / "img2gray")
    env = dict(os.environ, KBUILD_CACHE=str(cache))
    run_kbuild(*build_args(kernel, "--backend", "cpu"), env=env)
    return kernel, cache, libraries(kernel)


def plant(cache: Path, outside: Path) -> dict:
    """Damage of every kind the issue names, at entry and shard positions; returns what was planted."""
    objects = sorted(p for p in (cache / "objects").rglob("*") if p.is_file())
    assert len(objects) >= 2, objects
    victim, donor = objects[0], objects[1]
    shutil.copyfile(donor, victim)  # a valid entry under the wrong key
    fifo = objects[-1] if len(objects) > 2 else None
    if fifo:
        fifo.unlink()
        os.mkfifo(fifo)
    (cache / "objects" / "zz").symlink_to(outside)  # a shard directory that leads out
    (victim.parent / ("e" * 64)).symlink_to(outside / "sub" / ("e" * 64))
    (cache / "manifests" / "zz").symlink_to(outside / "sub")
    return {"victim": victim, "fifo": fifo}


def test_cache_verify_repairs_everything_and_removes_nothing_outside(cached_build, tmp_path):
    kernel, cache, _ = cached_build
    private = tmp_path / "cache"
    shutil.copytree(cache, private, symlinks=True)
    outside = outside_tree(tmp_path)
    planted = plant(private, outside)
    env = dict(os.environ, KBUILD_CACHE=str(private))
    verify = run_kbuild("cache", "verify", env=env, timeout=60)
    assert intact(outside)
    text = verify.stdout
    assert "stored under another key" in text, text
    assert "a symbolic link" in text, text
    if planted["fifo"]:
        assert "not a regular file" in text, text
    assert not (private / "objects" / "zz").exists() and not (private / "objects" / "zz").is_symlink()
    again = run_kbuild("cache", "verify", env=env, timeout=60)
    assert ": 0 damaged" in again.stdout, again.stdout


def test_a_build_on_a_damaged_cache_is_correct_and_leaves_the_outside_alone(cached_build, tmp_path):
    reference_kernel, cache, reference = cached_build
    private = tmp_path / "cache"
    shutil.copytree(cache, private, symlinks=True)
    outside = outside_tree(tmp_path)
    plant(private, outside)
    kernel = copy_kernel(tmp_path / "img2gray")
    # The cap at 0 makes the build evict everything it can see afterwards.
    env = dict(os.environ, KBUILD_CACHE=str(private), KBUILD_CACHE_MAX_SIZE="0")
    result = run_kbuild(*build_args(kernel, "--backend", "cpu"), env=env, timeout=600)
    assert intact(outside)
    assert libraries(kernel) == reference
    assert "removed the damaged entry" in result.stderr, result.stderr
    assert not list(p for p in (private / "objects").rglob("*") if p.is_file() and not p.is_symlink())


def test_kernel_files_behind_links_out_of_the_kernel_are_refused(cached_build, tmp_path):
    _, cache, _ = cached_build
    env = dict(os.environ, KBUILD_CACHE=str(cache))
    outside = outside_tree(tmp_path)
    (outside / "leak.py").write_text("SECRET = 1\n")
    kernel = copy_kernel(tmp_path / "img2gray", init_git=False)
    package = kernel / "torch-ext" / "img2gray"
    # A link to a file inside the kernel is followed (and installed as a file) ...
    (kernel / "shared").mkdir()
    (kernel / "shared" / "helpers.py").write_text("HELP = 2\n")
    (package / "helpers.py").symlink_to(kernel / "shared" / "helpers.py")
    # ... links out, to a directory containing the link, or dangling are refused, all named at once.
    (package / "leak.py").symlink_to(outside / "leak.py")
    (package / "outside_dir").symlink_to(outside / "sub")
    (package / "loop").symlink_to(".")
    (kernel / "include" / "outside.h").symlink_to(outside / "precious.txt")
    # A link out where no build input lives (a test helper) is none of the build's business.
    (kernel / "tests" / "fixture.txt").symlink_to(outside / "precious.txt")
    refused = run_kbuild(*build_args(kernel, "--backend", "cpu"), env=env, check=False)
    assert refused.returncode == 2, refused.stderr
    for name in ("leak.py", "outside_dir", "loop", "include/outside.h"):
        assert name in refused.stderr, refused.stderr
    assert "outside the kernel directory" in refused.stderr and "a loop" in refused.stderr
    assert "fixture.txt" not in refused.stderr
    for link in ("leak.py", "outside_dir", "loop"):
        (package / link).unlink()
    (kernel / "include" / "outside.h").unlink()
    run_kbuild(*build_args(kernel, "--backend", "cpu"), env=env)
    installed = kernel / "build" / CPU_VARIANT / "helpers.py"
    assert installed.is_file() and not installed.is_symlink() and installed.read_text() == "HELP = 2\n"
    assert not (kernel / "build" / CPU_VARIANT / "leak.py").exists()


def test_ctrl_c_while_waiting_for_the_directory_lock_exits_130_at_once(cached_build, tmp_path):
    _, cache, _ = cached_build
    kernel = copy_kernel(tmp_path / "img2gray")
    (kernel / ".kbuild").mkdir()
    env = dict(os.environ, KBUILD_CACHE=str(cache))
    with open(kernel / ".kbuild" / "lock", "w") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)  # another build holds the kernel directory
        proc = subprocess.Popen([str(KBUILD), *map(str, build_args(kernel, "--backend", "cpu"))], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        waiting = threading.Event()
        lines = []

        def read():
            for line in proc.stderr:
                lines.append(line)
                if "waiting for the build" in line:
                    waiting.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        assert waiting.wait(120), lines
        for sig in (signal.SIGINT, signal.SIGTERM):
            if proc.poll() is not None:
                break
            start = time.monotonic()
            proc.send_signal(sig)
            proc.wait(timeout=5)
            assert time.monotonic() - start < 1.0
        reader.join(5)
    assert proc.returncode == 130, lines
    assert any("interrupted while waiting for the lock" in line for line in lines), lines


def test_leftovers_of_dead_processes_are_swept_and_counted(cached_build, tmp_path):
    kernel_ref, cache, _ = cached_build
    private = tmp_path / "cache"
    shutil.copytree(cache, private, symlinks=True)
    dead = private / "tmp" / ".stdcxx-compat.tmp999999999-0123abcd-0"
    dead.parent.mkdir(parents=True, exist_ok=True)
    dead.write_bytes(b"x" * 100_000)
    old = time.time() - 600
    os.utime(dead, (old, old))
    env = dict(os.environ, KBUILD_CACHE=str(private))
    import json
    stats = json.loads(run_kbuild("cache", "stats", "--json", env=env).stdout)
    assert stats["parts"]["tmp"]["bytes"] >= 100_000
    verify = run_kbuild("cache", "verify", env=env)
    assert "1 leftover temporary file(s) removed" in verify.stdout, verify.stdout
    assert not dead.exists()


def test_hostile_inputs_get_clear_errors(tmp_path):
    kernel = copy_kernel(tmp_path / "img2gray", init_git=False)
    env = {k: v for k, v in os.environ.items() if k not in ("HOME", "KBUILD_CACHE", "XDG_CACHE_HOME")}
    no_home = run_kbuild(*build_args(kernel), env=env, check=False, timeout=60)
    assert no_home.returncode == 2 and "KBUILD_CACHE" in no_home.stderr, no_home.stderr
    # A FIFO listed as a source: a clear error, no wait.
    toml = (kernel / "build.toml").read_text()
    os.mkfifo(kernel / "img2gray_cpu" / "fifo.cpp")
    (kernel / "build.toml").write_text(toml.replace('src = ["img2gray_cpu/img2gray_cpu.cpp"',
                                                    'src = ["img2gray_cpu/fifo.cpp", "img2gray_cpu/img2gray_cpu.cpp"'))
    fifo = run_kbuild("config", kernel, check=False, timeout=30)
    assert fifo.returncode == 2 and "is not a regular file" in fifo.stderr, fifo.stderr
    # A source name too long for the object file kbuild derives from it.
    long_name = "k" * 226 + ".cpp"
    (kernel / "img2gray_cpu" / long_name).write_text("int x;\n")
    (kernel / "build.toml").write_text(toml.replace('src = ["img2gray_cpu/img2gray_cpu.cpp"',
                                                    f'src = ["img2gray_cpu/{long_name}", "img2gray_cpu/img2gray_cpu.cpp"'))
    long = run_kbuild("config", kernel, check=False, timeout=30)
    assert long.returncode == 2 and "at most 224" in long.stderr, long.stderr
    # 50,000 unknown keys: the first problems, then a count.
    keys = "".join(f"unknown_{i} = 1\n" for i in range(50_000))
    (kernel / "build.toml").write_text(toml.replace("[general]\n", "[general]\n" + keys, 1))
    many = run_kbuild("config", kernel, check=False, timeout=120)
    assert len(many.stderr.splitlines()) < 400 and "more problems" in many.stderr, many.stderr[-500:]
    # A package file whose name is not UTF-8: named (escaped), with and without --json.
    (kernel / "build.toml").write_text(toml)
    os.unlink(kernel / "img2gray_cpu" / "fifo.cpp")
    bad = os.path.join(os.fsencode(kernel / "torch-ext" / "img2gray"), b"bad\xff.py")
    with open(bad, "wb") as f:
        f.write(b"X = 1\n")
    result = run_kbuild(*build_args(kernel, "--backend", "cpu", "--json"), check=False, timeout=300)
    assert result.returncode == 2, result.stderr
    assert "not UTF-8" in result.stderr and "bad\\xff.py" in result.stderr, result.stderr
    import json
    assert json.loads(result.stdout)["error"]["code"] == 2


def test_a_read_only_kernel_directory_builds_when_up_to_date(cached_build, tmp_path):
    _, cache, _ = cached_build
    env = dict(os.environ, KBUILD_CACHE=str(cache))
    source = copy_kernel(tmp_path / "source", init_git=False)
    view = tmp_path / "view"
    view.mkdir()
    if subprocess.run(["mount", "--bind", str(source), str(view)], capture_output=True).returncode != 0:
        pytest.skip("bind mounts need CAP_SYS_ADMIN")
    try:
        run_kbuild(*build_args(view, "--backend", "cpu"), env=env)
        subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], check=True)
        up_to_date = run_kbuild(*build_args(view, "--backend", "cpu"), env=env, check=False)
        assert up_to_date.returncode == 0 and "up to date" in up_to_date.stdout, up_to_date.stderr
        with open(source / "img2gray_cpu" / "img2gray_cpu.cpp", "a") as f:
            f.write("// an edit\n")
        stale = run_kbuild(*build_args(view, "--backend", "cpu"), env=env, check=False)
        assert stale.returncode == 1 and "is read-only and" in stale.stderr, stale.stderr
    finally:
        subprocess.run(["umount", str(view)], capture_output=True)


def test_links_between_sibling_directories_are_a_loop_not_a_long_walk(tmp_path):
    kernel = copy_kernel(tmp_path / "img2gray", init_git=False)
    package = kernel / "torch-ext" / "img2gray"
    (package / "x").mkdir()
    (package / "y").mkdir()
    (package / "x" / "to_y").symlink_to("../y")
    (package / "y" / "to_x").symlink_to("../x")
    (package / "x" / "to_y2").symlink_to("../y")
    result = run_kbuild(*build_args(kernel, "--backend", "cpu"), check=False, timeout=60)
    assert result.returncode == 2 and "a loop" in result.stderr, result.stderr


def snapshot(root: Path) -> dict:
    """Every entry below `root` with its type, size and mtime (links not followed)."""
    out = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        out[str(path.relative_to(root))] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return out


def test_a_read_only_cache_serves_builds_and_stores_nothing(tmp_path):
    """The cache on a read-only mount (a shared NFS cache, a CI image): a no-op, a build served from it and
    a --no-cache build all succeed, say once that nothing is stored, and leave it as it was. Before: every
    build failed with `cannot open the lock …/.in-use: Read-only file system`."""
    if subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare -rm (a private mount namespace) is not permitted here")
    cache = empty_compile_cache(tmp_path / "cache")
    kernel = copy_kernel(tmp_path / "img2gray")
    env = dict(os.environ, KBUILD_CACHE=str(cache))
    run_kbuild(*build_args(kernel, "--backend", "cpu"), env=env)
    before = snapshot(cache)
    script = f"""
set -e
mount --bind {cache} {cache} && mount -o remount,bind,ro {cache}
run() {{ "$@" > {tmp_path}/out.txt 2>&1; echo "rc=$?" >> {tmp_path}/out.txt; cat {tmp_path}/out.txt; }}
set +e
run {KBUILD} build {kernel} --backend cpu --python {build_args(kernel)[3]}
rm -rf {kernel}/build {kernel}/.kbuild
run {KBUILD} build {kernel} --backend cpu --python {build_args(kernel)[3]}
rm -rf {kernel}/build {kernel}/.kbuild
run {KBUILD} build {kernel} --backend cpu --no-cache --python {build_args(kernel)[3]}
"""
    result = subprocess.run(["unshare", "-rm", "bash", "-c", script], env=env, capture_output=True, text=True,
                            timeout=600)
    out = result.stdout + result.stderr
    assert out.count("rc=0") == 3, out
    assert out.count("is read-only: what it holds is used as it is") == 3, out
    assert "no work to do" in out and "from cache" in out, out
    assert (kernel / "build" / CPU_VARIANT).is_dir()
    assert snapshot(cache) == before  # nothing stored, touched or counted


def test_check_rebuild_rebuilds_only_what_build_holds_and_leaves_nothing_when_interrupted(tmp_path):
    """A local CPU-only build: `check --rebuild` builds the CPU variant again, not the CUDA variant a
    local build would also make (an nvcc that fails every compile proves it), and a signal during the
    rebuild leaves no .kbuild/rebuild behind. Before: it compiled the CUDA variant, and Ctrl-C left
    .kbuild/rebuild/work-local (37 MB)."""
    kernel = copy_kernel(tmp_path / "img2gray")
    run_kbuild(*build_args(kernel, "--backend", "cpu"))
    real_nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    # The real toolkit, linked entry by entry, but for an nvcc that runs everything except a compile.
    real_root = Path(real_nvcc).resolve().parent.parent
    fake_cuda = tmp_path / "cuda"
    (fake_cuda / "bin").mkdir(parents=True)
    for entry in real_root.iterdir():
        if entry.name != "bin":
            (fake_cuda / entry.name).symlink_to(entry)
    for entry in (real_root / "bin").iterdir():
        if entry.name != "nvcc":
            (fake_cuda / "bin" / entry.name).symlink_to(entry)
    (fake_cuda / "bin" / "nvcc").write_text(f'#!/bin/sh\ncase " $* " in *" -c "*) echo "no CUDA compile expected" >&2; exit 1;; esac\n'
                                            f'exec {real_nvcc} "$@"\n')
    (fake_cuda / "bin" / "nvcc").chmod(0o755)
    env = dict(os.environ, CUDA_HOME=str(fake_cuda), PATH=f"{fake_cuda / 'bin'}:{os.environ['PATH']}")
    result = run_kbuild("check", kernel, "--rebuild", "--python", build_args(kernel)[3], env=env, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == f"{CPU_VARIANT}: identical to a rebuild\n", result.stdout
    assert not (kernel / ".kbuild" / "rebuild").exists()
    # Interrupted while it rebuilds (no compile cache: it compiles for seconds).
    process = subprocess.Popen([str(KBUILD), "check", str(kernel), "--rebuild", "--python", build_args(kernel)[3]],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (kernel / ".kbuild" / "rebuild").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 130, out + err
    assert not (kernel / ".kbuild" / "rebuild").exists(), list((kernel / ".kbuild" / "rebuild").rglob("*"))[:5]


def test_headers_reached_outside_the_kernel_are_refused_however_they_are_reached(cached_build, tmp_path):
    """A header beside a listed source, not listed itself, that is a link to a file outside the kernel;
    and a header reached with "../.." past the kernel directory: the compiler's depfile names them, and
    the build fails with exit 2 naming each (before: exit 0 with the outside content in the library,
    and `check` said ok)."""
    _, cache, _ = cached_build
    env = dict(os.environ, KBUILD_CACHE=str(cache))
    outside = outside_tree(tmp_path)
    (outside / "evil.h").write_text('static const char* kbuild_outside = "OUTSIDE-CONTENT";\n')
    (outside / "evil2.h").write_text("#define KBUILD_OUTSIDE_TOO 1\n")
    kernel = copy_kernel(tmp_path / "img2gray", init_git=False)
    binding = kernel / "torch-ext" / "torch_binding.cpp"
    (kernel / "torch-ext" / "extra.h").symlink_to(outside / "evil.h")
    original = binding.read_text()
    binding.write_text('#include "extra.h"\n#include "../../outside/evil2.h"\n' + original)
    refused = run_kbuild(*build_args(kernel, "--backend", "cpu"), env=env, check=False)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "torch-ext/extra.h is " in refused.stderr and str(outside / "evil.h") in refused.stderr, refused.stderr
    assert "evil2.h is " in refused.stderr, refused.stderr
    assert "outside the kernel directory" in refused.stderr
    for library in (kernel / "build").rglob("*.so") if (kernel / "build").exists() else []:
        assert b"OUTSIDE-CONTENT" not in library.read_bytes()
    # The same header as a file of the kernel builds.
    (kernel / "torch-ext" / "extra.h").unlink()
    (kernel / "torch-ext" / "extra.h").write_text((outside / "evil.h").read_text())
    binding.write_text('#include "extra.h"\n' + original)
    run_kbuild(*build_args(kernel, "--backend", "cpu"), env=env)
