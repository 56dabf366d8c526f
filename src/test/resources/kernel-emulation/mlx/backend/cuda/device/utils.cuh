// Stand-in for MLX's mlx/backend/cuda/device/utils.cuh when nvcc compiles a custom kernel the way MLX's
// cuda_kernel wraps it (MlxTurboCudaCompileTest): the same CUDA headers and the two types the wrapper's parameters
// use (Shape, Strides: arrays of MLX's MAX_NDIM = 10 dimensions). Nothing else of MLX's header is used by
// tqserve's kernels.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda/std/array>
#include <cuda/std/limits>
#include <cuda/std/tuple>

namespace mlx::core::cu {

using Shape = cuda::std::array<int32_t, 10>;
using Strides = cuda::std::array<int64_t, 10>;

}  // namespace mlx::core::cu
