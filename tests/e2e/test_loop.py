"""The author's daily loop in a project made by `kbuild init`: a failed build never leaves a variant that
check, test or publish vouch for, and tests written for kernel-builder (get_kernel of the kernel's own
repo id, `import <name>`) run unchanged under `kbuild test`, offline."""

import json
import os
import textwrap

from conftest import PYTHON, build_args, run_kbuild

CPU_VARIANT = "torch211-cxx11-cpu-x86_64-linux"


def init_cpu_project(tmp_path, name="loop-relu"):
    run_kbuild("init", name, "--backends", "cpu", "--no-ci", cwd=tmp_path)
    return tmp_path / name


def test_after_a_failed_build_check_test_and_publish_refuse_the_stale_variant(tmp_path):
    project = init_cpu_project(tmp_path)
    run_kbuild(*build_args(project))
    assert "ok" in run_kbuild("check", project).stdout
    source = project / "loop_relu_cpu" / "loop_relu_cpu.cpp"
    good = source.read_text()
    source.write_text(good + "\nint broken(  // a syntax error\n")
    failed = run_kbuild(*build_args(project), check=False)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert (project / "build" / CPU_VARIANT / "metadata.json").exists()  # the last good build is still there

    check = run_kbuild("check", project, check=False)
    assert check.returncode == 1, check.stdout + check.stderr
    assert f"{CPU_VARIANT}: error: older than the sources:" in check.stdout, check.stdout
    assert "ok" not in check.stdout
    lenient = run_kbuild("check", project, "--allow-stale", check=False)
    assert lenient.returncode == 0 and f"{CPU_VARIANT}: warning: older than the sources" in lenient.stdout

    test = run_kbuild("test", project, "--python", PYTHON, check=False)
    assert test.returncode == 1, test.stdout + test.stderr
    assert "its last build did not finish" in test.stderr and "passed" not in test.stdout

    # Refused before any request: the endpoint is a closed port.
    publish = run_kbuild("publish", project, "--dry-run", "--endpoint", "http://127.0.0.1:9", check=False,
                         env=dict(os.environ, HF_TOKEN="hf_test"))
    assert publish.returncode == 1, publish.stdout + publish.stderr
    assert "kbuild publish refuses it" in publish.stderr and "--allow-stale" in publish.stderr

    # Undoing the edit is not enough (the variant's last build did not finish); building again is.
    source.write_text(good)
    assert run_kbuild("check", project, check=False).returncode == 1
    run_kbuild(*build_args(project))
    assert f"{CPU_VARIANT}: ok" in run_kbuild("check", project).stdout


def test_kernel_builder_style_tests_run_offline_under_kbuild_test(tmp_path):
    project = init_cpu_project(tmp_path)
    repo_id = "kbuild-tests/loop-relu"
    build_toml = project / "build.toml"
    build_toml.write_text(build_toml.read_text().replace('repo-id = "your-org/loop-relu"', f'repo-id = "{repo_id}"'))
    (project / "tests" / "test_hub_style.py").write_text(textwrap.dedent(f"""\
        # As kernel-builder's documentation writes tests: the kernel from its repo id, and its package.
        import kernels
        import torch

        relu = kernels.get_kernel("{repo_id}", version=1)


        def test_relu_through_get_kernel():
            x = torch.randn(64, 17)
            torch.testing.assert_close(relu.relu(x), torch.relu(x))


        def test_the_package_is_importable_by_name():
            # (not imported: get_kernel above already registered its ops in this process)
            import importlib.util, os
            spec = importlib.util.find_spec("loop_relu")
            assert os.path.realpath(spec.origin) == os.path.join(os.environ["KBUILD_TEST_VARIANT_DIR"], "__init__.py")
        """))
    run_kbuild(*build_args(project))
    # No Hub anywhere: a request to it would fail the test.
    env = dict(os.environ, HF_ENDPOINT="http://127.0.0.1:9")
    result = run_kbuild("test", project, "--python", PYTHON, "--json", check=False, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    (variant,) = json.loads(result.stdout)
    assert variant["status"] == "passed" and variant["failures"] == variant["errors"] == 0, variant
    assert variant["tests"] >= 4
