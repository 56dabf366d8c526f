package io.tqserve.kv.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.kv.KvCache;
import io.tqserve.kv.KvCacheFactory;
import io.tqserve.kv.KvScheme;
import io.tqserve.kv.TinyTransformerFixture;
import io.tqserve.model.ForwardState;
import io.tqserve.model.Transformer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PromptCacheTest extends TinyTransformerFixture {
    static final String FP = "d".repeat(64);
    static final String TOK = "e".repeat(64);
    static final int[] SYSTEM = {6414, 784, 4178, 294, 3326, 80, 284, 81, 90, 325, 270, 1253, 466, 270, 3816, 16};

    @TempDir
    Path dir;

    KvCache cache() {
        return KvCacheFactory.create(KvScheme.BF16, t.attentionShape(), backend, 256);
    }

    float[] prefill(KvCache c, int[] tokens, int from) {
        return Arrays.copyOf(t.forward(new ForwardState(t.config()),
                List.of(new Transformer.Chunk(c, tokens, from, tokens.length - from, false))), t.config().vocabSize());
    }

    static int[] concat(int[] a, int... b) {
        int[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    PromptCache newCache(long bytes, Path disk) {
        return new PromptCache(KvScheme.BF16, t.attentionShape(), bytes, 4, FP, TOK, disk, 1 << 30);
    }

    @Test
    void aSharedPrefixIsRestoredAndOnlyTheRestPrefilled() {
        try (PromptCache pc = newCache(1 << 30, null); KvCache first = cache(); KvCache second = cache();
                KvCache reference = cache()) {
            float[] logits = prefill(first, SYSTEM, 0);
            pc.insert(SYSTEM, first, logits);
            int[] request = concat(SYSTEM, 11, 12, 13);
            PromptCache.Reuse reuse = pc.restoreLongestPrefix(request, second);
            assertEquals(SYSTEM.length, reuse.tokens());
            prefill(reference, SYSTEM, 0);
            try (java.lang.foreign.Arena ar = java.lang.foreign.Arena.ofConfined()) {
                for (int l = 0; l < 6; l++) {
                    var x = ar.allocate(16L * 2 * 512);
                    var y = ar.allocate(16L * 2 * 512);
                    reference.exportLayer(l, 0, 16, x);
                    second.exportLayer(l, 0, 16, y);
                    assertEquals(-1L, x.mismatch(y), "layer " + l);
                }
            }
            float[] continued = prefill(second, request, reuse.tokens());
            // a continued prefill attends over the stored (bf16) prefix, as the semantics say; the reference does too
            float[] expected = prefill(reference, request, SYSTEM.length);
            assertArrayEquals(expected, continued);
            assertEquals(1, pc.hits());
            assertEquals(1, pc.queries());
        }
    }

    @Test
    void anExactPromptComesBackWithItsLogits() {
        try (PromptCache pc = newCache(1 << 30, null); KvCache first = cache(); KvCache second = cache()) {
            float[] logits = prefill(first, SYSTEM, 0);
            pc.insert(SYSTEM, first, logits);
            PromptCache.Reuse reuse = pc.restoreLongestPrefix(SYSTEM, second);
            assertTrue(reuse.complete(SYSTEM.length));
            assertArrayEquals(logits, reuse.logits());
        }
    }

    @Test
    void aPartialMatchKeepsOneTokenToPrefill() {
        try (PromptCache pc = newCache(1 << 30, null); KvCache first = cache(); KvCache second = cache()) {
            pc.insert(SYSTEM, first, prefill(first, SYSTEM, 0));
            int[] shorter = Arrays.copyOf(SYSTEM, 10);
            assertEquals(9, pc.restoreLongestPrefix(shorter, second).tokens());
        }
    }

    @Test
    void evictedEntriesSpillToDiskAndAreFoundAfterARestart() {
        long oneEntry = t.attentionShape().layout(KvScheme.BF16).bytesFor(SYSTEM.length) + 4L * SYSTEM.length
                + 4L * t.config().vocabSize();
        int[] other = {5, 6, 7, 8, 9, 10, 11, 12};
        try (PromptCache pc = newCache(oneEntry, dir); KvCache a = cache(); KvCache b = cache()) {
            pc.insert(SYSTEM, a, prefill(a, SYSTEM, 0));
            pc.insert(other, b, prefill(b, other, 0)); // evicts SYSTEM to disk
            assertTrue(pc.diskBytes() > 0);
        }
        try (PromptCache restarted = newCache(1 << 30, dir); KvCache c = cache()) {
            assertEquals(SYSTEM.length, restarted.restoreLongestPrefix(concat(SYSTEM, 1), c).tokens());
        }
    }

    @Test
    void namespacesNeverShareEntriesInMemoryOrOnDiskAfterARestart() {
        String a = "0123456789abcdef0123456789abcdef";
        String b = "fedcba9876543210fedcba9876543210";
        long oneEntry = t.attentionShape().layout(KvScheme.BF16).bytesFor(SYSTEM.length) + 4L * SYSTEM.length
                + 4L * t.config().vocabSize();
        try (PromptCache pc = newCache(oneEntry, dir); KvCache first = cache(); KvCache probe = cache()) {
            pc.insert(a, SYSTEM, first, prefill(first, SYSTEM, 0));
            assertEquals(0, pc.restoreLongestPrefix(b, SYSTEM, probe).tokens());
            assertEquals(0, pc.restoreLongestPrefix(PromptCache.SHARED, SYSTEM, probe).tokens());
            assertEquals(SYSTEM.length, pc.restoreLongestPrefix(a, SYSTEM, probe).tokens());
        }
        // closed: the entry spilled into a's folder; a restart finds it for a only
        assertTrue(java.nio.file.Files.isDirectory(dir.resolve(FP).resolve("bf16").resolve(a)));
        try (PromptCache restarted = newCache(1 << 30, dir); KvCache c = cache(); KvCache d = cache()) {
            assertEquals(0, restarted.restoreLongestPrefix(b, concat(SYSTEM, 1), c).tokens());
            assertEquals(SYSTEM.length, restarted.restoreLongestPrefix(a, concat(SYSTEM, 1), d).tokens());
        }
        try (PromptCache pc = newCache(1 << 30, null); KvCache c = cache()) {
            assertThrows(IllegalArgumentException.class, () -> pc.restoreLongestPrefix("../x", SYSTEM, c));
        }
    }
}
