"""kbuild init scaffolds a project that builds, checks and passes its own tests."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import PYTHON, build_args, run_kbuild


@pytest.mark.slow
def test_init_project_builds_and_its_tests_pass(tmp_path):
    result = run_kbuild("init", "my-relu", cwd=tmp_path)
    project = tmp_path / "my-relu"
    assert "created" in result.stdout
    # With the CI workflow comes kbuild.lock (the workflow builds --locked), staged, on branch main.
    assert "kbuild.lock pins the toolchains" in result.stdout, result.stdout + result.stderr
    lock = json.loads((project / "kbuild.lock").read_text())
    assert {"gcc-12.2", "torch-2.15"} <= set(lock["toolchains"]), lock["toolchains"].keys()
    staged = subprocess.run(["git", "-C", project, "diff", "--cached", "--name-only"], capture_output=True, text=True,
                            check=True).stdout.split()
    assert "kbuild.lock" in staged, staged
    branch = subprocess.run(["git", "-C", project, "symbolic-ref", "HEAD"], capture_output=True, text=True, check=True)
    assert branch.stdout.strip() == "refs/heads/main"
    assert (project / "torch-ext" / "my_relu" / "__init__.py").is_file()
    assert (project / ".gitignore").read_text().startswith("build/")
    run_kbuild(*build_args(project))
    run_kbuild("check", project)
    # Editors find the compile commands through the scaffold's .clangd.
    assert "CompilationDatabase: .kbuild" in (project / ".clangd").read_text()
    database = json.loads((project / ".kbuild" / "compile_commands.json").read_text())
    files = {entry["file"] for entry in database}
    assert str(project / "torch-ext" / "torch_binding.cpp") in files
    assert all(entry["directory"] == str(project) and entry["arguments"] for entry in database)
    tests = subprocess.run([PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=project,
                           capture_output=True, text=True)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "passed" in tests.stdout
    # The benchmark scaffold is what `kernels benchmark` discovers and runs (its CLI picks the GPU
    # when torch is a CUDA build, so it is driven here the way the CLI drives it, on the CPU).
    bench = subprocess.run([PYTHON, "-c", BENCHMARK_RUN, project], capture_output=True, text=True)
    assert bench.returncode == 0 and "verified relu" in bench.stdout, bench.stdout + bench.stderr


BENCHMARK_RUN = r"""
import sys, torch
from pathlib import Path
from kernels import get_local_kernel
from kernels.cli.benchmark import discover_benchmark_classes
project = Path(sys.argv[1])
(cls,) = discover_benchmark_classes(project / "benchmarks" / "benchmark.py", project)
bench = cls()
bench.kernel, bench.device = get_local_kernel(project, backend="cpu"), "cpu"
bench.setup()
bench.benchmark_relu()
assert torch.allclose(bench.out, bench.verify_relu())
print("verified relu")
"""


def test_init_creates_a_git_repository_unless_told_not_to_and_takes_a_license(tmp_path):
    result = run_kbuild("init", "with-git", "--license", "MIT", "--no-lock", cwd=tmp_path)
    assert "git repository" in result.stdout
    staged = subprocess.run(["git", "-C", tmp_path / "with-git", "diff", "--cached", "--name-only"],
                            capture_output=True, text=True, check=True).stdout.split()
    assert "build.toml" in staged and ".clangd" in staged
    # The CI fan-out workflow comes with the project, staged, and passes the GitHub workflow schema.
    workflow = tmp_path / "with-git" / ".github" / "workflows" / "kbuild-with-git.yml"
    assert ".github/workflows/kbuild-with-git.yml" in staged
    lint = subprocess.run([str(Path(PYTHON).parent / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows",
                           str(workflow)], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert 'license = "MIT"' in (tmp_path / "with-git" / "build.toml").read_text()
    run_kbuild("config", tmp_path / "with-git")
    run_kbuild("init", "no-git", "--no-git", "--no-ci", cwd=tmp_path)
    assert not (tmp_path / "no-git" / ".git").exists() and not (tmp_path / "no-git" / ".github").exists()
    bad = run_kbuild("init", "bad-license", "--license", 'MIT"\n', cwd=tmp_path, check=False)
    assert bad.returncode == 2 and not (tmp_path / "bad-license").exists()


@pytest.mark.slow
def test_a_cpu_only_project_builds_one_variant_and_its_tests_pass(tmp_path):
    run_kbuild("init", "cpu-relu", "--backends", "cpu", "--no-lock", cwd=tmp_path)
    project = tmp_path / "cpu-relu"
    assert not (project / "cpu_relu_cuda").exists()
    built = run_kbuild(*build_args(project))
    assert sorted(p.name for p in (project / "build").iterdir()) == ["torch211-cxx11-cpu-x86_64-linux"], built.stdout
    tests = subprocess.run([PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=project,
                           capture_output=True, text=True)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "passed" in tests.stdout and "skipped" not in tests.stdout
    # Without an owner the repo id is a placeholder, which publish names instead of failing on the Hub.
    placeholder = run_kbuild("publish", project, "--tag", "v1.0.0", "--dry-run", check=False,
                             env=dict(os.environ, HF_TOKEN="hf_" + "x" * 30))
    assert placeholder.returncode == 2 and "init's placeholder \"your-org/cpu-relu\"" in placeholder.stderr
    assert "OWNER/cpu-relu" in placeholder.stderr
    # One step fixes it: the repository id is not a build input, so the build stays current.
    build_toml = project / "build.toml"
    build_toml.write_text(build_toml.read_text().replace("your-org/cpu-relu", "alice/cpu-relu"))
    checked = run_kbuild("check", project)
    assert ": ok" in checked.stdout and "changed" not in checked.stdout + checked.stderr
    # Publishing goes on to the Hub (none here: port 9 refuses), neither placeholder nor stale build said.
    fixed = run_kbuild("publish", project, "--tag", "v1.0.0", "--dry-run", check=False,
                       env=dict(os.environ, HF_TOKEN="hf_" + "x" * 30, HF_ENDPOINT="http://127.0.0.1:9"))
    assert fixed.returncode == 4 and "alice/cpu-relu" in fixed.stderr, fixed.stderr
    assert "placeholder" not in fixed.stderr and "changed" not in fixed.stderr
    refused = run_kbuild("init", "rocm-relu", "--backends", "cpu,rocm", cwd=tmp_path, check=False)
    assert refused.returncode == 2 and "not \"rocm\"" in refused.stderr and not (tmp_path / "rocm-relu").exists()


def test_init_takes_the_name_as_an_option_too(tmp_path):
    run_kbuild("init", tmp_path / "somewhere", "--name", "named-relu", "--no-git", "--no-ci")
    assert 'name = "named-relu"' in (tmp_path / "somewhere" / "build.toml").read_text()
    run_kbuild("init", "--name", "here-relu", "--no-git", "--no-ci", cwd=tmp_path)
    assert (tmp_path / "here-relu" / "build.toml").is_file()
    # No name: the current directory's, scaffolded there; refused here (the directory has files).
    busy = tmp_path / "busy-relu"
    busy.mkdir()
    (busy / "file").write_text("x")
    nameless = run_kbuild("init", cwd=busy, check=False)
    assert nameless.returncode == 2 and "not empty" in nameless.stderr and "--overwrite" in nameless.stderr


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


def test_init_speaks_kernel_builders_spellings(tmp_path):
    # --name OWNER/REPO (the repository id too), --backends as separate words.
    run_kbuild("init", "--name", "drbh/my-relu", "--backends", "cpu", "cuda", "--no-ci", "--no-git", cwd=tmp_path)
    toml = (tmp_path / "my-relu" / "build.toml").read_text()
    assert 'repo-id = "drbh/my-relu"' in toml and 'backends = ["cpu", "cuda"]' in toml
    run_kbuild("init", "other", "--backends", "all", "--no-ci", "--no-git", cwd=tmp_path)
    assert 'backends = ["cpu", "cuda"]' in (tmp_path / "other" / "build.toml").read_text()
    refused = run_kbuild("init", "third", "--backends", "cpu", "metal", cwd=tmp_path, check=False)
    assert refused.returncode == 2 and 'not "metal"' in refused.stderr and not (tmp_path / "third").exists()
    # No name in an empty directory: the directory's name, scaffolded there.
    here = tmp_path / "from-cwd"
    here.mkdir()
    out = run_kbuild("init", "--no-ci", "--no-git", cwd=here).stdout
    assert f"created {here} " in out and 'name = "from-cwd"' in (here / "build.toml").read_text()
    # --overwrite writes into a directory that has files, replacing only same-named ones.
    (here / "notes.txt").write_text("keep me")
    (here / "build.toml").write_text("broken")
    assert run_kbuild("init", "--no-ci", "--no-git", cwd=here, check=False).returncode == 2
    run_kbuild("init", "--no-ci", "--no-git", "--overwrite", cwd=here)
    assert (here / "notes.txt").read_text() == "keep me" and 'name = "from-cwd"' in (here / "build.toml").read_text()
    # The scaffold follows kbuild's own reproducibility rule (no anonymous namespace in .cu files) and
    # its README names kbuild test.
    cu = next((tmp_path / "my-relu").rglob("*.cu")).read_text()
    assert "namespace {" not in cu and "kbuild test" in (tmp_path / "my-relu" / "README.md").read_text()


@pytest.mark.slow
@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the baseline version checked is x86_64's (GLIBC_2.2.5)")
def test_dl_functions_link_to_their_baseline_glibc_versions(tmp_path):
    # glibc 2.34 versioned dlopen/dlsym/dlclose/dlerror anew; CUDA 13's CCCL headers call them
    # (megablocks' CUB sort), Torch's stable headers dlsym. A library needing the 2.34 versions fails
    # the manylinux_2_28 check (exit 1, nothing installed), so kbuild wraps them at link time.
    run_kbuild("init", "dl-user", "--backends", "cpu", "--no-git", "--no-ci", cwd=tmp_path)
    project = tmp_path / "dl-user"
    source = next((project / "dl_user_cpu").glob("*.cpp"))
    source.write_text(source.read_text() + """
