"""kbuild's build.toml reader agrees with kernel-builder's own parser (shipped in the `kernels`
package as kernels._rust.Build) on every file of the test corpus."""

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import PYTHON, ROOT, copy_kernel, run_kbuild

CORPUS = sorted((ROOT / "tests" / "data" / "build_toml").glob("*/*.toml"))


def kernel_builder_accepts(directory: Path) -> bool:
    script = "import sys\nfrom kernels._rust import Build\ntry:\n    Build.open(sys.argv[1])\nexcept ValueError:\n    sys.exit(3)\n"
    return subprocess.run([PYTHON, "-c", script, str(directory)], capture_output=True).returncode == 0


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_same_verdict_as_kernel_builder(path, tmp_path):
    shutil.copy(path, tmp_path / "build.toml")
    result = run_kbuild("config", tmp_path, "--syntax-only", check=False)
    ours = result.returncode == 0
    assert ours == (path.parent.name == "valid"), result.stderr
    if path.stem.startswith("kbuild_ext_"):
        # A documented kbuild extension (docs/build-toml.md, "Differences"): kernel-builder's parser
        # refuses it. Should it start accepting it, the documentation is out of date.
        assert not kernel_builder_accepts(tmp_path)
    elif path.stem.startswith("kbuild_stricter_"):
        # A documented stricter verdict (docs/build-toml.md, "Where kbuild is stricter"): kernel-builder's
        # parser accepts the file, and kernel-builder fails (or builds nothing) later; kbuild refuses it
        # at once, with the position. Should kernel-builder start refusing it, the documentation is out
        # of date.
        assert kernel_builder_accepts(tmp_path)
    else:
        assert ours == kernel_builder_accepts(tmp_path), result.stderr


def test_config_prints_the_effective_model():
    import json

    result = run_kbuild("config", ROOT / "kernels" / "img2gray")
    model = json.loads(result.stdout)
    assert model["general"]["name"] == "img2gray"
    cuda = [k for k in model["kernels"] if k["backend"] == "cuda"][0]
    assert cuda["effective-cuda-capabilities"][-1] == "12.1+PTX"


def test_build_toml_that_is_not_a_small_regular_file_is_refused_at_once(tmp_path):
    import os
    kernel = tmp_path / "k"
    kernel.mkdir()
    os.mkfifo(kernel / "build.toml")  # reading it would block forever
    fifo = run_kbuild("config", kernel, "--syntax-only", check=False, timeout=20)
    assert fifo.returncode == 2 and "not a regular file" in fifo.stderr, fifo.stderr
    (kernel / "build.toml").unlink()
    (kernel / "build.toml").symlink_to("/dev/zero")  # reading it would never end
    zero = run_kbuild("build", kernel, "--python", PYTHON, check=False, timeout=20)
    assert zero.returncode == 2 and "not a regular file" in zero.stderr, zero.stderr
    assert not (kernel / ".kbuild").exists()  # exit 2 wrote nothing


def test_update_build_brings_a_v4_file_to_edition_5_in_place_keeping_comments(tmp_path):
    kernel = copy_kernel(tmp_path / "img2gray", init_git=False)
    toml = kernel / "build.toml"
    v4 = toml.read_text().replace("edition = 5\n", "")
    toml.write_text(v4)
    assert "edition-less (v4)" in run_kbuild("config", kernel).stderr
    dry = run_kbuild("update-build", kernel, "--dry-run")
    assert "edition = 5" in dry.stdout and toml.read_text() == v4  # nothing written
    run_kbuild("update-build", kernel)
    text = toml.read_text()
    assert text.replace("edition = 5\n", "") == v4 and text.startswith("# img2gray:")
    assert "edition-less" not in run_kbuild("config", kernel).stderr
    assert "nothing to do" in run_kbuild("update-build", kernel).stdout


def test_update_build_converts_a_v3_file_as_kernel_builder_does(tmp_path):
    kernel = copy_kernel(tmp_path / "img2gray", init_git=False)
    toml = kernel / "build.toml"
    v3 = toml.read_text().replace("edition = 5\n", "").replace("version = 1\n", "")
    toml.write_text(v3)
    refused = run_kbuild("config", kernel, check=False)
    assert refused.returncode == 2 and "kbuild update-build" in refused.stderr, refused.stderr
    assert not kernel_builder_accepts(kernel)  # kernel-builder loads no v3 file either
    run_kbuild("update-build", kernel)
    text = toml.read_text()
    assert text.replace("edition = 5\nversion = 1\n", "") == v3 and text.startswith("# img2gray:")
    run_kbuild("config", kernel)
    assert kernel_builder_accepts(kernel)
    # Without a license there is nothing to convert to: kernel-builder's verdict.
    toml.write_text(v3.replace('license = "Apache-2.0"\n', ""))
    no_license = run_kbuild("update-build", kernel, check=False)
    assert no_license.returncode == 2 and "`license` key is required" in no_license.stderr, no_license.stderr


def test_deep_toml_is_a_positioned_error_not_a_crash(tmp_path):
    """toml++ recurses per key part and nesting level: a 50,000-part key crashed kbuild (SIGSEGV)."""
    deep_key = "a" + ".a" * 50_000 + " = 1\n"
    (tmp_path / "build.toml").write_text('[general]\nname = "x"\n' + deep_key)
    config = run_kbuild("config", tmp_path, check=False, timeout=60)
    assert config.returncode == 2 and "build.toml:3:" in config.stderr and "dotted key" in config.stderr
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.kernels.dependencies]\n' + deep_key)
    lock = run_kbuild("lock", tmp_path, check=False, timeout=60)
    assert lock.returncode == 2 and "pyproject.toml:4:" in lock.stderr, lock.stderr
    (tmp_path / "build.toml").write_text('[general]\nname = "x"\nx = ' + "[" * 50_000 + "]" * 50_000 + "\n")
    nested = run_kbuild("config", tmp_path, check=False, timeout=60)
    assert nested.returncode == 2 and "nested" in nested.stderr, nested.stderr
