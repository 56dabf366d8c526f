// The part of the Metal Shading Language that tqserve's custom kernels use, for compiling a kernel body as C++ and
// running its grid on the CPU (MetalEmulator). Address-space qualifiers vanish, attributes are ignored
// (-Wno-attributes), float16_t is the compiler's _Float16 (IEEE binary16, as Metal's half).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define device
#define constant
#define threadgroup

typedef unsigned int uint;
typedef _Float16 float16_t;

struct uint3 {
    uint x, y, z;
};

namespace metal {
inline float fma(float a, float b, float c) {
    return std::fma(a, b, c);
}

template <typename T>
inline T min(T a, T b) {
    return a < b ? a : b;
}
}  // namespace metal
