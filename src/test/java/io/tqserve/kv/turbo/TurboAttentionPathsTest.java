package io.tqserve.kv.turbo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.kv.AttentionShape;
import io.tqserve.kv.KvScheme;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The three attention paths over a turbo cache against each other and against attention computed in double over
 * the codec's own decode of the exported entries; the vector kernels against their scalar twins (bit-identical).
 * Inputs are random K/V/Q fed straight to {@code attend}: a fresh prefill of n−1 tokens, then decode steps and a
 * multi-row continuation, which attend over the stored codes.
 */
class TurboAttentionPathsTest {
    static CpuBackend backend;

    @BeforeAll
    static void start() {
        backend = CpuBackend.create(2);
    }

    @AfterAll
    static void stop() {
        backend.close();
    }

    /** Random K/V/Q with the outliers real models have: a few large channels, varied magnitudes per token. */
    record Inputs(float[] q, float[] k, float[] v) {
        static Inputs random(AttentionShape s, int tokens, long seed) {
            Random rnd = new Random(seed);
            float[] q = new float[tokens * s.qDim()];
            float[] k = new float[tokens * s.kvDim()];
            float[] v = new float[tokens * s.kvDim()];
            for (int i = 0; i < q.length; i++) {
                q[i] = (float) rnd.nextGaussian() * (i % 17 == 0 ? 4f : 1f);
            }
            for (int i = 0; i < k.length; i++) {
                float mag = (i % s.headDim()) % 13 == 0 ? 6f : 1f;
                k[i] = (float) (rnd.nextGaussian() * mag + 0.5);
                v[i] = (float) rnd.nextGaussian() * (1f + (i / s.kvDim()) % 3);
            }
            return new Inputs(q, k, v);
        }
    }

    /** Runs: prefill of {@code prefill} rows, then single-row steps and one 3-row chunk; returns every output row. */
    static float[] run(TurboQuantKvCache cache, Inputs in, int prefill, int total) {
        return runChunks(cache, in, prefill, total, 1, 1, 3); // chunks of 1, 3, 1, 1, 3, ... rows
    }

    /**
     * A prefill of {@code prefill} rows, then chunk i (from 1) of {@code sizes[i % sizes.length]} rows until
     * {@code total}; returns every output row of layer 0.
     */
    static float[] runChunks(TurboQuantKvCache cache, Inputs in, int prefill, int total, int... sizes) {
        AttentionShape s = cache.shape();
        float[] out = new float[total * s.qDim()];
        int pos = 0;
        for (int step = 0; pos < total; step++) {
            int rows = Math.min(total - pos, pos == 0 ? prefill : sizes[step % sizes.length]);
            for (int layer = 0; layer < s.layers(); layer++) {
                float[] att = new float[rows * s.qDim()];
                cache.attend(layer, 0, rows, slice(in.q, pos, rows, s.qDim()), slice(in.k, pos, rows, s.kvDim()),
                        slice(in.v, pos, rows, s.kvDim()), att);
                if (layer == 0) {
                    System.arraycopy(att, 0, out, pos * s.qDim(), att.length);
                }
            }
            cache.advance(rows);
            pos += rows;
        }
        return out;
    }

    static float[] slice(float[] x, int row, int rows, int width) {
        float[] r = new float[rows * width];
        System.arraycopy(x, row * width, r, 0, r.length);
        return r;
    }

