"""kbuild init scaffolds a project that builds, checks and passes its own tests."""

import subprocess

import pytest

from conftest import PYTHON, build_args, run_kbuild


@pytest.mark.slow
def test_init_project_builds_and_its_tests_pass(tmp_path):
    result = run_kbuild("init", "my-relu", cwd=tmp_path)
    project = tmp_path / "my-relu"
    assert "created" in result.stdout
    assert (project / "torch-ext" / "my_relu" / "__init__.py").is_file()
    assert (project / ".gitignore").read_text().startswith("build/")
    run_kbuild(*build_args(project))
    run_kbuild("check", project)
    tests = subprocess.run([PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=project,
                           capture_output=True, text=True)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "passed" in tests.stdout


def test_init_refuses_bad_names_and_non_empty_directories(tmp_path):
    result = run_kbuild("init", "My_Kernel", cwd=tmp_path, check=False)
    assert result.returncode == 2 and "not a valid kernel name" in result.stderr
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "file").write_text("keep me")
    result = run_kbuild("init", "ok-name", "taken", cwd=tmp_path, check=False)
    assert result.returncode == 2 and "not empty" in result.stderr
    assert (tmp_path / "taken" / "file").read_text() == "keep me"


def test_help_lists_the_commands_and_exit_codes():
    result = run_kbuild("--help")
    for command in ("init", "build", "check", "clean", "config"):
        assert f"  {command}" in result.stdout
    assert "Exit codes" in result.stdout
    result = run_kbuild("frobnicate", check=False)
    assert result.returncode == 2
