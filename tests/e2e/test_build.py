"""kbuild build on kernels/img2gray: layout, loading through `kernels`, incremental behaviour,
diagnostics, failures and interrupts."""

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import KBUILD, PYTHON, ROOT, build_args, copy_kernel, git, run_kbuild, source_id, variant_dirs

pytestmark = pytest.mark.slow

CPU_VARIANT = "torch211-cxx11-cpu-x86_64-linux"
CUDA_VARIANT = "torch211-cxx11-cu130-x86_64-linux"


def test_builds_both_variants_with_the_exact_layout(built_kernel):
    assert [p.name for p in variant_dirs(built_kernel)] == [CPU_VARIANT, CUDA_VARIANT]
    unique = source_id(built_kernel)
    head = git("rev-parse", "HEAD", cwd=built_kernel)
    for variant, backend in ((CPU_VARIANT, "cpu"), (CUDA_VARIANT, "cuda")):
        path = built_kernel / "build" / variant
        ops_id = f"_img2gray_{backend}_{unique}"
        files = sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file())
        assert files == sorted(["__init__.py", "_ops.py", f"{ops_id}.abi3.so", "metadata.json"])
        metadata = json.loads((path / "metadata.json").read_text())
        assert list(metadata) == ["name", "id", "version", "license", "python-depends", "kernel-depends", "backend",
                                  "digest", "provenance", "toolchain"]
        # A local build records the system compiler and the Python's Torch (by kind, not by path).
        toolchain = metadata["toolchain"]
        assert toolchain["compiler"].startswith("gcc ") and toolchain["compiler-origin"] == "system"
        assert "host-packages" not in toolchain and toolchain["torch-origin"] == "python"
        assert ("cuda" in toolchain) == (backend == "cuda")
        assert metadata["id"] == ops_id
        assert metadata["name"] == "img2gray" and metadata["version"] == 1
        assert metadata["backend"]["type"] == backend
        assert metadata["provenance"]["kernel"] == {"commit": head, "dirty": False}
        assert metadata["provenance"]["kernel-builder"]["version"].startswith("kbuild/")
        if backend == "cuda":
            assert metadata["backend"]["archs"] == sorted(
                ["7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "11.0", "12.0", "12.1+PTX"])
        else:
            assert "archs" not in metadata["backend"]
        ops = (path / "_ops.py").read_text()
        assert f"from . import {ops_id}" in ops and f"ops = torch.ops.{ops_id}" in ops
        assert (path / "__init__.py").read_bytes() == (ROOT / "kernels/img2gray/torch-ext/img2gray/__init__.py").read_bytes()
    assert not list(built_kernel.rglob("*.tmp")), "temporary files left behind"


def test_metadata_and_digest_pass_the_kernels_parser(built_kernel):
    """The real `kernels` package parses the metadata and re-hashes the variant to the same digest."""
    script = r"""
import sys
from kernels._rust import Digest, Metadata
for path in sys.argv[1:]:
    metadata = Metadata.read_from_file(path + "/metadata.json")
    metadata.digest.validate(Digest.hash_variant(metadata.digest.algorithm, path))
    print(metadata.id, metadata.backend.backend_type)
"""
    paths = [str(p) for p in variant_dirs(built_kernel)]
    out = subprocess.run([PYTHON, "-c", script, *paths], check=True, capture_output=True, text=True).stdout
    assert out.split() == [f"_img2gray_cpu_{source_id(built_kernel)}", "cpu",
                           f"_img2gray_cuda_{source_id(built_kernel)}", "cuda"]


def test_kernel_tests_pass_against_the_build(built_kernel):
    """The kernel's own test-suite (torchvision parity over dtypes, layouts, odd and empty shapes;
    opcheck; torch.compile fullgraph; gradients) against both variants, loaded with get_local_kernel."""
    env = dict(os.environ, IMG2GRAY_KERNEL_DIR=str(built_kernel))
    result = subprocess.run([PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(built_kernel / "tests")],
                            env=env, capture_output=True, text=True, cwd=built_kernel)
    assert result.returncode == 0, result.stdout + result.stderr
    passed = int(re.search(r"(\d+) passed", result.stdout).group(1))
    assert passed >= 50, result.stdout


def test_kernel_tests_fail_when_nothing_was_built(tmp_path):
    """An empty build/ must not pass the kernel's test suite: missing variants fail, they are not skipped."""
    kernel = copy_kernel(tmp_path / "unbuilt")
    env = dict(os.environ, IMG2GRAY_KERNEL_DIR=str(kernel))
    result = subprocess.run([PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", str(kernel / "tests")],
                            env=env, capture_output=True, text=True, cwd=kernel)
    assert result.returncode != 0, result.stdout
    assert "variant was not built" in result.stdout, result.stdout


def test_cuda_variant_loads_on_a_cpu_machine_with_cuda_kernels_registered(built_kernel):
    script = r"""
import sys, torch
from pathlib import Path
import kernels
k = kernels.get_local_kernel(Path(sys.argv[1]), backend="cuda")
name = k.__name__ + "::img2gray"
print(k.__file__)
print(torch._C._dispatch_has_kernel_for_dispatch_key(name, "CUDA"),
      torch._C._dispatch_has_kernel_for_dispatch_key(name, "CPU"))
"""
    out = subprocess.run([PYTHON, "-c", script, str(built_kernel)], check=True, capture_output=True, text=True).stdout
    lines = out.splitlines()
    assert CUDA_VARIANT in lines[0]
    assert lines[1] == "True True"


def test_cpu_variant_has_no_cuda_kernel(built_kernel):
    script = r"""
import sys, torch
from pathlib import Path
import kernels
k = kernels.get_local_kernel(Path(sys.argv[1]), backend="cpu")
print(torch._C._dispatch_has_kernel_for_dispatch_key(k.__name__ + "::img2gray", "CUDA"))
"""
    out = subprocess.run([PYTHON, "-c", script, str(built_kernel)], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "False"


def test_json_output_is_the_summary_alone(built_kernel):
    result = run_kbuild(*build_args(built_kernel, "--json"))
    outcome = json.loads(result.stdout)  # nothing else on stdout: no progress lines
    assert outcome["up_to_date"] is True and outcome["jobs_run"] == 0
    assert sorted(outcome["variants"]) == sorted([CPU_VARIANT, CUDA_VARIANT])
    assert outcome["output"] == str(built_kernel / "build")


def _files_and_inodes(kernel):
    # .kbuild too: a no-op build rewrites none of its state (only the lock file's owner line, in place).
    paths = [*(kernel / "build").rglob("*"), *(p for p in (kernel / ".kbuild").rglob("*") if p.name != "lock")]
    return {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in paths}


def test_no_op_rebuild_does_nothing(built_kernel):
    before = _files_and_inodes(built_kernel)
    result = run_kbuild(*build_args(built_kernel))
    assert result.stdout.startswith("kbuild: no work to do"), result.stdout
    # -j only changes how many commands (and nvcc threads) run at once, not what they produce.
    result = run_kbuild(*build_args(built_kernel, "-j", "1"))
    assert result.stdout.startswith("kbuild: no work to do"), result.stdout
    result = run_kbuild(*build_args(built_kernel, "-q"))
    assert result.stdout == "" and result.stderr == "", result
    assert _files_and_inodes(built_kernel) == before


def rebuilt_jobs(stdout):
    return re.findall(r"^\[\d+/\d+\] (\S+ \S+)", stdout, re.M)


def test_touched_cu_rebuilds_only_what_depends_on_it(kernel_copy):
    run_kbuild(*build_args(kernel_copy))
    cu = kernel_copy / "img2gray_cuda" / "img2gray.cu"
    os.utime(cu)  # `touch`: same content, new mtime (git still sees a clean tree)
    result = run_kbuild(*build_args(kernel_copy, "--explain", "--no-cache"))  # real commands: their memory
    names = rebuilt_jobs(result.stdout)
    assert len(names) == 3, result.stdout
    assert names[0] == "CUDA img2gray_cuda/img2gray.cu"
    assert names[1].startswith("LINK _img2gray_cuda_")
    assert names[2] == f"INSTALL build/{CUDA_VARIANT}"
    assert "img2gray.cu changed" in result.stdout
    # The trace of that build: one complete event per job on its slot, the phases on thread 0.
    trace = json.loads((kernel_copy / ".kbuild" / "trace.json").read_text())
    jobs = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["tid"] > 0]
    assert [e["name"].split("  [")[0] for e in sorted(jobs, key=lambda e: e["ts"])] == names
    assert all(e["args"]["success"] and e["dur"] > 0 for e in jobs)
    cuda = next(e for e in jobs if e["cat"] == "CUDA")
    link = next(e for e in jobs if e["cat"] == "LINK")
    assert link["ts"] >= cuda["ts"] + cuda["dur"]  # the link waited for its object
    # Each command's peak memory (wait4: what the compiler driver waited for included); none for a job
    # restored from the compile cache or run in kbuild's own process (INSTALL).
    for event in jobs:
        ran_a_command = event["cat"] in ("CUDA", "CXX", "LINK") and not event["args"]["cache_hit"]
        assert (event["args"]["peak_rss_mib"] > 1) == ran_a_command, jobs
    assert cuda["args"]["peak_rss_mib"] > 50 and link["args"]["peak_rss_mib"] > 1, (cuda, link)
    # A no-op with --timings: phases and the staleness check measured, the trace left as it was.
    outcome = json.loads(run_kbuild(*build_args(kernel_copy, "--timings", "--json")).stdout)
    timings = outcome["timings"]
    assert [p["name"] for p in timings["phases"]] == ["config", "ops check", "lock", "variants", "plan", "execute"]
    assert timings["files_checked"] > 10 and timings["trace"] is None
    assert sum(p["seconds"] for p in timings["phases"]) <= outcome["seconds"] + 1e-6
    text = run_kbuild(*build_args(kernel_copy, "--timings")).stdout
    assert re.search(r"^kbuild: timings: config [\d.]+ ms, .* over \d+ files\)$", text, re.M), text


def test_edited_cu_rebuilds_it_and_the_bindings_that_name_the_ops_id(tmp_path):
    # The edit gives a new ops id (a digest of the sources): the binding, which names
    # TORCH_EXTENSION_NAME, is recompiled in both variants; no other unit is.
    kernel = copy_kernel(tmp_path / "img2gray", init_git=False)
    run_kbuild(*build_args(kernel))
    cu = kernel / "img2gray_cuda" / "img2gray.cu"
    cu.write_text(cu.read_text() + "\n// edited\n")
    result = run_kbuild(*build_args(kernel, "--explain"))
    compiled = sorted(job for job in rebuilt_jobs(result.stdout) if job.split()[0] in ("CXX", "CUDA"))
    assert compiled == ["CUDA img2gray_cuda/img2gray.cu", "CXX torch-ext/torch_binding.cpp",
                        "CXX torch-ext/torch_binding.cpp"], result.stdout
    assert "torch_binding.cpp names TORCH_EXTENSION_NAME" in result.stdout


def test_changed_header_rebuilds_its_includers(tmp_path):
    kernel = copy_kernel(tmp_path / "img2gray", init_git=False)
    run_kbuild(*build_args(kernel))
    header = kernel / "include" / "img2gray" / "launch.h"
    header.write_text(header.read_text() + "\n// edited\n")
    out = run_kbuild(*build_args(kernel)).stdout
    compiled = [job for job in rebuilt_jobs(out) if job.split()[0] in ("CXX", "CUDA")]
    # Every translation unit includes launch.h: all five are rebuilt, nothing else is compiled.
    assert len(compiled) == 5, out


def test_invalid_build_toml_reports_every_problem_and_writes_nothing(kernel_copy):
    (kernel_copy / "build.toml").write_text(
        '[general]\nname = "Img2Gray"\nversion = 1\nedition = 5\nlicense = "Apache-2.0"\n'
        'backends = ["cpu", "cuda", "metl"]\n\n[torch]\nsrc = ["torch-ext/missing.cpp"]\n\n'
        '[kernel.gray]\nbackend = "cuda"\ndepends = ["torch"]\nsrc = ["img2gray_cuda/img2gray.cu"]\n'
        'cuda-capabilites = ["9.0"]\n')
    result = run_kbuild(*build_args(kernel_copy), check=False)
    assert result.returncode == 2
    stderr = result.stderr
    build_toml = str(kernel_copy / "build.toml")
    for expected in (f"{build_toml}:2:8: error: general.name", f"{build_toml}:6:28: error: unknown backend \"metl\"",
                     f"{build_toml}:9:8: error: source file \"torch-ext/missing.cpp\" does not exist",
                     f"{build_toml}:15:1: error: unknown key \"cuda-capabilites\" in [kernel.gray]",
                     'hint: did you mean "cuda-capabilities"?', "kbuild: error:"):
        assert expected in stderr, stderr
    assert not (kernel_copy / ".kbuild").exists()
    assert not (kernel_copy / "build").exists()


def test_missing_source_file_is_reported_with_its_location(kernel_copy):
    (kernel_copy / "img2gray_cuda" / "img2gray.cu").unlink()
    result = run_kbuild(*build_args(kernel_copy), check=False)
    assert result.returncode == 2
    assert re.search(r"build.toml:\d+:\d+: error: source file \"img2gray_cuda/img2gray.cu\" does not exist",
                     result.stderr), result.stderr


def test_failing_compile_shows_command_and_output_and_keep_going(kernel_copy):
    cu = kernel_copy / "img2gray_cuda" / "img2gray.cu"
    cu.write_text(cu.read_text() + "\nthis is not C++;\n")
    result = run_kbuild(*build_args(kernel_copy, "-j", "1"), check=False)
    assert result.returncode == 1
    # Diagnostics on stderr (docs/cli.md, "Streams"); the ~1,400-character command only with -v.
    assert "FAILED: CUDA img2gray_cuda/img2gray.cu" in result.stderr
    assert "error" in result.stderr and "error" not in result.stdout  # the compiler's output
    assert "-gencode" not in result.stderr
    assert "kbuild: error: build failed: 1 job failed" in result.stderr
    verbose = run_kbuild(*build_args(kernel_copy, "-j", "1", "-v"), check=False)
    assert "nvcc" in verbose.stderr and "-gencode" in verbose.stderr  # the command
    # --json: stdout is one JSON document, the error, even when the build fails.
    as_json = run_kbuild(*build_args(kernel_copy, "-j", "1", "--json"), check=False)
    assert as_json.returncode == 1
    assert json.loads(as_json.stdout)["error"]["kind"] == "failure", as_json.stdout
    assert json.loads(as_json.stdout)["error"]["hint"].startswith("fix the first error"), as_json.stdout
    assert not list(kernel_copy.rglob("*.tmp"))
    # --keep-going still builds the CPU variant, which does not depend on the broken file.
    result = run_kbuild(*build_args(kernel_copy, "--keep-going", "--json"), check=False)
    assert result.returncode == 1
    assert json.loads(result.stdout)["error"]["hint"].startswith("fix the errors above"), result.stdout
    assert (kernel_copy / "build" / CPU_VARIANT / "metadata.json").is_file()
    assert not (kernel_copy / "build" / CUDA_VARIANT).exists()


def test_interrupt_stops_children_and_leaves_no_partial_output(kernel_copy):
    process = subprocess.Popen([str(KBUILD), *build_args(kernel_copy, "-j", "2", "--no-cache")], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    # Wait until two compilers are running, then interrupt like Ctrl-C does.
    started = [process.stdout.readline() for _ in range(3)]
    assert any("CXX" in line or "CUDA" in line for line in started), started
    time.sleep(1.0)
    running = subprocess.run(["pgrep", "-f", "-c", str(kernel_copy)], capture_output=True, text=True).stdout.strip()
    assert int(running or 0) >= 2, "no compiler running"
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stdout + stderr
    assert "interrupted" in stderr
    assert not list(kernel_copy.rglob("*.tmp")), "partial outputs left behind"
    for child in subprocess.run(["pgrep", "-f", str(kernel_copy)], capture_output=True, text=True).stdout.split():
        pytest.fail(f"compiler process {child} survived the interrupt")
    assert not (kernel_copy / "build").exists() or all(
        (v / "metadata.json").is_file() for v in (kernel_copy / "build").iterdir())
    # The next build finishes the job.
    assert "kbuild: built" in run_kbuild(*build_args(kernel_copy)).stdout


def test_verbose_prints_every_command(kernel_copy):
    out = run_kbuild(*build_args(kernel_copy, "-v", "--backend", "cuda", "--no-cache")).stdout
    assert re.search(r"nvcc .*-gencode arch=compute_90,code=sm_90 .*--threads", out), out
    assert re.search(r"g\+\+ .*-fno-gnu-unique .*-DTORCH_EXTENSION_NAME=_img2gray_cuda_", out)
    assert re.search(r"g\+\+ -shared .*-lcudart", out)


def test_the_loop_in_git_a_commit_recompiles_nothing_and_a_cpu_edit_no_cuda_unit(kernel_copy):
    run_kbuild(*build_args(kernel_copy))
    first = json.loads((kernel_copy / "build" / CPU_VARIANT / "metadata.json").read_text())["id"]
    assert first == f"_img2gray_cpu_{source_id(kernel_copy)}"

    def commit(message):
        git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qam", message, cwd=kernel_copy)

    # README edit, then a commit: same sources, same ops id; only metadata.json's provenance changes.
    readme = kernel_copy / "README.md"
    readme.write_text("# notes\n")
    git("add", "README.md", cwd=kernel_copy)
    jobs = rebuilt_jobs(run_kbuild(*build_args(kernel_copy)).stdout)  # provenance: dirty
    assert jobs == [f"INSTALL build/{CPU_VARIANT}", f"INSTALL build/{CUDA_VARIANT}"], jobs
    commit("readme")
    jobs = rebuilt_jobs(run_kbuild(*build_args(kernel_copy)).stdout)
    assert jobs == [f"INSTALL build/{CPU_VARIANT}", f"INSTALL build/{CUDA_VARIANT}"], jobs
    metadata = json.loads((kernel_copy / "build" / CPU_VARIANT / "metadata.json").read_text())
    assert metadata["id"] == first
    assert metadata["provenance"]["kernel"] == {"commit": git("rev-parse", "HEAD", cwd=kernel_copy), "dirty": False}
    # A file that is not a build input keeps the id too.
    (kernel_copy / "notes").mkdir()
    (kernel_copy / "notes" / "todo.txt").write_text("later\n")
    assert "no work to do" in run_kbuild(*build_args(kernel_copy)).stdout
    # A CPU-only edit: no CUDA unit is compiled; the dirty tree is recorded as provenance.
    cpp = kernel_copy / "img2gray_cpu" / "img2gray_cpu.cpp"
    cpp.write_text(cpp.read_text() + "\n// edited\n")
    jobs = rebuilt_jobs(run_kbuild(*build_args(kernel_copy)).stdout)
    assert not [job for job in jobs if job.startswith("CUDA")], jobs
    assert sorted(job for job in jobs if job.startswith("CXX")) == ["CXX img2gray_cpu/img2gray_cpu.cpp"] * 2 + [
        "CXX torch-ext/torch_binding.cpp"] * 2, jobs
    metadata = json.loads((kernel_copy / "build" / CPU_VARIANT / "metadata.json").read_text())
    assert metadata["id"] == f"_img2gray_cpu_{source_id(kernel_copy)}" != first
    assert metadata["provenance"]["kernel"]["dirty"] is True
    # Committing that edit recompiles nothing.
    commit("edit")
    jobs = rebuilt_jobs(run_kbuild(*build_args(kernel_copy)).stdout)
    assert all(job.startswith("INSTALL") for job in jobs), jobs


def test_outside_git_the_unique_id_is_a_digest_of_the_sources(tmp_path):
    kernel = copy_kernel(tmp_path / "img2gray", init_git=False)
    run_kbuild(*build_args(kernel, "--backend", "cpu"))
    first = json.loads((kernel / "build" / CPU_VARIANT / "metadata.json").read_text())["id"]
    assert re.fullmatch(r"_img2gray_cpu_src[0-9a-f]{8}", first)
    assert "no work to do" in run_kbuild(*build_args(kernel, "--backend", "cpu")).stdout
    assert "provenance" in json.loads((kernel / "build" / CPU_VARIANT / "metadata.json").read_text())
    # kbuild clean keeps the id, so the next build comes from the cache; another copy gives the same bytes.
    run_kbuild("clean", kernel)
    again = run_kbuild(*build_args(kernel, "--backend", "cpu"))
    assert json.loads((kernel / "build" / CPU_VARIANT / "metadata.json").read_text())["id"] == first
    assert int(re.search(r"(\d+) from cache", again.stdout + again.stderr).group(1)) >= 3, again.stdout
    other = copy_kernel(tmp_path / "elsewhere" / "img2gray", init_git=False)
    run_kbuild(*build_args(other, "--backend", "cpu"))
    library = f"{first}.abi3.so"
    assert (other / "build" / CPU_VARIANT / library).read_bytes() == (kernel / "build" / CPU_VARIANT / library).read_bytes()


def test_check_accepts_the_build_and_finds_tampering(built_kernel, tmp_path):
    result = run_kbuild("check", built_kernel)
    assert result.stdout == f"{CPU_VARIANT}: ok (unsigned)\n{CUDA_VARIANT}: ok (unsigned)\n"
    # A copy whose library was modified after the build and whose ops file is gone.
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(built_kernel / "build", copy / "build")
    library = next((copy / "build" / CPU_VARIANT).glob("*.so"))
    library.write_bytes(library.read_bytes() + b"\0")
    (copy / "build" / CUDA_VARIANT / "_ops.py").unlink()
    result = run_kbuild("check", copy, check=False)
    assert result.returncode == 1
    assert f"{CPU_VARIANT}/{library.name}: error: does not match its digest" in result.stdout
    assert f"{CUDA_VARIANT}: error: _ops.py is missing" in result.stdout
    assert f"{CUDA_VARIANT}/_ops.py: error: is listed in the digest but missing" in result.stdout


def test_libraries_are_elf_exporting_pyinit_and_linking_only_torch_cuda_libc(built_kernel):
    for variant in variant_dirs(built_kernel):
        metadata = json.loads((variant / "metadata.json").read_text())
        library = variant / f"{metadata['id']}.abi3.so"
        dynamic = subprocess.run(["readelf", "-d", "--dyn-syms", "-W", str(library)], check=True, capture_output=True,
                                 text=True).stdout
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", dynamic)
        allowed = re.compile(r"^(libc10(_cuda)?|libtorch(_cpu|_cuda)?)\.so$|^libcudart\.so\.13$|"
                             r"^lib(c|m|stdc\+\+|gcc_s|gomp)\.so\.\d+$|^ld-linux-x86-64\.so\.2$")  # libgomp: Torch's OpenMP
        assert needed and all(allowed.match(n) for n in needed), needed
        assert re.search(rf"FUNC\s+GLOBAL\s+DEFAULT\s+\d+\s+PyInit_{metadata['id']}$", dynamic, re.M), dynamic
        assert "RPATH" not in dynamic and "RUNPATH" not in dynamic


def test_clean_removes_intermediates_and_with_all_the_build(kernel_copy):
    run_kbuild(*build_args(kernel_copy, "--backend", "cpu"))
    assert (kernel_copy / ".kbuild").is_dir()
    run_kbuild("clean", kernel_copy)
    assert not (kernel_copy / ".kbuild").exists() and (kernel_copy / "build").is_dir()
    assert run_kbuild("clean", kernel_copy, "--all", "-n").stdout == f"would remove {kernel_copy / 'build'}\n"
    assert (kernel_copy / "build").is_dir()
    run_kbuild("clean", kernel_copy, "--all")
    assert not (kernel_copy / "build").exists()
    assert run_kbuild("clean", kernel_copy, "--all").stdout == f"nothing to remove in {kernel_copy}\n"
    result = run_kbuild("clean", kernel_copy / "torch-ext", check=False)
    assert result.returncode == 2 and "not a kernel directory" in result.stderr


def test_the_benchmark_serves_the_kernels_cli(built_kernel):
    """benchmarks/benchmark.py holds a kernels.benchmark.Benchmark that `kernels benchmark` discovers;
    driven here as its CLI drives it, on the CPU (the CLI picks the GPU for a CUDA build of torch)."""
    script = r"""
import sys, torch
from pathlib import Path
from kernels import get_local_kernel
from kernels.cli.benchmark import discover_benchmark_classes
kernel_dir = Path(sys.argv[1])
(cls,) = discover_benchmark_classes(kernel_dir / "benchmarks" / "benchmark.py", kernel_dir)
for workload in ("img2gray_1080p", "img2gray_out_1080p"):
    bench = cls()
    bench.kernel, bench.device = get_local_kernel(kernel_dir, backend="cpu"), "cpu"
    getattr(bench, "setup_" + workload, bench.setup)()
    getattr(bench, "benchmark_" + workload)()
    assert torch.allclose(bench.out, getattr(bench, "verify_" + workload)(), atol=1e-2), workload
print("verified", cls.__name__)
"""
    result = subprocess.run([PYTHON, "-c", script, built_kernel], capture_output=True, text=True)
    assert result.returncode == 0 and "verified Img2grayBenchmark" in result.stdout, result.stdout + result.stderr


def test_info_describes_a_local_kernel_directory(built_kernel):
    """`kbuild info ./dir`, as `kernels info` takes a local path: the same report as for a Hub revision."""
    as_json = run_kbuild("info", f"./{built_kernel.name}", "--json", "--python", PYTHON, cwd=built_kernel.parent)
    report = json.loads(as_json.stdout)
    assert report["source"] == "local directory" and report["repo_id"] == str(built_kernel)
    by_name = {v["variant"]: v for v in report["variants"]}
    assert by_name[CPU_VARIANT]["metadata"]["id"].startswith("_img2gray_cpu_")
    for variant in by_name.values():
        archs = variant["metadata"]["archs"]
        assert archs == sorted(archs, key=lambda a: tuple(int(re.match(r"\d+", x).group()) for x in a.split(".")[:2]))
    text = run_kbuild("info", built_kernel, "--python", PYTHON).stdout
    assert f"{built_kernel} (local directory: build/)" in text and " kB, " in text, text
    refused = run_kbuild("info", built_kernel, "--version", "1", check=False)
    assert refused.returncode == 2 and "local directory" in refused.stderr
