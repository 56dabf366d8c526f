package io.tqserve.backend.mlx;

import io.tqserve.backend.mlx.ffm.MlxCustomKernel.Gpu;
import java.util.List;

/**
 * The sources of the fused TurboQuant decode attention ({@link MlxTurboKernels}), one body per algorithm for every
 * GPU language MLX runs custom kernels in. Each body is plain C-like arithmetic (index math, loops, bit unpacking)
 * over a handful of names that the language's {@link #header header} and {@link #prelude prelude} define:
 *
 * <ul>
 *   <li>{@code tq_x}, {@code tq_y}, {@code tq_z}: the thread's position in the grid (Metal's
 *       {@code thread_position_in_grid}; CUDA's {@code blockIdx·blockDim + threadIdx});</li>
 *   <li>{@code TQ_GLOBAL}: the address space of the inputs ({@code device} in Metal, nothing in CUDA);</li>
 *   <li>{@code TQ_FMA}, {@code TQ_EXP}, {@code TQ_LOG}, {@code TQ_MAX}, {@code TQ_HALF} (fp16 to float),
 *       {@code TQ_BITS_FLOAT} (an int's bits as a float);</li>
 *   <li>{@code tq_warp_sum(v)}: the sum of v over the 32 threads of a SIMD group (Metal's {@code simd_sum}; a
 *       butterfly of {@code __shfl_xor_sync} in CUDA).</li>
 * </ul>
 *
 * MLX writes the kernel's signature around the body (inputs by name and dtype, the {@code name_shape} arrays the
 * body mentions, outputs; template arguments as Metal template parameters or CUDA {@code constexpr}s), so the body
 * is the whole kernel. A fix to a body lands in every language; the emulation test
 * ({@code MlxTurboKernelEmulationTest}) runs both languages' generated sources against the Java codec on the CPU,
 * and {@code MlxTurboCudaCompileTest} compiles the CUDA sources as MLX wraps them with {@code nvcc}.
 *
 * <h2>The algorithm (flash-decoding)</h2>
 * {@link #DECODE_BODY} ({@code tq_decode}): one SIMD group (32 threads) per (block of {@code BLOCK} quantized
 * tokens, query row, KV head). Lane i holds the query's dimensions i, i+32, … (one per scale group of 32). Per
 * token, each lane unpacks its dimensions' key codes from the LSB-first bitstream ({@code docs/kv-format.md}),
 * forms Σ scale_g·q·code, and a SIMD sum gives the dot product; the zero term Σ_g scale_g·zero_g·Σq_g is the same
 * on every lane. The scaled score updates a running maximum and sum (online softmax), and each lane rescales its
 * accumulators and adds p·c[code]·scale of its value dimensions in the rotated domain. The group writes its
 * block's (rotated sums, maximum, sum). {@link #REDUCE_BODY} ({@code tq_reduce}): one thread per (rotated
 * dimension, query row, KV head) merges the blocks: m = max m_b, l = Σ l_b·e^(m_b−m), out = Σ acc_b·e^(m_b−m) / l,
 * and writes m + log l, the log of the quantized tokens' softmax mass, for merging with the bf16 prefix. The
 * inverse Hadamard transform and the sign flip stay one op each per row ({@link MlxTurboAttention}).
 */
final class MlxTurboKernelSource {
    /** Inputs of {@code tq_decode}: q (H, m, D) float32, n (1) int32, the cache's five sections, the codebook. */
    static final List<String> DECODE_INPUTS = List.of("q", "meta", "kc", "ks", "kz", "vc", "vs", "cent");
    /** Output of {@code tq_decode}: per (H, m, block) the D rotated sums, the block's maximum and sum. */
    static final List<String> DECODE_OUTPUTS = List.of("part");
    /** Input of {@code tq_reduce}: {@code tq_decode}'s output, (H, m, blocks, D + 2). */
    static final List<String> REDUCE_INPUTS = List.of("part");
    /**
     * Outputs of {@code tq_reduce}: normalised rotated sums (H, m, D) and the log of the softmax mass,
     * log Σ e^score (H, m, 1).
     */
    static final List<String> REDUCE_OUTPUTS = List.of("out", "lse");

