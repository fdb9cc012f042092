"""kbuild build --matrix: pinned toolchains from PyPI wheels, one job pool, the compile cache,
reproducible trees, and refusal of tampered downloads."""

import filecmp
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import KBUILD, PYTHON, build_args, copy_kernel, empty_compile_cache, git, run_kbuild, variant_dirs

pytestmark = pytest.mark.slow

MATRIX = [
    "torch211-cxx11-cpu-x86_64-linux",
    "torch211-cxx11-cu130-x86_64-linux",
    "torch211-cxx11-cu132-x86_64-linux",
    "torch215-cxx11-cpu-x86_64-linux",
    "torch215-cxx11-cu130-x86_64-linux",
    "torch215-cxx11-cu132-x86_64-linux",
]


def tree_bytes(root: Path):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def matrix_kernel(tmp_path_factory):
    kernel = copy_kernel(tmp_path_factory.mktemp("matrix") / "img2gray")
    result = run_kbuild(*build_args(kernel, "--matrix", "--locked"), timeout=3600)
    assert "kbuild: built" in result.stdout, result.stdout + result.stderr
    return kernel


def test_matrix_builds_every_variant_with_valid_libraries(matrix_kernel):
    assert [p.name for p in variant_dirs(matrix_kernel)] == MATRIX
    # kbuild check: ELF for x86_64, exports PyInit_<id>, links only Torch/CUDA/C runtime, digests.
    result = run_kbuild("check", matrix_kernel)
    assert result.stdout == "".join(f"{name}: ok (unsigned)\n" for name in MATRIX)
    used = json.loads((matrix_kernel / ".kbuild" / "toolchains-used.json").read_text())["variants"]
    assert used["torch215-cxx11-cu132-x86_64-linux"]["torch"].startswith("2.15.0")
    assert used["torch215-cxx11-cu132-x86_64-linux"]["cuda"].startswith("13.2")
    assert used["torch211-cxx11-cu130-x86_64-linux"]["cuda"].startswith("13.0")
    for variant in MATRIX:
        metadata = json.loads((matrix_kernel / "build" / variant / "metadata.json").read_text())
        assert metadata["backend"]["type"] == ("cpu" if "cpu" in variant else "cuda")


def test_the_installed_torch_loads_its_variants_through_kernels(matrix_kernel):
    script = r"""
import sys, torch
from pathlib import Path
from kernels import get_local_kernel
from torchvision.transforms.functional import rgb_to_grayscale
for backend in ("cuda", "cpu"):
    k = get_local_kernel(Path(sys.argv[1]), backend=backend)
    image = torch.randint(0, 256, (2, 3, 17, 23), dtype=torch.uint8)
    assert torch.equal(k.img2gray(image), rgb_to_grayscale(image))
    print(Path(k.__file__).parent.name)
"""
    out = subprocess.run([PYTHON, "-c", script, str(matrix_kernel)], check=True, capture_output=True, text=True).stdout
    assert out.split() == ["torch211-cxx11-cu130-x86_64-linux", "torch211-cxx11-cpu-x86_64-linux"]


def test_variants_json_lists_the_matrix(matrix_kernel):
    listing = json.loads(run_kbuild("variants", matrix_kernel, "--json").stdout)
    assert listing["kernel"] == "img2gray"
    assert [v["name"] for v in listing["variants"]] == MATRIX
    cu132 = listing["variants"][2]
    assert cu132 == {"name": MATRIX[2], "torch": "2.11", "backend": "cuda", "compute": "cu132", "cuda": "13.2",
                     "stable_abi": None, "toolchain": "present"}
    only = json.loads(run_kbuild("variants", matrix_kernel, "--json", "--torch", "2.15", "--cuda", "cpu").stdout)
    assert [v["name"] for v in only["variants"]] == ["torch215-cxx11-cpu-x86_64-linux"]


