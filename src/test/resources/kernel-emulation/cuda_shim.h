// The part of CUDA that tqserve's custom kernels use, in place of the header MLX's cuda_kernel wrapper includes
// (mlx/backend/cuda/device/utils.cuh) and <cooperative_groups.h>, for compiling a kernel as C++ and running its grid
// on the CPU (KernelEmulator). Qualifiers vanish, __half is the compiler's _Float16 (IEEE binary16), the built-in
// index variables are per-thread globals the emulator sets, __shfl_xor_sync meets the other lanes of the warp
// (emu_group.h).
#pragma once
#include <array>
#include <cmath>
#include <math.h>
#include "emu_group.h"

#define __global__
#define __device__
#define __forceinline__ inline
#define __grid_constant__

typedef _Float16 __half;

struct tq_emu_dim3 {
    unsigned x, y, z;
};

inline thread_local tq_emu_dim3 threadIdx;
inline thread_local tq_emu_dim3 blockIdx;
inline thread_local tq_emu_dim3 blockDim;
inline thread_local tq_emu_dim3 gridDim;

inline float __half2float(__half h) {
    return (float) h;
}

inline float __int_as_float(int i) {
    float f;
    std::memcpy(&f, &i, sizeof f);
    return f;
}

inline float __shfl_xor_sync(unsigned mask, float v, int lane_mask) {
    (void) mask;
    return tq_emu_shfl_xor(v, lane_mask);
}

namespace cooperative_groups {}

namespace mlx::core::cu {
using Shape = std::array<int32_t, 10>;
}
