"""img2gray against torchvision's rgb_to_grayscale, on CPU (every variant) and CUDA (when present)."""

import pytest
import torch
from torchvision.transforms.functional import rgb_to_grayscale

DTYPES = [torch.uint8, torch.float16, torch.bfloat16, torch.float32, torch.float64]
FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


def random_image(shape, dtype, device="cpu", generator=None):
    if dtype == torch.uint8:
        return torch.randint(0, 256, shape, dtype=dtype, device=device, generator=generator)
    return torch.rand(shape, dtype=torch.float32, device=device, generator=generator).to(dtype)


def assert_matches_torchvision(result, image):
    expected = rgb_to_grayscale(image)
    assert result.shape == expected.shape
    assert result.dtype == image.dtype
    assert result.device == image.device
    if image.dtype == torch.uint8:
        # torchvision truncates; kbuild's kernel uses the same float arithmetic, so equality is exact
        # in practice; the contract allows 1 off.
        assert (result.int() - expected.int()).abs().max().item() <= 1 if result.numel() else True
    elif image.dtype in (torch.float16, torch.bfloat16):
        # torchvision rounds after every operation, img2gray once at the end.
        torch.testing.assert_close(result.float(), expected.float(), rtol=1e-2, atol=1e-2)
    else:
        torch.testing.assert_close(result, expected, rtol=1e-6, atol=1e-6)


def layouts(image):
    """The same logical (N, 3, H, W) image in the layouts users have."""
    yield "nchw", image
    if image.dim() == 4:
        yield "channels_last", image.contiguous(memory_format=torch.channels_last)
    hwc = image.movedim(-3, -1).contiguous()
    yield "hwc_view", hwc.movedim(-1, -3)
    yield "strided", image[..., ::2, ::3]
    if image.shape[-1] > 2:
        yield "offset", image[..., 1:, 1:]


@pytest.mark.parametrize("dtype", DTYPES)
def test_layouts_and_dtypes_on_cpu(variant, dtype):
    image = random_image((2, 3, 37, 53), dtype)
    for name, view in layouts(image):
        assert_matches_torchvision(variant.img2gray(view), view), name


@pytest.mark.parametrize("shape", [(3, 1, 1), (1, 3, 1, 7), (1, 3, 7, 1), (3, 13, 17), (2, 2, 3, 31, 29), (0, 3, 4, 4), (2, 3, 0, 5)])
@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_odd_and_empty_shapes_on_cpu(variant, shape, dtype):
    image = random_image(shape, dtype)
    assert_matches_torchvision(variant.img2gray(image), image)


def every_rgb_triple(device="cpu"):
    """All 2^24 uint8 (r, g, b) combinations as one interleaved image viewed as (1, 3, 4096, 4096)."""
    v = torch.arange(256, dtype=torch.uint8, device=device)
    r, g, b = torch.meshgrid(v, v, v, indexing="ij")
    return torch.stack([r, g, b], dim=-1).reshape(1, 4096, 4096, 3).permute(0, 3, 1, 2)


def test_uint8_is_exactly_torchvision_for_every_input_on_cpu(variant):
    image = every_rgb_triple()
    for view in (image, image.contiguous(), image[..., 3:4091]):  # interleaved, planar, unaligned rows
        assert torch.equal(variant.img2gray(view), rgb_to_grayscale(view))


def test_non_mergeable_batch_dims_on_cpu(variant):
    image = random_image((4, 5, 3, 8, 8), torch.float32)[:, ::2]  # batch dims with a gap
    assert_matches_torchvision(variant.img2gray(image), image)


def test_out_variant_writes_into_strided_out(variant):
    image = random_image((2, 3, 16, 24), torch.float32)
    storage = torch.zeros(2, 1, 24, 16).transpose(-1, -2)  # non-contiguous out
    result = variant.img2gray_out(image, storage)
    assert result is storage
    assert_matches_torchvision(storage, image)