def test_no_op_and_full_rebuild_from_the_cache(matrix_kernel):
    assert "no work to do" in run_kbuild(*build_args(matrix_kernel, "--matrix", "--locked")).stdout
    before = tree_bytes(matrix_kernel / "build")
    shutil.rmtree(matrix_kernel / "build")
    shutil.rmtree(matrix_kernel / ".kbuild")
    out = run_kbuild(*build_args(matrix_kernel, "--matrix", "--locked")).stdout
    ran, cached = map(int, re.search(r"\((\d+) jobs? run, (\d+) from cache\)", out).groups())
    compile_and_link = len(re.findall(r"^\[\d+/\d+\] (?:CXX|CUDA|LINK) ", out, re.M))
    assert cached == compile_and_link == 28, out  # 2 x (3 + 1) cpu, 4 x (4 + 1) cuda
    assert ran == 7  # the in-process jobs: registration.h and six installs
    assert tree_bytes(matrix_kernel / "build") == before


def test_a_cu_without_torch_headers_compiles_once_per_cuda_version(tmp_path):
    kernel = copy_kernel(tmp_path / "img2gray")
    cache = empty_compile_cache(tmp_path / "cache")
    env = dict(os.environ, KBUILD_CACHE=str(cache))
    first = run_kbuild(*build_args(kernel, "--variant", "torch211-cxx11-cu130-x86_64-linux"), env=env).stdout
    assert re.search(r"^\[\d+/\d+\] CUDA img2gray_cuda/img2gray.cu  \[torch211-cxx11-cu130-x86_64-linux\]$", first, re.M)
    second = run_kbuild(*build_args(kernel, "--variant", "torch215-cxx11-cu130-x86_64-linux"), env=env).stdout
    # Another Torch, same CUDA: the .cu object comes from the cache, the binding is compiled.
    assert re.search(r"CUDA img2gray_cuda/img2gray.cu  \[torch215-cxx11-cu130-x86_64-linux\] \(cached\)$", second, re.M)
    assert re.search(r"CXX torch-ext/torch_binding.cpp  \[torch215-cxx11-cu130-x86_64-linux\]$", second, re.M)
    third = run_kbuild(*build_args(kernel, "--variant", "torch215-cxx11-cu132-x86_64-linux"), env=env).stdout
    # Another CUDA version: compiled again.
    assert re.search(r"CUDA img2gray_cuda/img2gray.cu  \[torch215-cxx11-cu132-x86_64-linux\]$", third, re.M)
    stats = run_kbuild("cache", "stats", env=env).stdout
    assert re.search(r"hits / misses\s+\d+ / \d+", stats)


def trap_system_compilers(directory: Path) -> Path:
    """A PATH directory whose compilers and binutils fail loudly and log that they ran."""
    directory.mkdir(parents=True)
    for tool in ("g++", "gcc", "c++", "cc", "cpp", "as", "ld", "ld.bfd", "nm", "objcopy", "ar", "g++-12", "gcc-12",
                 "x86_64-linux-gnu-g++-12", "x86_64-linux-gnu-gcc-12", "x86_64-linux-gnu-as", "x86_64-linux-gnu-ld"):
        script = directory / tool
        script.write_text(f'#!/bin/sh\necho "$0 $*" >> {directory}/ran.log\nexit 97\n')
        script.chmod(0o755)
    return directory / "ran.log"


