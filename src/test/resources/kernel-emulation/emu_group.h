// The threads of one threadgroup (Metal) or block (CUDA) as OS threads, for running a kernel body on the CPU
// (KernelEmulator): every thread of the group runs the body at once, and the SIMD-group operations the bodies use
// (Metal's simd_sum, CUDA's __shfl_xor_sync) meet at a barrier of the whole group, each lane publishing its value in
// a slot and reading the slots of its 32-lane SIMD group. Valid for bodies that call them in uniform control flow,
// as tqserve's do.
#pragma once
#include <algorithm>
#include <barrier>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

struct tq_emu_group {
    std::barrier<>* bar;
    float* slots;
};

inline thread_local tq_emu_group* tq_emu_ctx = nullptr;
inline thread_local unsigned tq_emu_linear = 0;  // the thread's index in its group

inline float tq_emu_simd_sum(float v) {
    tq_emu_ctx->slots[tq_emu_linear] = v;
    tq_emu_ctx->bar->arrive_and_wait();
    unsigned base = tq_emu_linear & ~31u;
    float s = 0.0f;
    for (unsigned i = 0; i < 32; i++) {
        s += tq_emu_ctx->slots[base + i];
    }
    tq_emu_ctx->bar->arrive_and_wait();
    return s;
}

inline float tq_emu_shfl_xor(float v, int lane_mask) {
    tq_emu_ctx->slots[tq_emu_linear] = v;
    tq_emu_ctx->bar->arrive_and_wait();
    float r = tq_emu_ctx->slots[(tq_emu_linear & ~31u) | ((tq_emu_linear & 31u) ^ (unsigned) lane_mask)];
    tq_emu_ctx->bar->arrive_and_wait();
    return r;
}

// Runs body(linear) on `count` threads of one group, with a barrier and slots for its SIMD operations.
template <typename F>
inline void tq_emu_run_group(unsigned count, F body) {
    std::barrier<> bar((std::ptrdiff_t) count);
    std::vector<float> slots((count + 31u) & ~31u);
    tq_emu_group g{&bar, slots.data()};
    std::vector<std::thread> threads;
    threads.reserve(count);
    for (unsigned i = 0; i < count; i++) {
        threads.emplace_back([&g, &body, i] {
            tq_emu_ctx = &g;
            tq_emu_linear = i;
            body(i);
        });
    }
    for (auto& t : threads) {
        t.join();
    }
}

inline std::vector<unsigned char> tq_emu_slurp(const char* f, size_t n) {
    std::vector<unsigned char> v(n + 16);
    FILE* h = std::fopen(f, "rb");
    if (!h || std::fread(v.data(), 1, n, h) != n) std::exit(2);
    std::fclose(h);
    return v;
}

inline void tq_emu_spill(const char* f, const std::vector<unsigned char>& v) {
    FILE* h = std::fopen(f, "wb");
    if (!h || std::fwrite(v.data(), 1, v.size(), h) != v.size()) std::exit(3);
    std::fclose(h);
}