def test_torch_ops_namespace(variant):
    image = random_image((1, 3, 4, 4), torch.float32)
    namespace = variant.__name__
    op = getattr(getattr(torch.ops, namespace), "img2gray")
    assert torch.equal(op(image), variant.img2gray(image))
    assert variant.__all__ == ["img2gray", "img2gray_out"]


@pytest.mark.parametrize(
    "image, message",
    [
        (torch.rand(3, 4), "expected an image of shape"),
        (torch.rand(1, 4, 5, 5), "expected 3 channels"),
        (torch.rand(1, 3, 5, 5).to(torch.int32), "unsupported dtype"),
    ],
)
def test_clear_errors(variant, image, message):
    with pytest.raises(RuntimeError, match=message):
        variant.img2gray(image)


def test_out_errors(variant):
    image = torch.rand(1, 3, 5, 5)
    with pytest.raises(RuntimeError, match="out has shape"):
        variant.img2gray_out(image, torch.empty(1, 1, 5, 4))
    with pytest.raises(RuntimeError, match="out has dtype"):
        variant.img2gray_out(image, torch.empty(1, 1, 5, 5, dtype=torch.float64))


def test_opcheck(variant):
    ns = getattr(torch.ops, variant.__name__)
    torch.library.opcheck(ns.img2gray.default, (torch.rand(2, 3, 5, 7),))
    torch.library.opcheck(ns.img2gray.default, (torch.rand(2, 3, 5, 7, dtype=torch.float64, requires_grad=True),))
    torch.library.opcheck(ns.img2gray_out.default, (torch.rand(2, 3, 5, 7), torch.empty(2, 1, 5, 7)))