def test_two_clean_locked_builds_in_different_directories_are_byte_identical(matrix_kernel, tmp_path):
    """The pinned host toolchain (issue 26): no system compiler runs, even one that PATH puts first, and
    two clean builds of one commit give the same bytes."""
    variants = ["--variant", "torch211-cxx11-cu130-x86_64-linux", "--variant", "torch215-cxx11-cpu-x86_64-linux"]
    ran = trap_system_compilers(tmp_path / "trap")
    env = {k: v for k, v in os.environ.items() if k not in ("CXX", "CC")}
    env["PATH"] = f"{ran.parent}:{env['PATH']}"
    trees = []
    for name in ("first", "second-place"):
        clone = tmp_path / name / "img2gray"
        subprocess.run(["git", "clone", "-q", str(matrix_kernel), str(clone)], check=True)
        # The second build runs under strace: not even an absolute /usr/bin/g++ may run.
        traced = ["strace", "-f", "-qq", "-e", "trace=execve", "-o", str(tmp_path / "exec.log")] if trees else []
        subprocess.run([*traced, str(KBUILD), *build_args(clone, *variants, "--no-cache", "--locked")], env=env,
                       check=True, capture_output=True, text=True, timeout=900)
        trees.append(clone / "build")
    assert not ran.exists(), ran.read_text()
    programs = set(re.findall(r'execve\("([^"]+)", .*\) = 0$', (tmp_path / "exec.log").read_text(), re.M))
    compilers = re.compile(r"(^|/)(g\+\+|gcc|c\+\+|cc|cc1|cc1plus|collect2|as|ld|ld\.bfd|nm|objcopy|ar)(-\d+)?$")
    system = sorted(p for p in programs if "/toolchains/gcc-12.2-" not in p and
                    (compilers.search(os.path.basename(p)) or "x86_64-linux-gnu-" in p or "/lib/gcc/" in p))
    assert not system, system
    assert any(p.endswith("/gcc/x86_64-linux-gnu/12/cc1plus") for p in programs), sorted(programs)
    first, second = (tree_bytes(t) for t in trees)
    assert sorted(first) == sorted(second) and len(first) == 8
    assert first == second
    digests = [json.loads((t / "torch211-cxx11-cu130-x86_64-linux" / "metadata.json").read_text())["digest"] for t in trees]
    assert digests[0] == digests[1]
    metadata = json.loads((trees[0] / "torch215-cxx11-cpu-x86_64-linux" / "metadata.json").read_text())
    assert metadata["provenance"]["kernel"] == {"commit": git("rev-parse", "HEAD", cwd=matrix_kernel), "dirty": False}
    pins = json.loads((matrix_kernel / "kbuild.lock").read_text())["toolchains"]["gcc-12.2"]
    assert metadata["toolchain"]["compiler-origin"] == "pinned:gcc-12.2"
    assert metadata["toolchain"]["host-packages"] == [f"{p['package']}={p['version']}" for p in pins]
    assert metadata["toolchain"]["torch-origin"] == "wheel:torch-2.15.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    # kbuild check --rebuild builds a variant again apart and names the first file that differs.
    clone = trees[0].parent
    cpu = "torch215-cxx11-cpu-x86_64-linux"
    result = run_kbuild("check", clone, "--rebuild", "--variant", cpu, "--python", PYTHON, env=env)
    assert result.stdout == f"{cpu}: identical to a rebuild\n"
    ops = trees[0] / cpu / "_ops.py"
    ops.write_text(ops.read_text() + "# edited\n")
    result = run_kbuild("check", clone, "--rebuild", "--variant", cpu, "--python", PYTHON, env=env, check=False)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{cpu}: differs from a rebuild: _ops.py differs from the rebuild's at byte" in result.stdout
    assert not ran.exists(), ran.read_text()
    assert not (clone / ".kbuild" / "rebuild").exists()


