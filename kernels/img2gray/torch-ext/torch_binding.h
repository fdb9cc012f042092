#pragma once

#include <ATen/core/Tensor.h>

/// (..., 3, H, W) -> (..., 1, H, W), a new contiguous tensor of the input's dtype and device.
at::Tensor img2gray(const at::Tensor& image);
/// Writes into `out` of shape (..., 1, H, W), any strides, same dtype and device as `image`.
void img2gray_out(const at::Tensor& image, at::Tensor& out);
