"""`kbuild test`: the kernel's own tests against each built variant, with the Torch that variant was
built for (the test environment's Torch 2.11 for torch211 variants; a test environment of its own,
created by kbuild, for the others). PyTorch's per-build indexes (the default Torch index) are not
reachable from these machines: environments with a real Torch come from PyPI (--torch-index pypi);
the index itself is exercised with local ones that lack the build, or cannot be reached."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PYTHON, build_args, copy_kernel, run_kbuild

pytestmark = pytest.mark.slow  # they compile kernels (pytest.ini)


def results_of(kernel, *args):
    result = run_kbuild("test", kernel, "--python", PYTHON, "--json", *args, check=False, timeout=3600)
    return result, {r["variant"]: r for r in json.loads(result.stdout)} if result.stdout.strip() else {}


def test_each_local_variant_passes_its_tests_with_its_torch(built_kernel):
    result, results = results_of(built_kernel)
    # CI's mode: the CUDA variant without a GPU is loaded and its ops checked, which fails nothing.
    best_effort, best = results_of(built_kernel, "--variant", "torch211-cxx11-cu130-x86_64-linux", "--best-effort")
    assert best_effort.returncode == 0, best_effort.stdout + best_effort.stderr
    cuda_best = best["torch211-cxx11-cu130-x86_64-linux"]
    assert cuda_best["status"] in ("loaded", "passed"), cuda_best
    if cuda_best["status"] == "loaded":
        assert "has a CUDA kernel for every op (img2gray, img2gray_out)" in cuda_best["reason"], cuda_best
    assert result.returncode == 0, result.stdout + result.stderr
    assert set(results) == {"torch211-cxx11-cpu-x86_64-linux", "torch211-cxx11-cu130-x86_64-linux"}
    gpu = subprocess.run([PYTHON, "-c", "import torch; print(torch.cuda.is_available())"], capture_output=True,
                         text=True, check=True).stdout.strip() == "True"
    cuda = results.pop("torch211-cxx11-cu130-x86_64-linux")
    if not gpu:  # never "passed" with its CUDA kernels unexercised
        assert cuda["status"] == "not tested" and "no GPU here" in cuda["reason"], cuda
    else:
        results["torch211-cxx11-cu130-x86_64-linux"] = cuda
    for variant in results.values():
        assert variant["status"] == "passed", variant
        assert variant["torch"].startswith("2.11.0") and variant["python"] == PYTHON
        # Tests ran against the variant (the kernel's conftest fails when the Torch would load another).
        assert variant["tests"] > variant["skipped"] > 0 and variant["failures"] == variant["errors"] == 0


def test_a_failing_test_fails_its_variant_and_the_command(tmp_path):
    kernel = copy_kernel(tmp_path / "img2gray")
    run_kbuild(*build_args(kernel, "--backend", "cpu"))
    with open(kernel / "tests" / "test_img2gray.py", "a") as tests:
        tests.write("\n\ndef test_that_fails():\n    assert False, 'on purpose'\n")
    result, results = results_of(kernel)
    assert result.returncode == 1 and "1 of 1 variant failed their tests" in result.stderr
    assert results["torch211-cxx11-cpu-x86_64-linux"]["failures"] == 1
    text = run_kbuild("test", kernel, "--python", PYTHON, check=False)
    assert "on purpose" in text.stdout  # the failed run's output is shown
    # Progress names each variant and the pytest command as it starts.
    assert "testing torch211-cxx11-cpu-x86_64-linux with Torch 2.11" in text.stderr, text.stderr
    # Arguments after -- go to pytest: a -k expression, or a test by its node id (then tests/ alone is
    # not added, so only that test runs).
    narrowed, by_name = results_of(kernel, "--", "-k", "not test_that_fails")
    assert narrowed.returncode == 0, narrowed.stdout + narrowed.stderr
    run = by_name["torch211-cxx11-cpu-x86_64-linux"]
    assert run["failures"] == 0 and 0 < run["tests"] < results["torch211-cxx11-cpu-x86_64-linux"]["tests"], run
    one, by_name = results_of(kernel, "--", "tests/test_img2gray.py::test_that_fails", "-x")
    assert one.returncode == 1 and by_name["torch211-cxx11-cpu-x86_64-linux"]["tests"] == 1, one.stdout
    other = run_kbuild("check", kernel, "--", "-x", check=False)
    assert other.returncode == 2 and "only `kbuild test` takes arguments after `--`" in other.stderr
    missing = run_kbuild("test", kernel, "--python", PYTHON, "--variant", "torch215-cxx11-cpu-x86_64-linux", check=False)
    assert missing.returncode == 2 and "is not built" in missing.stderr
    matrix = run_kbuild("test", kernel, "--python", PYTHON, "--matrix", check=False)
    assert matrix.returncode == 2 and "variant torch211-cxx11-cu130-x86_64-linux is not built" in matrix.stderr
    shutil.rmtree(kernel / "build")
    empty = run_kbuild("test", kernel, "--python", PYTHON, check=False)
    assert empty.returncode == 2 and "holds no variants" in empty.stderr


@pytest.mark.slow
@pytest.mark.heavy  # installs Torch 2.15 into a test environment
def test_another_torch_version_gets_an_environment_of_its_own(tmp_path):
    """The Torch 2.15 CPU variant of the matrix, tested with Torch 2.15 from PyPI in a test environment
    that kbuild creates once ($KBUILD_CACHE/test-envs, shared with the user's cache like the
    toolchains) and reuses."""
    kernel = copy_kernel(tmp_path / "img2gray")
    variant = "torch215-cxx11-cpu-x86_64-linux"
    run_kbuild(*build_args(kernel, "--locked", "--variant", variant), timeout=1800)
    result, results = results_of(kernel, "--variant", variant, "--create-env", "--torch-index", "pypi")
    assert result.returncode == 0, result.stdout + result.stderr
    assert results[variant]["status"] == "passed", results
    assert results[variant]["torch"].startswith("2.15.0")
    assert "/test-envs/torch-2.15.0-pypi-" in results[variant]["python"]
    assert results[variant]["tests"] > results[variant]["skipped"]


def test_a_torch_index_without_the_build_means_not_tested_and_an_unreachable_one_an_error(built_kernel, tmp_path):
    """A Python without Torch (the one the test environment was made from) needs a test environment for
    the CPU variant: pip looks for Torch 2.11's CPU build in the Torch index, for real."""
    bare_python = Path(sys.base_prefix) / "bin" / "python3"
    variant = "torch211-cxx11-cpu-x86_64-linux"
    empty = tmp_path / "index"
    (empty / "cpu").mkdir(parents=True)
    args = ["test", built_kernel, "--python", bare_python, "--variant", variant, "--create-env", "--json"]
    missing = run_kbuild(*args, "--torch-index", empty.as_uri() + "/{compute}", check=False, timeout=600)
    (only,) = json.loads(missing.stdout)
    assert only["status"] == "not tested", only
    assert only["reason"].startswith("no Torch 2.11") and f"(cpu) at {empty.as_uri()}/cpu" in only["reason"], only
    assert missing.returncode == 1  # asked for by name and not tested ...
    best = run_kbuild(*args, "--best-effort", "--torch-index", empty.as_uri() + "/{compute}", check=False,
                      timeout=600)
    assert best.returncode == 0, best.stdout + best.stderr  # ... which --best-effort accepts
    unreachable = run_kbuild(*args, "--torch-index", "http://127.0.0.1:9/{compute}", check=False, timeout=600)
    assert unreachable.returncode == 3, unreachable.stdout + unreachable.stderr
    assert "--torch-index" in unreachable.stderr and "127.0.0.1:9/cpu" in unreachable.stderr
    envs = Path(os.environ["KBUILD_CACHE"]) / "test-envs"
    assert not [p.name for p in envs.iterdir() if "2.11" in p.name and "-cpu-" in p.name], "nothing half-made is kept"