    /** Attention in double over the codec's decode of the exported entries, for positions from..total-1. */
    static double[] reference(TurboQuantKvCache cache, Inputs in, int from, int total) {
        AttentionShape s = cache.shape();
        int d = s.headDim();
        TurboCodec codec = TurboCodec.of((KvScheme.Turbo) cache.scheme(), d);
        float[] k = new float[total * s.kvDim()];
        float[] v = new float[total * s.kvDim()];
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate((long) total * s.numKvHeads() * codec.entryBytes());
            cache.exportLayer(0, 0, total, buf);
            for (int t = 0; t < total; t++) {
                for (int g = 0; g < s.numKvHeads(); g++) {
                    codec.decode(buf, ((long) t * s.numKvHeads() + g) * codec.entryBytes(), k, t * s.kvDim() + g * d, v,
                            t * s.kvDim() + g * d);
                }
            }
        }
        double[] out = new double[(total - from) * s.qDim()];
        double scale = 1.0 / Math.sqrt(d);
        for (int p = from; p < total; p++) {
            for (int h = 0; h < s.numHeads(); h++) {
                int g = h / s.groupSize();
                double[] w = new double[p + 1];
                double max = Double.NEGATIVE_INFINITY;
                for (int t = 0; t <= p; t++) {
                    double dot = 0;
                    for (int i = 0; i < d; i++) {
                        dot += (double) in.q[p * s.qDim() + h * d + i] * k[t * s.kvDim() + g * d + i];
                    }
                    w[t] = dot * scale;
                    max = Math.max(max, w[t]);
                }
                double sum = 0;
                for (int t = 0; t <= p; t++) {
                    w[t] = Math.exp(w[t] - max);
                    sum += w[t];
                }
                for (int t = 0; t <= p; t++) {
                    for (int i = 0; i < d; i++) {
                        out[(p - from) * s.qDim() + h * d + i] += w[t] / sum * v[t * s.kvDim() + g * d + i];
                    }
                }
            }
        }
        return out;
    }

    static Stream<Arguments> cases() {
        return Stream.of(
                Arguments.of("turbo:k8v3", new AttentionShape(1, 4, 2, 128), 7),
                Arguments.of("turbo:k8v3", new AttentionShape(1, 3, 1, 128), 33),
                Arguments.of("turbo:k8v3", new AttentionShape(1, 2, 2, 64), 1),
                Arguments.of("turbo:k4v2", new AttentionShape(1, 4, 2, 128), 31),
                Arguments.of("turbo:k8v4", new AttentionShape(1, 8, 2, 256), 127),
                Arguments.of("turbo:k8v2", new AttentionShape(1, 4, 4, 128), 20),
                Arguments.of("turbo:k8v8", new AttentionShape(1, 4, 2, 128), 17),
                Arguments.of("turbo:k5v5", new AttentionShape(1, 4, 2, 64), 9),
                Arguments.of("turbo:k2v3", new AttentionShape(1, 2, 1, 512), 12),
                Arguments.of("turbo:k4v3", new AttentionShape(1, 4, 2, 128), 270));
    }

    @ParameterizedTest
    @MethodSource("cases")
    void threePathsAgreeWithEachOtherAndWithDoubleAttentionOverTheDecodedCache(String scheme, AttentionShape shape,
            int prefill) {
        KvScheme.Turbo t = (KvScheme.Turbo) KvScheme.parse(scheme);
        int total = prefill + 8;
        Inputs in = Inputs.random(shape, total, prefill * 31L + shape.headDim());
        float[][] outs = new float[AttentionPath.values().length][];
        double[] ref = null;
        for (AttentionPath path : AttentionPath.values()) {
            try (TurboQuantKvCache c = new TurboQuantKvCache(t, shape, backend, total, 0, path)) {
                outs[path.ordinal()] = run(c, in, prefill, total);
                if (ref == null) {
                    ref = reference(c, in, prefill, total);
                }
            }
        }
        double outScale = 0;
        for (double x : ref) {
            outScale = Math.max(outScale, Math.abs(x));
        }
        int from = prefill * shape.qDim();
        for (AttentionPath path : AttentionPath.values()) {
            double worstRef = 0;
            double worstFused = 0;
            for (int i = 0; i < ref.length; i++) {
                worstRef = Math.max(worstRef, Math.abs(outs[path.ordinal()][from + i] - ref[i]));
                worstFused = Math.max(worstFused,
                        Math.abs(outs[path.ordinal()][from + i] - outs[AttentionPath.FUSED.ordinal()][from + i]));
            }
            assertTrue(worstFused <= 1e-4 * outScale, path + " vs fused: " + worstFused + " (scale " + outScale + ")");
            assertTrue(worstRef <= 1e-4 * outScale, path + " vs double: " + worstRef + " (scale " + outScale + ")");
        }
    }

    @ParameterizedTest
    @MethodSource("cases")
    void vectorKernelsAreBitIdenticalToTheirScalarTwins(String scheme, AttentionShape shape, int prefill) {
        KvScheme.Turbo t = (KvScheme.Turbo) KvScheme.parse(scheme);
        int total = prefill + 8;
        Inputs in = Inputs.random(shape, total, prefill * 7L + 3);
        for (AttentionPath path : AttentionPath.values()) {
            float[] vec;
            float[] sca;
            try (TurboQuantKvCache c = new TurboQuantKvCache(t, shape, backend, total, 0, path, TurboParity.VEC)) {
                vec = run(c, in, prefill, total);
            }
            try (TurboQuantKvCache c = new TurboQuantKvCache(t, shape, backend, total, 0, path, TurboParity.SCA)) {
                sca = run(c, in, prefill, total);
            }
            assertArrayEquals(sca, vec, path.toString());
        }
    }

    /**
     * The fused path attends the rows of a multi-row chunk (a verification pass, a prompt's continuation) together;
     * every row's output is bit-identical to attending the rows one at a time, on both twins, across block
     * boundaries, past the rows one task serves, and with a bf16 prefix shorter and longer than the cache.
     */
    @ParameterizedTest
    @MethodSource("cases")
    void multiRowChunksAreBitIdenticalToOneRowAtATime(String scheme, AttentionShape shape, int prefill) {
        KvScheme.Turbo t = (KvScheme.Turbo) KvScheme.parse(scheme);
        int total = prefill + 60;
        Inputs in = Inputs.random(shape, total, prefill * 13L + 1);
        for (int prefix : new int[] {0, 5, prefill + 20}) {
            for (TurboKernels twin : List.of(TurboParity.VEC, TurboParity.SCA)) {
                float[] one;
                float[] many;
                try (TurboQuantKvCache c = new TurboQuantKvCache(t, shape, backend, total, prefix, AttentionPath.FUSED,
                        twin)) {
                    one = runChunks(c, in, prefill, total, 1);
                }
                try (TurboQuantKvCache c = new TurboQuantKvCache(t, shape, backend, total, prefix, AttentionPath.FUSED,
                        twin)) {
                    many = runChunks(c, in, prefill, total, 9, 1, 2, 5, 35);
                }
                assertArrayEquals(one, many, "prefix " + prefix + ", " + twin.getClass().getSimpleName());
            }
        }
    }

    /** A long window (16 chunks + 1 token) filled by import, then decode steps: vector and scalar twins agree. */
    @Test
    void vectorAndScalarTwinsAgreeOverA4097TokenWindow() {
        AttentionShape shape = new AttentionShape(1, 2, 1, 128);
        KvScheme.Turbo t = new KvScheme.Turbo(8, 3);
        int n = 4097;
        TurboCodec codec = TurboCodec.of(t, 128);
        Inputs in = Inputs.random(shape, n + 4, 77);
        float[][] outs = new float[2][];
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment entries = arena.allocate((long) n * codec.entryBytes());
            for (int i = 0; i < n; i++) {
                codec.encode(in.k, i * 128, in.v, i * 128, entries, (long) i * codec.entryBytes());
            }
            for (AttentionPath path : List.of(AttentionPath.FUSED, AttentionPath.DEQUANT)) {
                for (int twin = 0; twin < 2; twin++) {
                    try (TurboQuantKvCache c = new TurboQuantKvCache(t, shape, backend, n + 4, 0, path,
                            twin == 0 ? TurboParity.VEC : TurboParity.SCA)) {
                        c.importLayer(0, n, entries);
                        c.advance(n);
                        float[] out = new float[4 * shape.qDim()];
                        for (int step = 0; step < 4; step++) {
                            float[] att = new float[shape.qDim()];
                            c.attend(0, 0, 1, slice(in.q, n + step, 1, shape.qDim()), slice(in.k, n + step, 1, 128),
                                    slice(in.v, n + step, 1, 128), att);
                            c.advance(1);
                            System.arraycopy(att, 0, out, step * shape.qDim(), att.length);
                        }
                        outs[twin] = out;
                    }
                }
                assertArrayEquals(outs[1], outs[0], path.toString());
            }
        }
    }

    @Test
    void extremeButFiniteInputsStayFiniteOnEveryPathAndTwinsAgree() {
        AttentionShape shape = new AttentionShape(1, 2, 1, 128);
        KvScheme.Turbo t = new KvScheme.Turbo(8, 3);
        int total = 40;
        Inputs in = Inputs.random(shape, total, 5);
        for (int i = 0; i < in.k.length; i++) {
            in.k[i] = i % 5 == 0 ? 60000f : (i % 7 == 0 ? 1e-6f : in.k[i]);
            in.v[i] = i % 3 == 0 ? -60000f : in.v[i] * 1e-5f;
        }
        for (AttentionPath path : AttentionPath.values()) {
            float[] vec;
            try (TurboQuantKvCache c = new TurboQuantKvCache(t, shape, backend, total, 0, path, TurboParity.VEC)) {
                vec = run(c, in, 5, total);
            }
            for (float x : vec) {
                assertTrue(Float.isFinite(x), path + " produced " + x);
            }
            try (TurboQuantKvCache c = new TurboQuantKvCache(t, shape, backend, total, 0, path, TurboParity.SCA)) {
                assertArrayEquals(run(c, in, 5, total), vec, path.toString());
            }
        }
    }
}
