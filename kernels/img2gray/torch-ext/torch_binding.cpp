// Op registration and argument checking, written against Torch's stable C++ API
// (torch/csrc/stable): it compiles in about a second where <torch/library.h> and ATen take ten, and
// only uses functions of Torch's stable C ABI. The kernels live in img2gray_cpu/ and img2gray_cuda/
// and see raw pointers and strides (include/img2gray/launch.h).
//
// Both ops are registered for CPU in every variant; the CUDA variant registers them for CUDA too,
// so one op dispatches on the tensor's device.

#include "torch_binding.h"

#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#if defined(CUDA_KERNEL)
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/accelerator.h>
#endif

#include "img2gray/launch.h"
#include "registration.h"

using torch::headeronly::ScalarType;
using torch::stable::Tensor;

namespace {

rgb2gray::DType dtype_of(const Tensor& t) {
  switch (t.scalar_type()) {
    case ScalarType::Byte:
      return rgb2gray::DType::uint8;
    case ScalarType::Half:
      return rgb2gray::DType::float16;
    case ScalarType::BFloat16:
      return rgb2gray::DType::bfloat16;
    case ScalarType::Float:
      return rgb2gray::DType::float32;
    case ScalarType::Double:
      return rgb2gray::DType::float64;
    default:
      STD_TORCH_CHECK(false, "img2gray: unsupported dtype ", torch::headeronly::toString(t.scalar_type()),
                      "; expected uint8, float16, bfloat16, float32 or float64");
  }
}

std::string shape_of(const Tensor& t) {
  std::string out = "[";
  for (int64_t d = 0; d < t.dim(); ++d) out += (d ? ", " : "") + std::to_string(t.size(d));
  return out + "]";
}

void check_image(const Tensor& image) {
  STD_TORCH_CHECK(image.dim() >= 3, "img2gray: expected an image of shape (..., 3, H, W), got ", image.dim(),
                  " dimension(s) ", shape_of(image));
  STD_TORCH_CHECK(image.size(-3) == 3, "img2gray: expected 3 channels in dimension -3, got shape ", shape_of(image));
  STD_TORCH_CHECK(image.is_cpu() || image.is_cuda(), "img2gray: unsupported device (expected CPU or CUDA)");
  dtype_of(image);
}

std::vector<int64_t> gray_shape(const Tensor& image) {
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < image.dim(); ++d) shape.push_back(image.size(d));
  shape[shape.size() - 3] = 1;
  return shape;
}

// The byte range a strided tensor can touch, for overlap checks.
std::pair<uintptr_t, uintptr_t> extent(const Tensor& t) {
  uintptr_t begin = reinterpret_cast<uintptr_t>(t.data_ptr()), last = begin;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) > 0) last += static_cast<uintptr_t>((t.size(d) - 1) * t.stride(d) * int64_t(t.element_size()));
  return {begin, last + t.element_size()};
}

struct Views {
  const char* in;
  char* out;
};

// Calls f(in, out, batch, in_stride, out_stride) for the leading dimensions merged into one of
// uniform stride; where they cannot be merged, iterates over the first one.
template <typename F>
void for_each_batch(const Tensor& image, const Tensor& out, int64_t first_dim, Views base, const F& f) {
  const int64_t lead = image.dim() - 3;
  int64_t batch = 1, in_stride = 0, out_stride = 0;
  bool mergeable = true, first = true;
  for (int64_t d = lead - 1; d >= first_dim; --d) {
    if (image.size(d) == 1) continue;  // any stride
    if (first) {
      in_stride = image.stride(d);
      out_stride = out.stride(d);
      first = false;
    } else if (image.stride(d) != in_stride * batch || out.stride(d) != out_stride * batch) {
      mergeable = false;
      break;
    }
    batch *= image.size(d);
  }
  if (mergeable) {
    f(base, batch, in_stride, out_stride);
    return;
  }
  const int64_t element = int64_t(image.element_size());
  for (int64_t i = 0; i < image.size(first_dim); ++i)
    for_each_batch(image, out, first_dim + 1,
                   {base.in + i * image.stride(first_dim) * element, base.out + i * out.stride(first_dim) * element},
                   f);
}

