// CUDA implementation. No Torch headers here: the binding passes raw pointers, element strides and
// the stream (see include/img2gray/launch.h), which keeps nvcc fast and the object reusable across
// Torch versions.
//
// Three paths, picked per call:
//  - planar:      each image's R, G and B planes are contiguous (NCHW): every thread converts one
//                 16-byte vector of pixels per plane (16 uint8, 8 half, 4 float, 2 double pixels);
//  - interleaved: pixels are RGBRGB... (an HWC image viewed as CHW, or channels_last): every thread
//                 loads three 16-byte vectors and de-interleaves them in registers;
//  - strided:     anything else, one pixel per thread on a 2D grid (x: width, y: rows).
// The vector paths run on a 2D grid as well (x: chunks of an image, y: images of the batch).
// Arithmetic matches torchvision's eager rgb_to_grayscale; -fmad=false keeps multiplies and adds
// separately rounded, as torchvision's separate element-wise kernels do.
//
// No anonymous namespace: nvcc names its symbols after a module id derived from the source's
// absolute path, which would make the object differ between checkouts (kbuild builds are
// reproducible across directories). `detail` plus hidden visibility serves the same purpose.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "img2gray/launch.h"

namespace rgb2gray {
namespace detail {

template <typename T>
struct Math;
template <>
struct Math<std::uint8_t> {
  using Acc = float;
  __device__ static Acc load(std::uint8_t v) { return static_cast<float>(v); }
  __device__ static std::uint8_t store(Acc v) { return static_cast<std::uint8_t>(v); }
};
template <>
struct Math<__half> {
  using Acc = float;
  __device__ static Acc load(__half v) { return __half2float(v); }
  __device__ static __half store(Acc v) { return __float2half_rn(v); }
};
template <>
struct Math<__nv_bfloat16> {
  using Acc = float;
  __device__ static Acc load(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ static __nv_bfloat16 store(Acc v) { return __float2bfloat16_rn(v); }
};
template <>
struct Math<float> {
  using Acc = float;
  __device__ static Acc load(float v) { return v; }
  __device__ static float store(Acc v) { return v; }
};
template <>
struct Math<double> {
  using Acc = double;
  __device__ static Acc load(double v) { return v; }
  __device__ static double store(Acc v) { return v; }
};

template <typename T>
__device__ __forceinline__ T gray(T r, T g, T b) {
  using M = Math<T>;
  using Acc = typename M::Acc;
  Acc y = Acc(0.2989) * M::load(r);
  y = y + Acc(0.587) * M::load(g);
  y = y + Acc(0.114) * M::load(b);
  return M::store(y);
}

constexpr int k_threads = 256;
constexpr int k_max_grid_y = 65535;

// 16 bytes of T.
template <typename T>
struct alignas(16) Vec {
  static constexpr int size = 16 / sizeof(T);
  T v[size];
};

template <typename T>
__global__ void planar_kernel(const T* __restrict__ in, std::int64_t in_stride_b, std::int64_t stride_c,
                              T* __restrict__ out, std::int64_t out_stride_b, std::int64_t pixels,
                              std::int64_t batch_offset) {
  using V = Vec<T>;
  const std::int64_t image = batch_offset + blockIdx.y;
  const T* r = in + image * in_stride_b;
  const T* g = r + stride_c;
  const T* b = g + stride_c;
  T* o = out + image * out_stride_b;
  const std::int64_t vectors = pixels / V::size;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < vectors;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    V vr = reinterpret_cast<const V*>(r)[i];
    V vg = reinterpret_cast<const V*>(g)[i];
    V vb = reinterpret_cast<const V*>(b)[i];
    V vo;
#pragma unroll
    for (int k = 0; k < V::size; ++k) vo.v[k] = gray(vr.v[k], vg.v[k], vb.v[k]);
    reinterpret_cast<V*>(o)[i] = vo;
  }
  // Tail: fewer than one vector of pixels.
  const std::int64_t tail = vectors * V::size + std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (tail < pixels && tail < vectors * V::size + V::size) o[tail] = gray(r[tail], g[tail], b[tail]);
}

template <typename T>
__global__ void interleaved_kernel(const T* __restrict__ in, std::int64_t in_stride_b, T* __restrict__ out,
                                   std::int64_t out_stride_b, std::int64_t pixels, std::int64_t batch_offset) {
  using V = Vec<T>;
  const std::int64_t image = batch_offset + blockIdx.y;
  const T* src = in + image * in_stride_b;
  T* o = out + image * out_stride_b;
  const std::int64_t vectors = pixels / V::size;  // one output vector = three input vectors
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < vectors;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    V a[3];
#pragma unroll
    for (int k = 0; k < 3; ++k) a[k] = reinterpret_cast<const V*>(src)[3 * i + k];
    const T* px = a[0].v;  // 3 * V::size consecutive elements: RGBRGB...
    V vo;
#pragma unroll
    for (int k = 0; k < V::size; ++k) vo.v[k] = gray(px[3 * k], px[3 * k + 1], px[3 * k + 2]);
    reinterpret_cast<V*>(o)[i] = vo;
  }
  const std::int64_t tail = vectors * V::size + std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (tail < pixels && tail < vectors * V::size + V::size)
    o[tail] = gray(src[3 * tail], src[3 * tail + 1], src[3 * tail + 2]);
}

template <typename T>
__global__ void strided_kernel(RgbView in, GrayView out, std::int64_t row_offset, std::int64_t rows) {
  const std::int64_t row = row_offset + blockIdx.y;
  if (row >= rows) return;
  const std::int64_t b = row / in.height, h = row % in.height;
  const T* src = static_cast<const T*>(in.data) + b * in.stride_b + h * in.stride_h;
  T* dst = static_cast<T*>(out.data) + b * out.stride_b + h * out.stride_h;
  for (std::int64_t w = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; w < in.width;
       w += std::int64_t(gridDim.x) * blockDim.x) {
    const T* p = src + w * in.stride_w;
    dst[w * out.stride_w] = gray(p[0], p[in.stride_c], p[2 * in.stride_c]);
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15) == 0; }

int grid_x_for(std::int64_t work_items) {
  std::int64_t blocks = (work_items + k_threads - 1) / k_threads;
  if (blocks < 1) blocks = 1;
  if (blocks > (1 << 20)) blocks = 1 << 20;  // grid-stride loops cover the rest
  return static_cast<int>(blocks);
}

template <typename T>
const char* launch(const RgbView& in, const GrayView& out, cudaStream_t stream) {
  constexpr std::int64_t bytes = sizeof(T);
  constexpr std::int64_t vec = Vec<T>::size;
  const std::int64_t pixels = in.height * in.width;
  const T* src = static_cast<const T*>(in.data);
  T* dst = static_cast<T*>(out.data);
  const bool out_flat = out.stride_w == 1 && out.stride_h == in.width;
  const bool out_aligned = aligned16(dst) && (out.stride_b * bytes) % 16 == 0;
  const bool planar = in.stride_w == 1 && in.stride_h == in.width && out_flat && out_aligned && aligned16(src) &&
                      (in.stride_c * bytes) % 16 == 0 && (in.stride_b * bytes) % 16 == 0;
  const bool interleaved = in.stride_c == 1 && in.stride_w == 3 && in.stride_h == 3 * in.width && out_flat &&
                           out_aligned && aligned16(src) && (in.stride_b * bytes) % 16 == 0;
  if (planar || interleaved) {
    const int grid_x = grid_x_for((pixels + vec - 1) / vec);
    for (std::int64_t first = 0; first < in.batch; first += k_max_grid_y) {
      const unsigned images = static_cast<unsigned>(in.batch - first < k_max_grid_y ? in.batch - first : k_max_grid_y);
      dim3 grid(grid_x, images);
      if (planar)
        planar_kernel<T>
            <<<grid, k_threads, 0, stream>>>(src, in.stride_b, in.stride_c, dst, out.stride_b, pixels, first);
      else
        interleaved_kernel<T><<<grid, k_threads, 0, stream>>>(src, in.stride_b, dst, out.stride_b, pixels, first);
    }
  } else {
    const std::int64_t rows = in.batch * in.height;
    const int grid_x = grid_x_for(in.width);
    for (std::int64_t first = 0; first < rows; first += k_max_grid_y) {
      const unsigned count = static_cast<unsigned>(rows - first < k_max_grid_y ? rows - first : k_max_grid_y);
      strided_kernel<T><<<dim3(grid_x, count), k_threads, 0, stream>>>(in, out, first, rows);
    }
  }
  cudaError_t error = cudaGetLastError();
  return error == cudaSuccess ? nullptr : cudaGetErrorString(error);
}

}  // namespace detail

using namespace detail;

const char* rgb_to_gray_cuda(DType dtype, const RgbView& in, const GrayView& out, void* stream) {
  if (in.batch == 0 || in.height == 0 || in.width == 0) return nullptr;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (dtype) {
    case DType::uint8:
      return launch<std::uint8_t>(in, out, s);
    case DType::float16:
      return launch<__half>(in, out, s);
    case DType::bfloat16:
      return launch<__nv_bfloat16>(in, out, s);
    case DType::float32:
      return launch<float>(in, out, s);
    case DType::float64:
      return launch<double>(in, out, s);
  }
  return "unsupported dtype";
}

}  // namespace rgb2gray
