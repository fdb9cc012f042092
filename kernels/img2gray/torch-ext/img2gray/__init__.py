"""RGB to grayscale conversion with torchvision's weights (0.2989, 0.587, 0.114), on CPU and CUDA.

``img2gray(image)`` takes ``(..., 3, H, W)`` images of any strides (contiguous, channels_last, or a
permuted view of an HWC image) in uint8, float16, bfloat16, float32 or float64 and returns a new
``(..., 1, H, W)`` tensor of the same dtype and device. ``img2gray_out(image, out)`` writes into
``out`` instead. Both are custom ops (``torch.ops.<ops id>.img2gray``), usable under
``torch.compile(fullgraph=True)``, and ``img2gray`` is differentiable for floating-point inputs.
"""

import torch

from ._ops import add_op_namespace_prefix, ops

__all__ = ["img2gray", "img2gray_out"]

_WEIGHTS = (0.2989, 0.587, 0.114)
_below_autograd = torch._C._AutoDispatchBelowAutograd
_img2gray_overload = ops.img2gray.default


def img2gray(image: torch.Tensor) -> torch.Tensor:
    """Convert an RGB image batch ``(..., 3, H, W)`` to grayscale ``(..., 1, H, W)``."""
    # The op's autograd formula is registered from Python (register_autograd below), so a plain call
    # passes through a Python autograd kernel: ~20 us per call on a GPU. When no gradient can flow,
    # the call skips it, as Torch's own kernel does then. torch.compile traces the op itself.
    if image.requires_grad and torch.is_grad_enabled() or torch.compiler.is_compiling():
        return ops.img2gray(image)
    with _below_autograd():
        return _img2gray_overload(image)


def img2gray_out(image: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """Convert ``image`` into ``out`` (shape ``(..., 1, H, W)``, same dtype and device); returns ``out``."""
    ops.img2gray_out(image, out)
    return out


def _check_image(image: torch.Tensor) -> None:
    torch._check(image.dim() >= 3, lambda: f"img2gray: expected an image of shape (..., 3, H, W), got {tuple(image.shape)}")
    torch._check(image.shape[-3] == 3, lambda: f"img2gray: expected 3 channels in dimension -3, got {tuple(image.shape)}")
    torch._check(
        image.dtype in (torch.uint8, torch.float16, torch.bfloat16, torch.float32, torch.float64),
        lambda: f"img2gray: unsupported dtype {image.dtype}",
    )


@torch.library.register_fake(add_op_namespace_prefix("img2gray"))
def _img2gray_fake(image: torch.Tensor) -> torch.Tensor:
    _check_image(image)
    return image.new_empty((*image.shape[:-3], 1, *image.shape[-2:]))


@torch.library.register_fake(add_op_namespace_prefix("img2gray_out"))
def _img2gray_out_fake(image: torch.Tensor, out: torch.Tensor) -> None:
    _check_image(image)
    torch._check(out.shape == (*image.shape[:-3], 1, *image.shape[-2:]), lambda: "img2gray_out: out has the wrong shape")
    return None


def _setup_context(ctx, inputs, output) -> None:
    pass


def _backward(ctx, grad: torch.Tensor) -> torch.Tensor:
    weights = torch.tensor(_WEIGHTS, dtype=grad.dtype, device=grad.device).view(3, 1, 1)
    return grad * weights


torch.library.register_autograd(add_op_namespace_prefix("img2gray"), _backward, setup_context=_setup_context)


def _img2gray_vmap(info, in_dims, image: torch.Tensor):
    # The op already takes any number of batch dimensions before (3, H, W): the mapped dimension moves
    # to the front and the whole batch is one call (without this rule vmap warns and loops per sample).
    (dim,) = in_dims
    if dim is None:
        return ops.img2gray(image), None
    return ops.img2gray(image.movedim(dim, 0)), 0


torch.library.register_vmap(add_op_namespace_prefix("img2gray"), _img2gray_vmap)
