"""The author's daily loop in a project made by `kbuild init`: a failed build never leaves a variant that
check, test or publish vouch for, and tests written for kernel-builder (get_kernel of the kernel's own
repo id, `import <name>`) run unchanged under `kbuild test`, offline."""

import json
import os
import textwrap

import pytest

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


@pytest.mark.slow
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


@pytest.mark.slow
def test_the_python_is_chosen_once_by_environment_or_user_config(tmp_path):
    project = init_cpu_project(tmp_path)
    bare = dict(os.environ, PATH="/usr/bin:/bin", HOME=str(tmp_path / "home"))  # python3 there has no Torch
    bare.pop("KBUILD_PYTHON", None)
    bare.pop("XDG_CONFIG_HOME", None)
    refused = run_kbuild("build", project, check=False, env=bare)
    assert refused.returncode == 3, refused.stdout + refused.stderr
    # KBUILD_PYTHON serves build and test alike.
    with_env = dict(bare, KBUILD_PYTHON=PYTHON)
    assert "kbuild: built" in run_kbuild("build", project, env=with_env).stdout
    tested = run_kbuild("test", project, "--json", env=with_env)
    assert json.loads(tested.stdout)[0]["python"] == PYTHON
    # The user config file, when the environment says nothing; a typo in it is reported with its place.
    config = tmp_path / "home" / ".config" / "kbuild" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'pyhton = "{PYTHON}"\n')
    typo = run_kbuild("build", project, check=False, env=bare)
    assert typo.returncode == 2 and f"{config}:1:1: error: unknown key \"pyhton\"" in typo.stderr, typo.stderr
    config.write_text(f'python = "{PYTHON}"\n')
    assert "no work to do" in run_kbuild("build", project, env=bare).stdout


def test_cuda_archs_restrict_a_local_build_and_publish_refuses_the_partial_variant(tmp_path):
    project = tmp_path / "archs"
    run_kbuild("init", "archs", "--no-ci", cwd=tmp_path)
    out = run_kbuild(*build_args(project, "--backend", "cuda", "--cuda-archs", "9.0", "-v")).stdout
    assert "arch=compute_90,code=sm_90" in out and "compute_80" not in out, out
    assert "CUDA for 9.0 only (--cuda-archs" in out
    cuda_variant = next(p for p in (project / "build").iterdir() if "-cu1" in p.name)
    assert json.loads((cuda_variant / "metadata.json").read_text())["backend"]["archs"] == ["9.0"]
    publish = run_kbuild("publish", project, "--dry-run", "--endpoint", "http://127.0.0.1:9", check=False,
                         env=dict(os.environ, HF_TOKEN="hf_test"))
    assert publish.returncode == 1 and "is built for 9.0 only" in publish.stderr, publish.stderr
    assert "--allow-partial-archs" in publish.stderr
    # A capability the kernel does not declare is refused with what it declares.
    refused = run_kbuild(*build_args(project, "--backend", "cuda", "--cuda-archs", "6.1"), check=False)
    assert refused.returncode == 2 and "none of which is in the architectures asked for" in refused.stderr
    # Back to every declared capability (no GPU here, so "native" means all of them).
    out = run_kbuild(*build_args(project, "--backend", "cuda")).stdout
    assert "CUDA for" not in out
    assert len(json.loads((cuda_variant / "metadata.json").read_text())["backend"]["archs"]) == 10


def test_a_variant_name_that_build_printed_builds_locally(tmp_path):
    project = init_cpu_project(tmp_path)
    out = run_kbuild(*build_args(project, "--variant", CPU_VARIANT)).stdout
    assert f"built {CPU_VARIANT}" in out
    assert not (project / "kbuild.lock").exists()  # a local build pins nothing


def test_cache_stats_and_prune_cover_the_whole_cache(tmp_path):
    cache = tmp_path / "cache"
    env = dict(os.environ, KBUILD_CACHE=str(cache))
    project = init_cpu_project(tmp_path)
    run_kbuild(*build_args(project), env=env)
    stats = json.loads(run_kbuild("cache", "stats", "--json", env=env).stdout)
    assert set(stats["parts"]) == {"objects", "manifests", "toolchains", "downloads", "test-envs", "tmp", "other"}
    assert stats["parts"]["objects"]["entries"] >= 3 and stats["parts"]["manifests"]["entries"] >= 3
    assert stats["total_bytes"] == sum(part["bytes"] for part in stats["parts"].values())
    dry = run_kbuild("cache", "prune", "--max-size", "0", "--dry-run", env=env).stdout
    assert "would remove" in dry and json.loads(run_kbuild("cache", "stats", "--json", env=env).stdout) == stats
    # While a build holds the cache (its shared lock on .in-use), prune does not remove anything.
    import fcntl
    with open(cache / ".in-use", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_SH)
        busy = run_kbuild("cache", "prune", "--max-size", "0", "--no-wait", env=env, check=False)
        assert busy.returncode == 1 and "is using the cache" in busy.stderr, busy.stderr
        assert json.loads(run_kbuild("cache", "stats", "--json", env=env).stdout)["parts"] == stats["parts"]
    pruned = run_kbuild("cache", "prune", "--max-size", "0", env=env).stdout
    assert "freed" in pruned
    after = json.loads(run_kbuild("cache", "stats", "--json", env=env).stdout)
    assert after["parts"]["objects"]["entries"] == 0