    /** Threads of a SIMD group (Apple GPUs and NVIDIA warps alike); {@code tq_decode}'s threadgroup. */
    static final int SIMD = 32;

    /**
     * Body of {@code tq_decode}; template D (head_dim), KB (key bits), KSIGNED, VB (value bits), BLOCK (tokens per
     * group), SCALE_BITS (the float 1/√D's bits); grid (32·blocks, m, H), threadgroup (32, 1, 1) →
     * part (H, m, blocks, D + 2).
     */
    static final String DECODE_BODY = """
            uint lane = tq_x % 32u;
            uint b = tq_x / 32u;
            uint r = tq_y;
            uint h = tq_z;
            uint m = uint(q_shape[1]);
            uint n = uint(meta[0]);
            uint capacity = uint(kc_shape[2]);
            uint blocks = (n + uint(BLOCK) - 1u) / uint(BLOCK);
            const TQ_GLOBAL float* qr = q + (h * m + r) * D;
            float qv[D / 32];
            float qsum[D / 32];
            float acc[D / 32];
            for (uint g = 0; g < D / 32; g++) {
                qv[g] = qr[g * 32u + lane];
                qsum[g] = tq_warp_sum(qv[g]);
                acc[g] = 0.0f;
            }
            const float scale = TQ_BITS_FLOAT(SCALE_BITS);
            const uint kmask = (1u << KB) - 1u;
            const uint vmask = (1u << VB) - 1u;
            float mx = -3.0e38f;
            float l = 0.0f;
            uint end = (b + 1u) * uint(BLOCK) < n ? (b + 1u) * uint(BLOCK) : n;
            for (uint t = b * uint(BLOCK); t < end; t++) {
                uint entry = h * capacity + t;
                const TQ_GLOBAL uint8_t* kcodes = kc + entry * (D * KB / 8);
                const TQ_GLOBAL uint8_t* vcodes = vc + entry * (D * VB / 8);
                float dot = 0.0f;
                float bias = 0.0f;
                float vr[D / 32];
                for (uint g = 0; g < D / 32; g++) {
                    uint i = g * 32u + lane;
                    uint bit = i * KB;
                    uint word = uint(kcodes[bit >> 3]);
                    if ((bit & 7u) + KB > 8) {
                        word |= uint(kcodes[(bit >> 3) + 1u]) << 8;
                    }
                    int code = int((word >> (bit & 7u)) & kmask);
                    if (KSIGNED && code > 127) {
                        code -= 256;
                    }
                    float ksc = TQ_HALF(ks[entry * (D / 32) + g]);
                    dot = TQ_FMA(ksc * qv[g], float(code), dot);
                    bias = TQ_FMA(ksc * TQ_HALF(kz[entry * (D / 32) + g]), qsum[g], bias);
                    uint vbit = i * VB;
                    uint vword = uint(vcodes[vbit >> 3]);
                    if ((vbit & 7u) + VB > 8) {
                        vword |= uint(vcodes[(vbit >> 3) + 1u]) << 8;
                    }
                    vr[g] = cent[(vword >> (vbit & 7u)) & vmask] * TQ_HALF(vs[entry * (D / 32) + g]);
                }
                float s = (tq_warp_sum(dot) + bias) * scale;
                float mn = TQ_MAX(mx, s);
                float corr = TQ_EXP(mx - mn);
                float p = TQ_EXP(s - mn);
                l = TQ_FMA(l, corr, p);
                for (uint g = 0; g < D / 32; g++) {
                    acc[g] = TQ_FMA(acc[g], corr, p * vr[g]);
                }
                mx = mn;
            }
            TQ_GLOBAL float* o = part + ((h * m + r) * blocks + b) * (D + 2);
            for (uint g = 0; g < D / 32; g++) {
                o[g * 32u + lane] = acc[g];
            }
            if (lane == 0u) {
                o[D] = mx;
                o[D + 1] = l;
            }
            """;

