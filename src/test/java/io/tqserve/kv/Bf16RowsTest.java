package io.tqserve.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.tqserve.backend.Kernels;
import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.backend.cpu.ScalarKernels;
import io.tqserve.backend.cpu.VectorKernels;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The bf16 cache attends the rows of a multi-row pass together per KV head ({@link Bf16Rows}); every row's output
 * must be bit-identical to attending the rows one at a time, on the vector kernels and their scalar twins, across
 * the cache's 256-token chunk boundary, past the rows one task serves, and at a head size with a vector tail.
 */
class Bf16RowsTest {

    static Stream<Arguments> cases() {
        return Stream.of(
                Arguments.of(new AttentionShape(1, 4, 2, 128), 7, 1),
                Arguments.of(new AttentionShape(1, 4, 2, 128), 240, 2),
                Arguments.of(new AttentionShape(1, 3, 1, 64), 30, 1),
                Arguments.of(new AttentionShape(1, 8, 2, 40), 250, 3),
                Arguments.of(new AttentionShape(1, 2, 2, 128), 1, 2));
    }

    @ParameterizedTest
    @MethodSource("cases")
    void multiRowPassesAreBitIdenticalToOneRowAtATime(AttentionShape shape, int prefill, int threads) {
        int total = prefill + 70;
        SplittableRandom rnd = new SplittableRandom(prefill * 31L + shape.headDim());
        float[] q = random(rnd, total * shape.qDim());
        float[] k = random(rnd, total * shape.kvDim());
        float[] v = random(rnd, total * shape.kvDim());
        for (Kernels kernels : List.of(new VectorKernels(), new ScalarKernels())) {
            try (CpuBackend backend = new CpuBackend(kernels, threads, "test")) {
                float[] one = run(shape, backend, q, k, v, prefill, total, 1);
                float[] many = run(shape, backend, q, k, v, prefill, total, 9, 1, 2, 5, 35, 17);
                assertArrayEquals(one, many, kernels.name());
                boolean nonzero = false;
                for (int i = prefill * shape.qDim(); i < one.length && !nonzero; i++) {
                    nonzero = one[i] != 0f;
                }
                assertFalse(!nonzero, "attention outputs are all zero");
            }
        }
    }

    /** A prefill, then passes of sizes[i % sizes.length] rows until total; returns every row's output. */
    private static float[] run(AttentionShape s, CpuBackend backend, float[] q, float[] k, float[] v, int prefill,
            int total, int... sizes) {
        float[] out = new float[total * s.qDim()];
        try (Bf16KvCache cache = new Bf16KvCache(s, backend, total)) {
            int pos = 0;
            for (int step = 0; pos < total; step++) {
                int rows = Math.min(total - pos, pos == 0 ? prefill : sizes[step % sizes.length]);
                float[] att = new float[rows * s.qDim()];
                cache.attend(0, 0, rows, slice(q, pos, rows, s.qDim()), slice(k, pos, rows, s.kvDim()),
                        slice(v, pos, rows, s.kvDim()), att);
                System.arraycopy(att, 0, out, pos * s.qDim(), att.length);
                cache.advance(rows);
                pos += rows;
            }
        }
        return out;
    }

    private static float[] slice(float[] x, int row, int rows, int width) {
        float[] r = new float[rows * width];
        System.arraycopy(x, row * width, r, 0, r.length);
        return r;
    }

    private static float[] random(SplittableRandom rnd, int n) {
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = (float) rnd.nextGaussian();
        }
        return x;
    }
}
