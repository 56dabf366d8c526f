// The part of the Metal Shading Language that tqserve's custom kernels use, for compiling a kernel body as C++ and
// running its grid on the CPU (KernelEmulator). Address-space qualifiers vanish, attributes are ignored
// (-Wno-attributes), float16_t is the compiler's _Float16 (IEEE binary16, as Metal's half), simd_sum meets the
// other lanes of the SIMD group (emu_group.h).
#pragma once
#include <cmath>
#include "emu_group.h"

#define device
#define constant
#define threadgroup

typedef unsigned int uint;
typedef _Float16 float16_t;

struct uint3 {
    uint x, y, z;
};

template <typename T, typename F>
inline T as_type(F f) {
    static_assert(sizeof(T) == sizeof(F));
    T t;
    std::memcpy(&t, &f, sizeof(T));
    return t;
}

namespace metal {
inline float fma(float a, float b, float c) {
    return std::fma(a, b, c);
}

inline float exp(float x) {
    return std::exp(x);
}

inline float log(float x) {
    return std::log(x);
}

template <typename T>
inline T min(T a, T b) {
    return a < b ? a : b;
}

template <typename T>
inline T max(T a, T b) {
    return a < b ? b : a;
}

inline float simd_sum(float v) {
    return tq_emu_simd_sum(v);
}
}  // namespace metal