    /**
     * Body of {@code tq_reduce}; template D; grid (D, m, H), threadgroup (D, 1, 1) → out (H, m, D), lse (H, m, 1).
     */
    static final String REDUCE_BODY = """
            uint j = tq_x;
            uint r = tq_y;
            uint h = tq_z;
            uint m = uint(part_shape[1]);
            uint blocks = uint(part_shape[2]);
            const TQ_GLOBAL float* p = part + (h * m + r) * blocks * (D + 2);
            float mx = -3.0e38f;
            for (uint b = 0; b < blocks; b++) {
                mx = TQ_MAX(mx, p[b * (D + 2) + D]);
            }
            float l = 0.0f;
            float acc = 0.0f;
            for (uint b = 0; b < blocks; b++) {
                float a = TQ_EXP(p[b * (D + 2) + D] - mx);
                l = TQ_FMA(p[b * (D + 2) + D + 1], a, l);
                acc = TQ_FMA(p[b * (D + 2) + j], a, acc);
            }
            out[(h * m + r) * D + j] = acc / l;
            if (j == 0u) {
                lse[h * m + r] = mx + TQ_LOG(l);
            }
            """;

    private static final String METAL_HEADER = """
            #ifndef TQ_KERNEL_HEADER
            #define TQ_KERNEL_HEADER
            #define TQ_GLOBAL device
            #define TQ_FMA(a, b, c) metal::fma(a, b, c)
            #define TQ_EXP(x) metal::exp(x)
            #define TQ_LOG(x) metal::log(x)
            #define TQ_MAX(a, b) metal::max(a, b)
            #define TQ_HALF(x) float(x)
            #define TQ_BITS_FLOAT(x) as_type<float>(int(x))
            inline float tq_warp_sum(float v) {
                return metal::simd_sum(v);
            }
            #endif
            """;

    private static final String CUDA_HEADER = """
            #ifndef TQ_KERNEL_HEADER
            #define TQ_KERNEL_HEADER
            #define TQ_GLOBAL
            #define TQ_FMA(a, b, c) fmaf(a, b, c)
            #define TQ_EXP(x) expf(x)
            #define TQ_LOG(x) logf(x)
            #define TQ_MAX(a, b) fmaxf(a, b)
            #define TQ_HALF(x) __half2float(x)
            #define TQ_BITS_FLOAT(x) __int_as_float(int(x))
            typedef unsigned int uint;
            __device__ __forceinline__ float tq_warp_sum(float v) {
                for (int o = 16; o > 0; o >>= 1) {
                    v += __shfl_xor_sync(0xffffffffu, v, o);
                }
                return v;
            }
            #endif
            """;

    private static final String METAL_PRELUDE = """
            uint tq_x = thread_position_in_grid.x;
            uint tq_y = thread_position_in_grid.y;
            uint tq_z = thread_position_in_grid.z;
            """;

    private static final String CUDA_PRELUDE = """
            uint tq_x = blockIdx.x * blockDim.x + threadIdx.x;
            uint tq_y = blockIdx.y * blockDim.y + threadIdx.y;
            uint tq_z = blockIdx.z * blockDim.z + threadIdx.z;
            """;

    private MlxTurboKernelSource() {
    }

    /** The header (macros and helpers) for kernels in {@code gpu}'s language, placed before the kernel. */
    static String header(Gpu gpu) {
        return gpu == Gpu.METAL ? METAL_HEADER : CUDA_HEADER;
    }

    /** The kernel source MLX receives for {@code body} in {@code gpu}'s language: the prelude, then the body. */
    static String source(Gpu gpu, String body) {
        return (gpu == Gpu.METAL ? METAL_PRELUDE : CUDA_PRELUDE) + body;
    }
}