def test_a_debian_python_with_a_multiarch_pyconfig_builds_locked(matrix_kernel, tmp_path):
    """Debian's and Ubuntu's Pythons keep pyconfig.h under /usr/include/<multiarch>/, which the pinned
    host toolchain's --sysroot does not search: kbuild writes it into the build's own tree."""
    python = "/usr/bin/python3"  # Debian's (python3-dev), not the test environment's
    include = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['include'])"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    redirect = re.search(r"#\s*include <(x86_64-linux-gnu/python3\.\d+/pyconfig\.h)>", (include / "pyconfig.h").read_text())
    assert redirect, include
    clone = tmp_path / "img2gray"
    subprocess.run(["git", "clone", "-q", str(matrix_kernel), str(clone)], check=True)
    cpu = "torch211-cxx11-cpu-x86_64-linux"
    result = run_kbuild("build", clone, "--variant", cpu, "--locked", "--python", python, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    carried = clone / ".kbuild" / "generated" / "python-multiarch" / redirect.group(1)
    assert carried.read_bytes() == (include.parent / redirect.group(1)).read_bytes()
    assert run_kbuild("check", clone, "--variant", cpu).returncode == 0
    # The binding uses the stable ABI only: the Python's own headers leave no trace in the bytes.
    assert tree_bytes(clone / "build" / cpu) == tree_bytes(matrix_kernel / "build" / cpu)


def test_a_locked_build_needs_the_host_toolchain_pin(kernel_copy):
    lock_path = kernel_copy / "kbuild.lock"
    lock = json.loads(lock_path.read_text())
    del lock["toolchains"]["gcc-12.2"]
    lock_path.write_text(json.dumps(lock, indent=2) + "\n")
    result = run_kbuild(*build_args(kernel_copy, "--variant", "torch211-cxx11-cpu-x86_64-linux", "--locked"),
                        check=False)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "kbuild.lock has no pin for the host toolchain gcc-12.2 (--locked)" in result.stderr
    assert "hint: run `kbuild toolchains lock`" in result.stderr


def test_lock_command_and_locked_builds(kernel_copy):
    (kernel_copy / "kbuild.lock").unlink()
    result = run_kbuild(*build_args(kernel_copy, "--matrix", "--locked"), check=False)
    assert result.returncode == 2 and "kbuild.lock does not exist" in result.stderr
    out = run_kbuild("toolchains", "lock", kernel_copy, "--python", PYTHON).stdout
    lock = json.loads((kernel_copy / "kbuild.lock").read_text())
    assert sorted(lock["toolchains"]) == ["cuda-13.0", "cuda-13.2", "gcc-12.2", "torch-2.11", "torch-2.15"]
    host = {a["package"]: a for a in lock["toolchains"]["gcc-12.2"]}
    assert host["g++-12"]["version"].startswith("12.2.0-") and host["libc6"]["version"].startswith("2.36-")
    assert host["g++-12"]["url"].startswith("https://deb.debian.org/debian/pool/main/g/gcc-12/g++-12_")
    assert [a["package"] for a in lock["toolchains"]["cuda-13.2"]] == [
        "nvidia-cuda-nvcc", "nvidia-nvvm", "nvidia-cuda-crt", "nvidia-cuda-runtime", "nvidia-cuda-cccl"]
    assert lock["toolchains"]["torch-2.15"][0]["file"].startswith("torch-2.15.")
    assert "wrote" in out
    assert "up to date" in run_kbuild("toolchains", "lock", kernel_copy, "--python", PYTHON).stdout


def test_matrix_filters_report_mistakes(kernel_copy):
    result = run_kbuild(*build_args(kernel_copy, "--variant", "torch211-cxx11-cu13-x86_64-linux"), check=False)
    assert result.returncode == 2
    assert "did you mean torch211-cxx11-cu130-x86_64-linux?" in result.stderr
    result = run_kbuild(*build_args(kernel_copy, "--matrix", "--backend", "cpu"), check=False)
    assert result.returncode == 2 and "--backend does not apply" in result.stderr
    (kernel_copy / "kbuild.toml").write_text("[matrix]\ntorch = [\"2.11\"]\ncudaa = [\"13.0\"]\n")
    result = run_kbuild(*build_args(kernel_copy, "--matrix"), check=False)
    assert result.returncode == 2 and 'unknown key "cudaa" in [matrix]' in result.stderr


def test_ccache_as_compiler_launcher(kernel_copy, tmp_path):
    env = dict(os.environ, CCACHE_DIR=str(tmp_path / "ccache"))
    args = build_args(kernel_copy, "--backend", "cpu", "--launcher", "ccache", "--no-cache")
    run_kbuild(*args, env=env)
    run_kbuild("clean", kernel_copy, "--all")
    run_kbuild(*args, env=env)
    stats = subprocess.run(["ccache", "--print-stats"], env=env, check=True, capture_output=True, text=True).stdout
    counters = dict(line.split("\t") for line in stats.splitlines() if "\t" in line)
    hits = int(counters.get("direct_cache_hit", 0)) + int(counters.get("preprocessed_cache_hit", 0))
    assert hits >= 3, stats  # binding, glibc_compat and the CPU kernel, served by ccache the second time
