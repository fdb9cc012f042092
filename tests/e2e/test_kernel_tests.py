"""`kbuild test`: the kernel's own tests against each built variant, with the Torch that variant was
built for (the test environment's Torch 2.11 for torch211 variants; a test environment of its own,
created by kbuild from PyPI, for the others)."""

import json
import shutil
import subprocess

import pytest

from conftest import PYTHON, build_args, copy_kernel, run_kbuild

pytestmark = pytest.mark.slow  # they compile kernels (pytest.ini)


def results_of(kernel, *args):
    result = run_kbuild("test", kernel, "--python", PYTHON, "--json", *args, check=False, timeout=3600)
    return result, {r["variant"]: r for r in json.loads(result.stdout)} if result.stdout.strip() else {}


def test_each_local_variant_passes_its_tests_with_its_torch(built_kernel):
    result, results = results_of(built_kernel)
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
    result, results = results_of(kernel, "--variant", variant, "--create-env")
    assert result.returncode == 0, result.stdout + result.stderr
    assert results[variant]["status"] == "passed", results
    assert results[variant]["torch"].startswith("2.15.0")
    assert "/test-envs/torch-2.15.0-" in results[variant]["python"]
    assert results[variant]["tests"] > results[variant]["skipped"]
