"""Kernels written for kernel-builder build unchanged (docs/build-toml.md, "Compiler command lines"), and no
build installs a library that the ABI check (kbuild check, kernel-abi-check) rejects. Small kernels of our
own, written for these tests, each exercising one feature."""

import contextlib
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import textwrap
import threading
import zipfile
from pathlib import Path

import pytest

from conftest import PYTHON, build_args, run_kbuild

CPU_VARIANT = "torch211-cxx11-cpu-x86_64-linux"
CUDA_VARIANT = "torch211-cxx11-cu130-x86_64-linux"

# A binding in kernel-builder's style: registration.h's macros, one op `probe() -> int` whose
# implementation lives in the kernel component.
BINDING = """\
#include <torch/csrc/stable/library.h>

#include <cstdint>

#include "registration.h"

int64_t probe();

STABLE_TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) { ops.def("probe() -> int"); }
STABLE_TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, CompositeExplicitAutograd, ops) {
  ops.impl("probe", TORCH_BOX(&probe));
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
"""


def write_kernel(root, name, backend, component_src, component_file, depends='["torch"]'):
    files = {
        "build.toml": f"""\
            [general]
            name = "{name}"
            version = 1
            edition = 5
            license = "Apache-2.0"
            backends = ["{backend}"]

            [torch]
            src = ["torch-ext/torch_binding.cpp"]

            [kernel.{name}_{backend}]
            backend = "{backend}"
            depends = {depends}
            src = ["{component_file}"]
            """,
        "torch-ext/torch_binding.cpp": BINDING,
        f"torch-ext/{name}/__init__.py": "from ._ops import ops\n\n\ndef probe():\n    return ops.probe()\n",
        component_file: component_src,
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def load_and_probe(variant_dir, backend):
    code = f"""
from pathlib import Path
from kernels import get_local_kernel
kernel = get_local_kernel(Path({str(variant_dir.parent.parent)!r}), backend={backend!r})
print(kernel.probe())
"""
    result = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.strip().splitlines()[-1]


def official_abi_check(variant_dir):
    """What PyPI's kernel-abi-check (the checker kernel-builder runs after every build) says of each
    library of a variant: manylinux_2_28 and Python abi3 (3.9) violations, as text."""
    code = """
import sys
from pathlib import Path
from kernel_abi_check import ObjectFile
for library in sorted(Path(sys.argv[1]).glob("*.so")):
    found = ObjectFile(library).check_manylinux("manylinux_2_28") + ObjectFile(library).check_python_abi("3.9")
    for problem in found:
        print(library.name, repr(problem))
"""
    result = subprocess.run([PYTHON, "-c", code, str(variant_dir)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


# Device lambdas and host constexpr functions called from device code need nvcc's
# --expt-extended-lambda and --expt-relaxed-constexpr, which kernel-builder inherits from Torch's
# CMake package; ENABLE_FP8 is kernel-builder's own define.
LAMBDA_CU = """\
#include <cstdint>

#ifndef ENABLE_FP8
#error "kernel-builder defines ENABLE_FP8 for every CUDA compile"
#endif

constexpr float twice(float x) { return 2.0f * x; }

template <typename F>
__global__ void apply(float* data, int n, F f) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = f(data[i]);
}

void launch_twice(float* data, int n) {
  apply<<<(n + 255) / 256, 256>>>(data, n, [] __device__(float v) { return twice(v); });
}

int64_t probe() {
  void (*volatile keep)(float*, int) = &launch_twice;  // linked, not run: this machine may have no GPU
  return keep != nullptr ? 7 : 0;
}
"""


@pytest.mark.slow
def test_device_lambdas_and_relaxed_constexpr_build_as_with_kernel_builder(tmp_path):
    kernel = write_kernel(tmp_path / "lambdas", "lambdas", "cuda", LAMBDA_CU, "lambdas_cuda/lambdas.cu", depends="[]")
    run_kbuild(*build_args(kernel, "--backend", "cuda", "--unique-id", "t1"))
    variant = kernel / "build" / CUDA_VARIANT
    assert (variant / "_lambdas_cuda_t1.abi3.so").is_file()
    run_kbuild("check", kernel)
    assert official_abi_check(variant) == ""
    assert load_and_probe(variant, "cuda") == "7"  # the op runs on the CPU (CompositeExplicitAutograd)


# std::to_chars for floating point came with GCC 11 (GLIBCXX_3.4.29) and std::ostringstream's own default
# constructor with GCC 9 (3.4.26): newer than manylinux_2_28's libstdc++ (3.4.24). kbuild links these
# few symbols privately from the same GCC's libstdc++.a (toolchain/stdcxx_compat.hpp), so the C++20
# kernel builds, passes the official checker and still uses the shared libstdc++ for the rest.
CXX20_CPP = """\
#include <charconv>
#include <cstdint>
#include <span>
#include <sstream>

int64_t probe() {
  char text[32];
  auto result = std::to_chars(text, text + sizeof text, 0.1);
  std::ostringstream out;
  out << std::span<char>(text, result.ptr).size();
  return static_cast<int64_t>(out.str().size() * 10 + (result.ptr - text));
}
"""


def undefined_dynamic_symbols(library):
    listing = subprocess.run(["nm", "-D", "--undefined-only", "--with-symbol-versions", str(library)],
                             capture_output=True, text=True, check=True).stdout
    return listing


def test_a_cxx20_kernel_links_the_newer_libstdcxx_symbols_privately_and_passes_the_abi_checks(tmp_path):
    # Without the torch dependency a component is compiled as C++20 (docs/build-toml.md).
    kernel = write_kernel(tmp_path / "newer", "newer", "cpu", CXX20_CPP, "newer_cpu/newer.cpp", depends="[]")
    run_kbuild(*build_args(kernel, "--backend", "cpu", "--unique-id", "t1"))
    variant = kernel / "build" / CPU_VARIANT
    library = variant / "_newer_cpu_t1.abi3.so"
    undefined = undefined_dynamic_symbols(library)
    assert "GLIBCXX_3.4.29" not in undefined and "GLIBCXX_3.4.26" not in undefined, undefined
    assert "to_chars" not in undefined
    assert "@GLIBCXX_3.4" in undefined  # the rest of the C++ runtime is still the shared one
    exported = subprocess.run(["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True).stdout
    assert "to_chars" not in exported  # the private copy stays hidden
    assert official_abi_check(variant) == ""
    run_kbuild("check", kernel)
    assert load_and_probe(variant, "cpu") == "13"  # "0.1": three characters, written as "3"


# arc4random came with glibc 2.36: a C library symbol cannot be linked privately.
NEWER_GLIBC_CPP = """\
#include <cstdint>
#include <cstdlib>

int64_t probe() { return static_cast<int64_t>(arc4random() % 7); }
"""


def test_a_library_needing_a_newer_runtime_is_refused_naming_symbol_and_source(tmp_path):
    kernel = write_kernel(tmp_path / "newer", "newer", "cpu", NEWER_GLIBC_CPP, "newer_cpu/newer.cpp")
    refused = run_kbuild(*build_args(kernel, "--backend", "cpu", "--unique-id", "t1"), check=False)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    output = refused.stdout + refused.stderr
    assert "fails the ABI check; nothing was installed" in output
    assert "arc4random@GLIBC_2.36" in output and "(GLIBC <= 2.28)" in output, output
    assert "used by newer_cpu/newer.cpp" in output and "--manylinux none" in output, output
    assert not (kernel / "build" / CPU_VARIANT).exists()
    # The same verdict a second time (the link is up to date, the gate is not skipped).
    again = run_kbuild(*build_args(kernel, "--backend", "cpu", "--unique-id", "t1"), check=False)
    assert again.returncode == 1 and "GLIBC_2.36" in again.stdout + again.stderr
    # Local use on this machine may opt out; kbuild check still says what the ecosystem would.
    run_kbuild(*build_args(kernel, "--backend", "cpu", "--unique-id", "t1", "--manylinux", "none"))
    assert int(load_and_probe(kernel / "build" / CPU_VARIANT, "cpu")) in range(7)
    check = run_kbuild("check", kernel, check=False)
    assert check.returncode == 1 and "GLIBC_2.36" in check.stdout + check.stderr
    # The official checker agrees with the gate about this library.
    assert "GLIBC" in official_abi_check(kernel / "build" / CPU_VARIANT)


@pytest.mark.slow
def test_the_reference_kernels_libraries_pass_the_official_abi_checker(built_kernel):
    for variant in (CPU_VARIANT, CUDA_VARIANT):
        assert official_abi_check(built_kernel / "build" / variant) == "", variant


def test_an_unknown_manylinux_policy_is_a_usage_error(tmp_path):
    kernel = write_kernel(tmp_path / "plain", "plain", "cpu", "#include <cstdint>\nint64_t probe() { return 1; }\n",
                          "plain_cpu/plain.cpp")
    result = run_kbuild(*build_args(kernel, "--manylinux", "manylinux_2_17"), check=False)
    assert result.returncode == 2 and "unknown --manylinux policy" in result.stderr
    metadata = kernel / "build" / CPU_VARIANT / "metadata.json"
    assert not metadata.exists()
    run_kbuild(*build_args(kernel, "--backend", "cpu"))
    assert json.loads(metadata.read_text())["id"].startswith("_plain_cpu_")


BAD_REGISTRATION = """\
import torch

from ._ops import add_op_namespace_prefix, ops


@torch.library.register_fake("bad_ops::probe")
def _probe_fake():
    return 0


@torch.library.register_fake(add_op_namespace_prefix("probe"))
def _fine():
    return 0


if True:  # kernel-builder's rule looks at top-level definitions only

    @torch.library.register_fake("bad_ops::nested")
    def _nested():
        return 0


def probe():
    return ops.probe()
"""


def test_registrations_without_the_namespace_prefix_are_refused_as_kernel_builder_does(tmp_path):
    kernel = write_kernel(tmp_path / "regs", "regs", "cpu", "#include <cstdint>\nint64_t probe() { return 1; }\n",
                          "regs_cpu/regs.cpp")
    init = kernel / "torch-ext" / "regs" / "__init__.py"
    init.write_text(BAD_REGISTRATION)
    refused = run_kbuild(*build_args(kernel, "--backend", "cpu"), check=False)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "Found Torch library registrations that do not use `add_op_namespace_prefix`" in refused.stderr
    assert f"{init}:6:2 function _probe_fake" in refused.stderr, refused.stderr
    assert "_fine" not in refused.stderr and "_nested" not in refused.stderr
    assert not (kernel / ".kbuild").exists() and not (kernel / "build").exists()  # nothing written
    # Test files count too, as in kernel-builder; and a file Python cannot parse is refused.
    init.write_text(BAD_REGISTRATION.replace('"bad_ops::probe"', 'add_op_namespace_prefix("probe2")'))
    (kernel / "tests").mkdir()
    (kernel / "tests" / "test_regs.py").write_text("def broken(:\n")
    unparsable = run_kbuild(*build_args(kernel, "--backend", "cpu"), check=False)
    assert unparsable.returncode == 2 and "tests/test_regs.py:1:" in unparsable.stderr, unparsable.stderr
    (kernel / "tests" / "test_regs.py").unlink()
    run_kbuild(*build_args(kernel, "--backend", "cpu"))
    # A passed check is remembered (no Python started by a no-op build) until a .py file changes.
    init.write_text(BAD_REGISTRATION)
    again = run_kbuild(*build_args(kernel, "--backend", "cpu"), check=False)
    assert again.returncode == 2 and "_probe_fake" in again.stderr


def test_variants_lists_what_build_builds_and_always_answers_json(tmp_path):
    kernel = write_kernel(tmp_path / "deps", "deps", "cpu", "#include <cstdint>\nint64_t probe() { return 1; }\n",
                          "deps_cpu/deps.cpp")
    toml = kernel / "build.toml"
    toml.write_text(toml.read_text().replace('backends = ["cpu"]', 'backends = ["cpu", "cuda"]') +
                    '\n[kernel.deps_cuda]\nbackend = "cuda"\ndepends = ["torch", "sycl_tla"]\n'
                    'src = ["deps_cuda/deps.cu"]\n')
    (kernel / "deps_cuda").mkdir()
    (kernel / "deps_cuda" / "deps.cu").write_text("// needs SYCL-TLA, which is Intel's\n")
    listing = json.loads(run_kbuild("variants", kernel, "--json").stdout)
    names = [v["name"] for v in listing["variants"]]
    assert names and all("-cpu-" in name for name in names), names
    assert any("sycl_tla" in reason and "-cu13" in reason for reason in listing["left_out"]), listing
    # The local build's variants for this interpreter, with the same refusals.
    local = json.loads(run_kbuild("variants", kernel, "--json", "--python", PYTHON).stdout)
    assert [v["name"] for v in local["variants"]] == [CPU_VARIANT], local
    assert any("sycl_tla" in reason for reason in local["left_out"]), local
    # Torch bounds that exclude the whole matrix: an empty list with the reasons, still JSON, exit 0.
    toml.write_text(toml.read_text().replace("[torch]\n", '[torch]\nminver = "9.0"\n'))
    empty = run_kbuild("variants", kernel, "--json")
    parsed = json.loads(empty.stdout)
    assert parsed["variants"] == [] and parsed["left_out"], parsed
    assert "variants of deps" in run_kbuild("variants", kernel).stdout


# A component that depends on CUTLASS (kernel-builder's `cutlass_3_6`): kbuild fetches NVIDIA's
# nvidia-cutlass wheel, pins it in kbuild.lock and puts its headers on the component's include path.
CUTLASS_CU = """\
#include <cutlass/numeric_types.h>
#include <cutlass/version.h>

#include <cstdint>

__global__ void scale(cutlass::half_t* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * cutlass::half_t(2.0f);
}

void launch_scale(void* data, int n) { scale<<<(n + 255) / 256, 256>>>(static_cast<cutlass::half_t*>(data), n); }

int64_t probe() {
  void (*volatile keep)(void*, int) = &launch_scale;  // linked, not run: this machine may have no GPU
  return keep != nullptr ? CUTLASS_MAJOR * 10 + CUTLASS_MINOR : 0;
}
"""


@pytest.mark.slow
def test_a_cutlass_dependency_is_fetched_pinned_and_on_the_include_path(tmp_path):
    kernel = write_kernel(tmp_path / "cut", "cut", "cuda", CUTLASS_CU, "cut_cuda/cut.cu", depends='["cutlass_3_6"]')
    listing = json.loads(run_kbuild("variants", kernel, "--json", "--python", PYTHON).stdout)
    assert [v["name"] for v in listing["variants"]] == [CUDA_VARIANT], listing
    run_kbuild(*build_args(kernel, "--backend", "cuda", "--unique-id", "t1"))
    lock = json.loads((kernel / "kbuild.lock").read_text())
    pinned = lock["toolchains"]["cutlass-3.6"][0]
    assert pinned["package"] == "nvidia-cutlass" and pinned["version"].startswith("3.6.")
    assert len(pinned["sha256"]) == 64
    run_kbuild("check", kernel)
    assert official_abi_check(kernel / "build" / CUDA_VARIANT) == ""
    assert load_and_probe(kernel / "build" / CUDA_VARIANT, "cuda") == "36"
    database = json.loads((kernel / ".kbuild" / "compile_commands.json").read_text())
    cu = next(entry for entry in database if entry["file"].endswith("cut.cu"))
    assert any(arg.startswith("-I") and arg.endswith("cutlass_library/source/include") for arg in cu["arguments"])
    # A dependency kbuild cannot provide for CUDA (Intel's SYCL-TLA): kbuild's clear refusal.
    toml = kernel / "build.toml"
    toml.write_text(toml.read_text().replace("cutlass_3_6", "sycl_tla"))
    refused = run_kbuild(*build_args(kernel, "--backend", "cuda"), check=False)
    assert refused.returncode == 2 and "sycl_tla" in refused.stderr and "cutlass_4_5" in refused.stderr


# CUTLASS releases that NVIDIA does not publish on PyPI (kernel-builder's cutlass_2_10, 3_9, 4_0, 4_4,
# 4_5) come from the release's source archive, pinned in kbuild.lock by the sha256 of the first
# download. Served here by a loopback HTTP server shaped like GitHub (a redirect to the archive, one
# top directory); KBUILD_CUTLASS_URL points kbuild at it as it would at a mirror.
ARCHIVE_CU = """\
#include <cutlass/cutlass.h>
#include <cutlass/version.h>
#include <cutlass/util/probe_value.h>

#include <cstdint>

__global__ void fill(int* out) { *out = CUTLASS_MAJOR * 10 + CUTLASS_MINOR; }

void launch_fill(int* out) { fill<<<1, 1>>>(out); }

int64_t probe() {
  void (*volatile keep)(int*) = &launch_fill;  // linked, not run: this machine may have no GPU
  return keep != nullptr ? kProbeValue : 0;
}
"""


def write_cutlass_archive(path, top, major, minor):
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{top}/include/cutlass/cutlass.h", "#pragma once\n")
        archive.writestr(f"{top}/include/cutlass/version.h",
                         f"#pragma once\n#define CUTLASS_MAJOR {major}\n#define CUTLASS_MINOR {minor}\n"
                         "#define CUTLASS_PATCH 0\n")
        archive.writestr(f"{top}/tools/util/include/cutlass/util/probe_value.h",
                         f"#pragma once\nconstexpr int kProbeValue = CUTLASS_MAJOR * 10 + CUTLASS_MINOR;\n")
        archive.writestr(f"{top}/examples/README.md", "not headers\n")


@contextlib.contextmanager
def archive_server(directory):
    """GET /archive/<name> redirects to /codeload/<name>, which serves directory/<name>."""
    requests = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            requests.append(self.path)
            name = self.path.rsplit("/", 1)[-1]
            if self.path.startswith("/archive/"):
                self.send_response(302)
                self.send_header("Location", "/codeload/" + name)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            file = directory / name
            if not file.is_file():
                self.send_error(404)
                return
            data = file.read_bytes()
            self.send_response(200)
            self.send_header("Content-Type", "application/zip")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", requests
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow
def test_a_cutlass_release_missing_from_pypi_comes_from_its_pinned_source_archive(tmp_path):
    served = tmp_path / "served"
    served.mkdir()
    write_cutlass_archive(served / "v4.0.0.zip", "cutlass-4.0.0", 4, 0)
    kernel = write_kernel(tmp_path / "arc", "arc", "cuda", ARCHIVE_CU, "arc_cuda/arc.cu", depends='["cutlass_4_0"]')
    with archive_server(served) as (base, requests):
        # A cache of the test's own: the served archives are not real CUTLASS, so nothing of them may
        # land in the user's shared downloads or toolchains.
        env = dict(os.environ, KBUILD_CUTLASS_URL=base + "/archive/v{version}.zip", KBUILD_CACHE=str(tmp_path / "cache"))
        built = run_kbuild(*build_args(kernel, "--backend", "cuda"), env=env)
        assert requests == ["/archive/v4.0.0.zip", "/codeload/v4.0.0.zip"], requests
        assert "pinned CUTLASS 4.0.0" in built.stdout + built.stderr
        pinned = json.loads((kernel / "kbuild.lock").read_text())["toolchains"]["cutlass-4.0"][0]
        assert pinned["package"] == "cutlass-source" and pinned["version"] == "4.0.0"
        assert pinned["url"] == base + "/archive/v4.0.0.zip"
        assert pinned["sha256"] == hashlib.sha256((served / "v4.0.0.zip").read_bytes()).hexdigest()
        run_kbuild("check", kernel)
        assert official_abi_check(kernel / "build" / CUDA_VARIANT) == ""
        assert load_and_probe(kernel / "build" / CUDA_VARIANT, "cuda") == "40"
        database = json.loads((kernel / ".kbuild" / "compile_commands.json").read_text())
        cu = next(entry for entry in database if entry["file"].endswith("arc.cu"))
        includes = [arg for arg in cu["arguments"] if arg.startswith("-I") and "cutlass-4.0.0-" in arg]
        assert [Path(arg).name for arg in includes] == ["include", "include"], includes  # include/, tools/util/include/

        # Another machine (an empty cache), --locked: the server now has a different archive under
        # that name. The pin refuses it and nothing is built.
        write_cutlass_archive(served / "v4.0.0.zip", "cutlass-4.0.0", 4, 0)
        with zipfile.ZipFile(served / "v4.0.0.zip", "a") as archive:
            archive.writestr("cutlass-4.0.0/include/cutlass/extra.h", "// not in the pinned archive\n")
        other = dict(env, KBUILD_CACHE=str(tmp_path / "other-cache"))
        shutil.rmtree(kernel / "build")
        refused = run_kbuild(*build_args(kernel, "--backend", "cuda", "--locked"), env=other, check=False)
        assert refused.returncode == 3, refused.stderr
        assert "sha256 mismatch for cutlass-4.0.0.zip" in refused.stderr and "hint:" in refused.stderr
        assert not (kernel / "build").exists()

        # A mirror serving another release under the asked-for name: cutlass/version.h tells.
        write_cutlass_archive(served / "v4.0.0.zip", "cutlass-3.9.2", 3, 9)
        (kernel / "kbuild.lock").unlink()
        wrong = run_kbuild(*build_args(kernel, "--backend", "cuda"), env=dict(other, KBUILD_CACHE=str(tmp_path / "c3")),
                           check=False)
        assert wrong.returncode == 3 and "holds CUTLASS 3.9.0, not CUTLASS 4.0.0 (cutlass_4_0)" in wrong.stderr

        # A release the server does not have: the HTTP status and the URL, not a crash.
        toml = kernel / "build.toml"
        toml.write_text(toml.read_text().replace("cutlass_4_0", "cutlass_4_5"))
        missing = run_kbuild(*build_args(kernel, "--backend", "cuda"), env=dict(other, KBUILD_CACHE=str(tmp_path / "c4")),
                             check=False)
        assert missing.returncode == 4 and "HTTP 404" in missing.stderr and "v4.5.2.zip" in missing.stderr  # network


@pytest.mark.slow
def test_toolchains_lock_pins_a_cutlass_source_archive_and_update_keeps_that_pin(tmp_path):
    served = tmp_path / "served"
    served.mkdir()
    write_cutlass_archive(served / "v4.0.0.zip", "cutlass-4.0.0", 4, 0)
    kernel = write_kernel(tmp_path / "lk", "lk", "cuda", ARCHIVE_CU, "lk_cuda/lk.cu", depends='["cutlass_4_0"]')
    # A matrix of one Torch and one CUDA, so that pip resolves little.
    (kernel / "kbuild.toml").write_text('[matrix]\ntorch = ["2.11"]\ncuda = ["13.0"]\ncpu = false\n')
    toml = kernel / "build.toml"
    with archive_server(served) as (base, requests):
        env = dict(os.environ, KBUILD_CUTLASS_URL=base + "/archive/v{version}.zip", KBUILD_CACHE=str(tmp_path / "cache"))
        locked = run_kbuild("toolchains", "lock", kernel, "--python", PYTHON, env=env, timeout=600)
        assert requests == ["/archive/v4.0.0.zip", "/codeload/v4.0.0.zip"], requests
        pins = json.loads((kernel / "kbuild.lock").read_text())["toolchains"]
        assert pins["cutlass-4.0"][0]["url"] == base + "/archive/v4.0.0.zip", locked.stdout
        assert pins["cutlass-4.0"][0]["sha256"] == hashlib.sha256((served / "v4.0.0.zip").read_bytes()).hexdigest()
        assert "torch-2.11" in pins, pins.keys()

        # --update re-resolves the wheels but keeps the archive pin, even where the server changed.
        write_cutlass_archive(served / "v4.0.0.zip", "cutlass-4.0.0", 4, 0)
        with zipfile.ZipFile(served / "v4.0.0.zip", "a") as archive:
            archive.writestr("cutlass-4.0.0/include/cutlass/extra.h", "// another archive\n")
        run_kbuild("toolchains", "lock", kernel, "--update", "--python", PYTHON, env=env, timeout=600)
        assert len(requests) == 2, requests
        assert json.loads((kernel / "kbuild.lock").read_text())["toolchains"]["cutlass-4.0"] == pins["cutlass-4.0"]

        # A dependency the kernel no longer has loses its pin.
        toml.write_text(toml.read_text().replace('depends = ["cutlass_4_0"]', 'depends = ["torch"]'))
        run_kbuild("toolchains", "lock", kernel, "--python", PYTHON, env=env, timeout=600)
        assert "cutlass-4.0" not in json.loads((kernel / "kbuild.lock").read_text())["toolchains"]
