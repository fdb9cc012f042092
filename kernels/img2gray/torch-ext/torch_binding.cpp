// Op registration and argument checking. The kernels themselves live in img2gray_cpu/ and
// img2gray_cuda/ and see only raw pointers and strides (include/img2gray/launch.h).
//
// Both ops are registered for CPU in every variant; the CUDA variant registers them for CUDA too,
// so one op dispatches on the tensor's device.

#include "torch_binding.h"

#include <ATen/MemoryOverlap.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#if defined(CUDA_KERNEL)
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include "img2gray/launch.h"
#include "registration.h"

namespace {

rgb2gray::DType dtype_of(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kByte: return rgb2gray::DType::uint8;
    case at::kHalf: return rgb2gray::DType::float16;
    case at::kBFloat16: return rgb2gray::DType::bfloat16;
    case at::kFloat: return rgb2gray::DType::float32;
    case at::kDouble: return rgb2gray::DType::float64;
    default:
      TORCH_CHECK(false, "img2gray: unsupported dtype ", t.scalar_type(),
                  "; expected uint8, float16, bfloat16, float32 or float64");
  }
}

void check_image(const at::Tensor& image) {
  TORCH_CHECK(image.dim() >= 3, "img2gray: expected an image of shape (..., 3, H, W), got ", image.dim(),
              " dimension(s) ", image.sizes());
  TORCH_CHECK(image.size(-3) == 3, "img2gray: expected 3 channels in dimension -3, got shape ", image.sizes());
  TORCH_CHECK(image.device().is_cpu() || image.device().is_cuda(), "img2gray: unsupported device ", image.device());
  dtype_of(image);
}

// Calls f(rgb, gray, batch) with views whose leading dimensions are merged into one of uniform
// stride; where they cannot be merged, iterates over the first one.
template <typename F>
void for_each_batch(const at::Tensor& image, const at::Tensor& out, const F& f) {
  const int64_t lead = image.dim() - 3;
  // Dimensions of size 1 have arbitrary strides; leave them out when checking mergeability.
  int64_t batch = 1, in_stride = 0, out_stride = 0;
  bool mergeable = true, first = true;
  for (int64_t d = lead - 1; d >= 0; --d) {
    const int64_t size = image.size(d);
    if (size == 1) continue;
    if (first) {
      in_stride = image.stride(d);
      out_stride = out.stride(d);
      first = false;
    } else if (image.stride(d) != in_stride * batch || out.stride(d) != out_stride * batch) {
      mergeable = false;
      break;
    }
    batch *= size;
  }
  if (mergeable) {
    f(image, out, batch, in_stride, out_stride);
    return;
  }
  for (int64_t i = 0; i < image.size(0); ++i) for_each_batch(image.select(0, i), out.select(0, i), f);
}

void run(const at::Tensor& image, const at::Tensor& out) {
  if (image.numel() == 0) return;
  const rgb2gray::DType dtype = dtype_of(image);
  for_each_batch(image, out, [&](const at::Tensor& in, const at::Tensor& o, int64_t batch, int64_t in_stride_b,
                                 int64_t out_stride_b) {
    const int64_t n = in.dim();
    const char* element = static_cast<const char*>(in.data_ptr());
    rgb2gray::RgbView rgb{element, batch, in.size(n - 2), in.size(n - 1), in_stride_b, in.stride(n - 3),
                          in.stride(n - 2), in.stride(n - 1)};
    rgb2gray::GrayView gray{o.data_ptr(), out_stride_b, o.stride(n - 2), o.stride(n - 1)};
    if (in.is_cpu()) {
      rgb2gray::rgb_to_gray_cpu(dtype, rgb, gray);
      return;
    }
#if defined(CUDA_KERNEL)
    const c10::cuda::CUDAGuard guard(in.device());
    const char* error =
        rgb2gray::rgb_to_gray_cuda(dtype, rgb, gray, c10::cuda::getCurrentCUDAStream(in.device().index()).stream());
    TORCH_CHECK(error == nullptr, "img2gray: CUDA kernel launch failed: ", error);
#else
    TORCH_CHECK(false, "img2gray: this build has no CUDA support (device ", in.device(), ")");
#endif
  });
}

std::vector<int64_t> gray_shape(const at::Tensor& image) {
  std::vector<int64_t> shape = image.sizes().vec();
  shape[shape.size() - 3] = 1;
  return shape;
}

}  // namespace

at::Tensor img2gray(const at::Tensor& image) {
  check_image(image);
  at::Tensor out = at::empty(gray_shape(image), image.options());
  run(image, out);
  return out;
}

void img2gray_out(const at::Tensor& image, at::Tensor& out) {
  check_image(image);
  TORCH_CHECK(out.device() == image.device(), "img2gray_out: out is on ", out.device(), " but image is on ",
              image.device());
  TORCH_CHECK(out.scalar_type() == image.scalar_type(), "img2gray_out: out has dtype ", out.scalar_type(),
              " but image has dtype ", image.scalar_type());
  TORCH_CHECK(out.sizes() == at::IntArrayRef(gray_shape(image)), "img2gray_out: out has shape ", out.sizes(),
              ", expected ", at::IntArrayRef(gray_shape(image)));
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, image);
  run(image, out);
}

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("img2gray(Tensor image) -> Tensor");
  ops.def("img2gray_out(Tensor image, Tensor(a!) out) -> ()");
}

TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, CPU, ops) {
  ops.impl("img2gray", &img2gray);
  ops.impl("img2gray_out", &img2gray_out);
}

#if defined(CUDA_KERNEL)
TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, CUDA, ops) {
  ops.impl("img2gray", &img2gray);
  ops.impl("img2gray_out", &img2gray_out);
}
#endif

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