def test_compile_fullgraph(variant):
    torch._dynamo.reset()

    def pipeline(image):
        return variant.img2gray(image * 2.0) + 1.0

    compiled = torch.compile(pipeline, fullgraph=True)
    image = torch.rand(2, 3, 12, 10)
    torch.testing.assert_close(compiled(image), rgb_to_grayscale(image * 2.0) + 1.0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gradients(variant, dtype):
    image = torch.rand(2, 3, 6, 5, dtype=dtype, requires_grad=True)
    reference = image.detach().clone().requires_grad_(True)
    grad = torch.rand(2, 1, 6, 5, dtype=dtype)
    variant.img2gray(image).backward(grad)
    rgb_to_grayscale(reference).backward(grad)
    torch.testing.assert_close(image.grad, reference.grad)
    if dtype == torch.float64:
        assert torch.autograd.gradcheck(variant.img2gray, (torch.rand(1, 3, 3, 4, dtype=dtype, requires_grad=True),))


@pytest.fixture
def no_vmap_fallback():
    """Makes vmap raise where an op has no batching rule, instead of warning on stderr and looping."""
    torch._C._functorch._set_vmap_fallback_enabled(False)
    yield
    torch._C._functorch._set_vmap_fallback_enabled(True)


@pytest.mark.parametrize("in_dims", [0, 1, 3])
def test_vmap_is_one_call_and_equals_the_loop(variant, in_dims, no_vmap_fallback):
    # in_dims=1 maps over the second batch dim, 3 over a dim between the channels and the width.
    image = random_image((4, 5, 3, 6, 7), torch.float32).movedim(0, in_dims)
    batched = torch.vmap(variant.img2gray, in_dims=in_dims)(image)
    looped = torch.stack([variant.img2gray(image.select(in_dims, i)) for i in range(image.shape[in_dims])])
    assert torch.equal(batched, looped)


# ---------------------------------------------------------------------------------------------------
# CUDA (skipped without a device)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cuda_layouts_and_dtypes(cuda_kernel, dtype):
    image = random_image((3, 3, 67, 131), dtype, device="cuda")
    for name, view in layouts(image):
        assert_matches_torchvision(cuda_kernel.img2gray(view), view), name


@pytest.mark.parametrize("shape", [(3, 1, 1), (1, 3, 1, 9), (1, 3, 13, 1), (3, 17, 19), (2, 2, 3, 31, 37), (0, 3, 4, 4), (1, 3, 0, 5), (1, 3, 1080, 1920)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_cuda_odd_and_empty_shapes(cuda_kernel, shape, dtype):
    image = random_image(shape, dtype, device="cuda")
    assert_matches_torchvision(cuda_kernel.img2gray(image), image)


def test_cuda_uint8_is_exactly_torchvision_for_every_input(cuda_kernel):
    image = every_rgb_triple("cuda")
    for view in (image, image.contiguous(), image[..., 3:4091]):
        assert torch.equal(cuda_kernel.img2gray(view), rgb_to_grayscale(view))


def test_cuda_offset_and_unaligned_views(cuda_kernel):
    base = random_image((2, 3, 64, 65), torch.uint8, device="cuda")
    for view in (base[..., 1:], base[:, :, 3:, 5:], base.flatten()[1:].view(-1)[: 2 * 3 * 64 * 64].view(2, 3, 64, 64)):
        assert_matches_torchvision(cuda_kernel.img2gray(view), view)


def test_cuda_non_default_stream(cuda_kernel):
    image = random_image((4, 3, 512, 512), torch.float32, device="cuda")
    expected = rgb_to_grayscale(image)
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        # A slow producer on the side stream: the kernel must run after it, on that stream.
        delayed = image * 1.0
        torch.cuda._sleep(10_000_000)
        delayed.copy_(image)
        result = cuda_kernel.img2gray(delayed)
    stream.synchronize()  # not the default stream
    assert_matches_torchvision(result, image)
    torch.testing.assert_close(result, expected)


def test_cuda_graph_capture(cuda_kernel):
    image = random_image((2, 3, 128, 128), torch.float32, device="cuda")
    out = torch.empty(2, 1, 128, 128, device="cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        cuda_kernel.img2gray_out(image, out)  # warm-up outside capture
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        cuda_kernel.img2gray_out(image, out)
    image.copy_(random_image((2, 3, 128, 128), torch.float32, device="cuda"))
    graph.replay()
    torch.cuda.synchronize()
    assert_matches_torchvision(out, image)


def test_cuda_compile_fullgraph(cuda_kernel):
    torch._dynamo.reset()
    compiled = torch.compile(lambda x: cuda_kernel.img2gray(x) * 0.5, fullgraph=True)
    image = torch.rand(2, 3, 40, 30, device="cuda")
    torch.testing.assert_close(compiled(image), rgb_to_grayscale(image) * 0.5)


def test_cuda_opcheck_and_gradients(cuda_kernel):
    ns = getattr(torch.ops, cuda_kernel.__name__)
    torch.library.opcheck(ns.img2gray.default, (torch.rand(2, 3, 5, 7, device="cuda"),))
    image = torch.rand(2, 3, 6, 5, device="cuda", dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(cuda_kernel.img2gray, (image,))


def test_cuda_device_mismatch(cuda_kernel):
    with pytest.raises(RuntimeError, match="out is on"):
        cuda_kernel.img2gray_out(torch.rand(1, 3, 4, 4, device="cuda"), torch.empty(1, 1, 4, 4))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_more_than_2_pow_31_elements(cuda_kernel):
    free, _ = torch.cuda.mem_get_info()
    height, width = 27000, 27000  # 3 * 27000^2 = 2.19e9 > 2^31 elements
    if free < 4 * 3 * height * width // 2:
        pytest.skip("not enough GPU memory")
    image = torch.randint(0, 256, (1, 3, height, width), dtype=torch.uint8, device="cuda")
    assert image.numel() > 2**31
    result = cuda_kernel.img2gray(image)
    expected = rgb_to_grayscale(image)
    assert torch.equal(result, expected)
    del image, result, expected
    torch.cuda.empty_cache()
