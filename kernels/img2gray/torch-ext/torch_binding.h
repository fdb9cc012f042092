#pragma once

#include <torch/csrc/stable/tensor.h>

/// (..., 3, H, W) -> (..., 1, H, W), a new contiguous tensor of the input's dtype and device.
torch::stable::Tensor img2gray(const torch::stable::Tensor& image);
/// Writes into `out` of shape (..., 1, H, W), any strides, same dtype and device as `image`.
void img2gray_out(const torch::stable::Tensor& image, torch::stable::Tensor out);
