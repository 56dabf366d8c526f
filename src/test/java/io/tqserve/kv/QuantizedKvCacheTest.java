package io.tqserve.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.kv.turbo.AttentionPath;
import io.tqserve.kv.turbo.TurboQuantKvCache;
import io.tqserve.model.ForwardState;
import io.tqserve.model.Transformer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** The turbo and uniform caches inside the tiny model's forward pass: bytes, truncation, export/import, prefix. */
class QuantizedKvCacheTest extends TinyTransformerFixture {
    static final int[] PROMPT = {6414, 784, 4178, 294, 3326, 80, 284, 81, 90, 325};

    static Stream<String> schemes() {
        return Stream.of("turbo:k8v3", "turbo:k4v2", "int8", "int4");
    }

    static KvCache cache(String scheme, int maxTokens) {
        return KvCacheFactory.create(KvScheme.parse(scheme), t.attentionShape(), backend, maxTokens);
    }

    static float[] step(KvCache cache, int... tokens) {
        return Arrays.copyOf(t.forward(new ForwardState(t.config()), List.of(Transformer.Chunk.of(cache, tokens))),
                t.config().vocabSize());
    }

    @ParameterizedTest
    @MethodSource("schemes")
    void bytesUsedEqualKvLayoutAtSeveralLengthsAndAllocationIsWholeChunks(String scheme) {
        KvLayout layout = t.attentionShape().layout(KvScheme.parse(scheme));
        try (KvCache c = cache(scheme, 700)) {
            assertEquals(0, c.bytesUsed());
            assertEquals(0, c.bytesAllocated());
            step(c, PROMPT);
            assertEquals(layout.bytesFor(10), c.bytesUsed());
            assertEquals(256 * layout.bytesPerToken(), c.bytesAllocated());
            // single steps and a continuation chunk (both attend over the stored cache) across block edges
            for (int rows : new int[] {1, 5, 1}) {
                step(c, tokens(c.length(), rows));
                assertEquals(layout.bytesFor(c.length()), c.bytesUsed(), "at " + c.length());
            }
            assertEquals(17, c.length());
        }
        try (KvCache c = cache(scheme, 700)) {
            step(c, tokens(0, 250)); // a fresh prefill attends in float: cheap at any length
            for (int rows : new int[] {6, 1, 3}) { // crosses the 256-token chunk edge
                step(c, tokens(c.length(), rows));
                assertEquals(layout.bytesFor(c.length()), c.bytesUsed(), "at " + c.length());
            }
            assertEquals(260, c.length());
            assertEquals(2L * 256 * layout.bytesPerToken(), c.bytesAllocated(), "two chunks of 256 tokens");
        }
    }