#include <dlfcn.h>
extern "C" const char* dl_user_probe() {
  void* self = dlopen(nullptr, RTLD_NOW);
  void* symbol = self ? dlsym(self, "malloc") : nullptr;
  if (self) dlclose(self);
  return symbol ? "found" : dlerror();
}
""")
    run_kbuild(*build_args(project))
    library = next((project / "build").glob("torch*-cpu-*/_dl_user_cpu_*.so"))
    symbols = subprocess.run(["objdump", "-T", library], capture_output=True, text=True, check=True).stdout
    versions = {line.split()[-1]: line.split()[-2] for line in symbols.splitlines() if line.split()[-1:] and
                line.split()[-1] in ("dlopen", "dlsym", "dlclose", "dlerror")}
    assert versions == dict.fromkeys(["dlopen", "dlsym", "dlclose", "dlerror"], "(GLIBC_2.2.5)"), symbols


def test_the_owner_comes_from_the_hub_token_and_a_silent_hub_costs_seconds(tmp_path):
    import socket
    import time

    from conftest import hub_server
    root = tmp_path / "hub"
    root.mkdir()
    (root / "config.toml").write_text('[[tokens]]\ntoken = "hf_init_owner_token_0123456789"\nuser = "alice"\n')
    env = dict(os.environ, HF_HOME=str(tmp_path / "hf-home"), HF_TOKEN="hf_init_owner_token_0123456789")
    with hub_server(root) as url:
        result = run_kbuild("init", "owned", "--no-lock", cwd=tmp_path, env=dict(env, HF_ENDPOINT=url))
    assert 'repo-id = "alice/owned"' in (tmp_path / "owned" / "build.toml").read_text()
    assert "alice/owned (the owner of your Hub token" in result.stdout
    # A Hub that accepts the connection and never answers: the placeholder after the 3 s deadline.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        start = time.monotonic()
        result = run_kbuild("init", "unowned", "--no-lock", cwd=tmp_path,
                            env=dict(env, HF_ENDPOINT=f"http://127.0.0.1:{silent.getsockname()[1]}"))
        elapsed = time.monotonic() - start
    assert 'repo-id = "your-org/unowned"' in (tmp_path / "unowned" / "build.toml").read_text()
    assert "set the owner" in result.stdout and elapsed < 6, elapsed
    # No token: no request at all, the placeholder.
    no_token = {k: v for k, v in env.items() if k != "HF_TOKEN"}
    run_kbuild("init", "anonymous", "--no-lock", cwd=tmp_path, env=dict(no_token, HF_ENDPOINT="http://127.0.0.1:9"))
    assert 'repo-id = "your-org/anonymous"' in (tmp_path / "anonymous" / "build.toml").read_text()