void run(const Tensor& image, const Tensor& out) {
  if (image.numel() == 0) return;
  const rgb2gray::DType dtype = dtype_of(image);
  const int64_t n = image.dim();
  Views base{static_cast<const char*>(image.data_ptr()), static_cast<char*>(out.data_ptr())};
  for_each_batch(image, out, 0, base, [&](Views views, int64_t batch, int64_t in_stride_b, int64_t out_stride_b) {
    rgb2gray::RgbView rgb{views.in,
                          batch,
                          image.size(n - 2),
                          image.size(n - 1),
                          in_stride_b,
                          image.stride(n - 3),
                          image.stride(n - 2),
                          image.stride(n - 1)};
    rgb2gray::GrayView gray{views.out, out_stride_b, out.stride(n - 2), out.stride(n - 1)};
    if (image.is_cpu()) {
      rgb2gray::rgb_to_gray_cpu(dtype, rgb, gray);
      return;
    }
#if defined(CUDA_KERNEL)
    const torch::stable::accelerator::DeviceGuard guard(image.get_device_index());
    void* stream = nullptr;
    TORCH_ERROR_CODE_CHECK(aoti_torch_get_current_cuda_stream(image.get_device_index(), &stream));
    const char* error = rgb2gray::rgb_to_gray_cuda(dtype, rgb, gray, stream);
    STD_TORCH_CHECK(error == nullptr, "img2gray: CUDA kernel launch failed: ", error);
#else
    STD_TORCH_CHECK(false, "img2gray: this build has no CUDA support");
#endif
  });
}

}  // namespace

Tensor img2gray(const Tensor& image) {
  check_image(image);
  const std::vector<int64_t> shape = gray_shape(image);
  Tensor out = torch::stable::new_empty(image, shape);
  run(image, out);
  return out;
}

void img2gray_out(const Tensor& image, Tensor out) {
  check_image(image);
  STD_TORCH_CHECK(out.is_cuda() == image.is_cuda() && out.get_device_index() == image.get_device_index(),
                  "img2gray_out: out is on ", out.is_cuda() ? "cuda" : "cpu", " but image is on ",
                  image.is_cuda() ? "cuda" : "cpu");
  STD_TORCH_CHECK(out.scalar_type() == image.scalar_type(), "img2gray_out: out has dtype ",
                  torch::headeronly::toString(out.scalar_type()), " but image has dtype ",
                  torch::headeronly::toString(image.scalar_type()));
  const std::vector<int64_t> shape = gray_shape(image);
  bool same_shape = out.dim() == int64_t(shape.size());
  for (int64_t d = 0; same_shape && d < out.dim(); ++d) same_shape = out.size(d) == shape[size_t(d)];
  std::string expected = "[";
  for (size_t d = 0; d < shape.size(); ++d) expected += (d ? ", " : "") + std::to_string(shape[d]);
  STD_TORCH_CHECK(same_shape, "img2gray_out: out has shape ", shape_of(out), ", expected ", expected + "]");
  for (int64_t d = 0; d < out.dim(); ++d)
    STD_TORCH_CHECK(out.size(d) <= 1 || out.stride(d) != 0, "img2gray_out: out has overlapping elements");
  if (out.numel() > 0 && image.numel() > 0) {
    auto [out_begin, out_end] = extent(out);
    auto [in_begin, in_end] = extent(image);
    STD_TORCH_CHECK(out_end <= in_begin || in_end <= out_begin, "img2gray_out: out overlaps image");
  }
  run(image, out);
}

STABLE_TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("img2gray(Tensor image) -> Tensor");
  ops.def("img2gray_out(Tensor image, Tensor(a!) out) -> ()");
}

STABLE_TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, CPU, ops) {
  ops.impl("img2gray", TORCH_BOX(&img2gray));
  ops.impl("img2gray_out", TORCH_BOX(&img2gray_out));
}

#if defined(CUDA_KERNEL)
STABLE_TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, CUDA, ops) {
  ops.impl("img2gray", TORCH_BOX(&img2gray));
  ops.impl("img2gray_out", TORCH_BOX(&img2gray_out));
}
#endif

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