    static int[] tokens(int from, int n) {
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            out[i] = 42 + (from + i) * 37 % 2000;
        }
        return out;
    }

    @Test
    void turboK8v3HoldsExactly200BytesPerTokenPerHead() {
        try (KvCache c = cache("turbo:k8v3", 64)) {
            step(c, PROMPT);
            assertEquals(200L * 6 * 2 * PROMPT.length, c.bytesUsed(), "6 layers x 2 KV heads x 200 bytes");
        }
    }

    @ParameterizedTest
    @MethodSource("schemes")
    void truncateThenContinueEqualsNeverAppended(String scheme) {
        try (KvCache a = cache(scheme, 64); KvCache b = cache(scheme, 64)) {
            step(a, PROMPT);
            step(a, 11);
            step(a, 12);
            step(a, 13, 14, 15);
            a.truncate(11);
            assertEquals(11, a.length());
            float[] afterTruncate = step(a, 99);
            float[] afterTruncate2 = step(a, 98, 97);
            step(b, PROMPT);
            step(b, 11);
            assertArrayEquals(step(b, 99), afterTruncate);
            assertArrayEquals(step(b, 98, 97), afterTruncate2);
        }
    }

    @ParameterizedTest
    @MethodSource("schemes")
    void exportImportRoundTripIsByteExactAndContinuesIdentically(String scheme) {
        try (KvCache a = cache(scheme, 64); KvCache b = cache(scheme, 64); Arena arena = Arena.ofConfined()) {
            step(a, PROMPT);
            step(a, 7);
            step(a, 8, 9);
            int n = a.length();
            long perLayer = (long) n * a.shape().numKvHeads() * a.layout().bytesPerTokenPerHead();
            for (int layer = 0; layer < a.shape().layers(); layer++) {
                MemorySegment buf = arena.allocate(perLayer);
                a.exportLayer(layer, 0, n, buf);
                b.importLayer(layer, n, buf);
            }
            b.advance(n);
            for (int layer = 0; layer < a.shape().layers(); layer++) {
                MemorySegment buf = arena.allocate(perLayer);
                MemorySegment again = arena.allocate(perLayer);
                a.exportLayer(layer, 0, n, buf);
                b.exportLayer(layer, 0, n, again);
                assertEquals(-1, buf.mismatch(again), "layer " + layer);
            }
            assertEquals(a.bytesUsed(), b.bytesUsed());
            assertArrayEquals(step(a, 10), step(b, 10));
        }
    }

    /** Same bf16 keys and values: only the softmax's exp (TurboSoftmax vs the backend's) differs, by an ulp. */
    @Test
    void turboCacheWhoseBf16PrefixCoversEveryTokenReproducesTheBf16Cache() {
        KvScheme.Turbo k8v3 = new KvScheme.Turbo(8, 3);
        for (AttentionPath path : AttentionPath.values()) {
            try (KvCache bf16 = new Bf16KvCache(t.attentionShape(), backend, 64);
                    KvCache turbo = new TurboQuantKvCache(k8v3, t.attentionShape(), backend, 64, 64, path)) {
                assertArrayEquals(step(bf16, PROMPT), step(turbo, PROMPT));
                for (int tok : new int[] {5, 6, 7}) {
                    float[] ref = step(bf16, tok);
                    assertTrue(maxDiff(ref, step(turbo, tok)) < 1e-4f, path.toString());
                }
                assertEquals(bf16.bytesUsed(), turbo.bytesUsed());
            }
        }
    }

    @ParameterizedTest
    @MethodSource("schemes")
    void partialBf16PrefixCountsItsBytesAndStaysCloseToBf16(String scheme) {
        int keep = 4;
        KvScheme s = KvScheme.parse(scheme);
        try (KvCache bf16 = new Bf16KvCache(t.attentionShape(), backend, 64);
                KvCache mixed = KvCacheFactory.create(s, t.attentionShape(), backend, 64, keep);
                KvCache plain = cache(scheme, 64)) {
            step(bf16, PROMPT);
            step(mixed, PROMPT);
            step(plain, PROMPT);
            float[] ref = step(bf16, 3);
            float[] m = step(mixed, 3);
            float[] p = step(plain, 3);
            long expect = t.attentionShape().layout(KvScheme.BF16).bytesFor(keep)
                    + t.attentionShape().layout(s).bytesFor(PROMPT.length + 1 - keep);
            assertEquals(expect, mixed.bytesUsed());
            assertTrue(maxDiff(ref, m) <= maxDiff(ref, p) * 1.5 + 1e-3,
                    "keeping 4 tokens in bf16 must not move logits further from bf16: " + maxDiff(ref, m) + " vs "
                            + maxDiff(ref, p));
        }
    }

    static float maxDiff(float[] a, float[] b) {
        float m = 0;
        for (int i = 0; i < a.length; i++) {
            m = Math.max(m, Math.abs(a[i] - b[i]));
        }
        return m;
    }

    @Test
    void freshPrefillLogitsAreTheSameForEveryScheme() {
        float[] ref;
        try (KvCache c = cache("bf16", 64)) {
            ref = step(c, PROMPT);
        }
        for (String s : List.of("turbo:k8v3", "turbo:k4v2", "int8", "int4")) {
            try (KvCache c = cache(s, 64)) {
                assertArrayEquals(ref, step(c, PROMPT), s + ": a fresh prefill attends in full precision");
            }
        }
    }

    @ParameterizedTest
    @MethodSource("schemes")
    void closedCacheRefusesWorkAndCloseIsIdempotent(String scheme) {
        KvCache c = cache(scheme, 64);
        step(c, PROMPT);
        c.close();
        c.close();
        assertThrows(IllegalStateException.class, () -> step(c, 1));
    }
}
