"""Loads the built img2gray variants for the tests.

IMG2GRAY_KERNEL_DIR points at a kernel directory containing build/ (default: this kernel). The
variants are loaded through the `kernels` package (get_local_kernel), the way users load them; where
`kernels` is not installed (e.g. on an air-gapped GPU machine), the variant directory is imported
the same way the loader does it (module named after metadata.json's id).

IMG2GRAY_BACKENDS lists the variants to test ("cpu,cuda"; default: the backend `kbuild test` names in
KBUILD_TEST_BACKEND, else cpu, plus cuda when this torch is a CUDA build). A variant asked for but not built is a failure, never a skip: an empty build/ must
not pass. The only skips are GPU tests on a machine without a GPU, and they say so.
"""

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest
import torch


def kernel_dir() -> Path:
    return Path(os.environ.get("IMG2GRAY_KERNEL_DIR", Path(__file__).resolve().parent.parent))


def _variant_dir(backend: str) -> Path:
    major, minor = torch.__version__.split("+")[0].split(".")[:2]
    compute = "cpu" if backend == "cpu" else "cu" + torch.version.cuda.replace(".", "")[:3]
    name = f"torch{major}{minor}-cxx11-{compute}-x86_64-linux"
    return kernel_dir() / "build" / name


def _import_variant(path: Path):
    metadata = json.loads((path / "metadata.json").read_text())
    spec = importlib.util.spec_from_file_location(metadata["id"], path / "__init__.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[metadata["id"]] = module
    spec.loader.exec_module(module)
    return module


_loaded = {}


def backends_to_test() -> list[str]:
    default = "cpu,cuda" if torch.version.cuda is not None else "cpu"
    default = os.environ.get("KBUILD_TEST_BACKEND", default)
    return [b.strip() for b in os.environ.get("IMG2GRAY_BACKENDS", default).split(",") if b.strip()]


def load(backend: str):
    if backend not in _loaded:
        if backend == "cuda" and torch.version.cuda is None:
            pytest.fail("IMG2GRAY_BACKENDS asks for the cuda variant, but this torch is not a CUDA build")
        path = _variant_dir(backend)
        asked = os.environ.get("KBUILD_TEST_VARIANT_DIR")
        if asked and backend == os.environ.get("KBUILD_TEST_BACKEND") and Path(asked).resolve() != path.resolve():
            pytest.fail(f"kbuild test asked for {asked}, but this Torch ({torch.__version__}) loads {path}")
        if not path.is_dir():
            pytest.fail(f"the {backend} variant was not built: {path} does not exist (run kbuild build)")
        try:
            import kernels
        except ImportError:
            kernels = None
        if kernels is not None:
            _loaded[backend] = kernels.get_local_kernel(kernel_dir(), backend=backend)
        else:
            _loaded[backend] = _import_variant(path)
    return _loaded[backend]


@pytest.fixture(params=backends_to_test(), ids=lambda b: f"{b}-variant")
def variant(request):
    """Each built variant; both register CPU kernels, so both are tested on CPU tensors."""
    return load(request.param)


@pytest.fixture
def cuda_kernel():
    if not torch.cuda.is_available():
        pytest.skip("no GPU on this machine (torch.cuda.is_available() is False): GPU tests run on a GPU host")
    return load("cuda")
