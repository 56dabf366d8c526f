package io.tqserve.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.tqserve.model.ForwardState;
import io.tqserve.model.Transformer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class Bf16KvCacheTest extends TinyTransformerFixture {

    static final int[] PROMPT = {6414, 784, 4178, 294, 3326, 80, 284, 81, 90, 325};

    KvCache cache() {
        return new Bf16KvCache(t.attentionShape(), backend, 512);
    }

    float[] step(KvCache cache, int... tokens) {
        return Arrays.copyOf(t.forward(new ForwardState(t.config()), List.of(Transformer.Chunk.of(cache, tokens))),
                t.config().vocabSize());
    }

    @Test
    void bytesUsedEqualKvLayoutAtEveryLength() {
        KvLayout layout = t.attentionShape().layout(KvScheme.BF16);
        assertEquals(6144, layout.bytesPerToken(), "6 layers x 2 KV heads x 512 bytes");
        try (KvCache c = cache()) {
            assertEquals(0, c.bytesUsed());
            step(c, PROMPT);
            assertEquals(layout.bytesFor(10), c.bytesUsed());
            for (int i = 0; i < 300; i++) {
                step(c, 42);
            }
            assertEquals(layout.bytesFor(310), c.bytesUsed());
            assertEquals(2L * 256 * 6144, c.bytesAllocated(), "two chunks of 256 tokens");
        }
    }

    @Test
    void truncateThenContinueEqualsNeverAppended() {
        try (KvCache a = cache(); KvCache b = cache()) {
            step(a, PROMPT);
            step(a, 11);
            step(a, 12);
            step(a, 13);
            a.truncate(11);
            float[] afterTruncate = step(a, 99);
            step(b, PROMPT);
            step(b, 11);
            float[] fresh = step(b, 99);
            assertArrayEquals(fresh, afterTruncate);
        }
    }

    @Test
    void exportImportRoundTripContinuesIdentically() {
        try (KvCache a = cache(); KvCache b = cache(); Arena arena = Arena.ofConfined()) {
            step(a, PROMPT);
            step(a, 7);
            int n = a.length();
            long perLayer = (long) n * a.shape().numKvHeads() * a.layout().bytesPerTokenPerHead();
            for (int layer = 0; layer < a.shape().layers(); layer++) {
                MemorySegment buf = arena.allocate(perLayer);
                a.exportLayer(layer, 0, n, buf);
                b.importLayer(layer, n, buf);
            }
            b.advance(n);
            assertEquals(a.bytesUsed(), b.bytesUsed());
            assertArrayEquals(step(a, 8), step(b, 8));
        }
    }

    @Test
    void closedCacheRefusesWork() {
        KvCache c = cache();
        c.close();
        c.close();
        assertThrows(IllegalStateException.class, () -> step(c, 1));
    }

    @Test
    void bf16RoundingIsNearestEven() {
        assertEquals((short) 0x3F80, Bf16KvCache.toBf16(1.0f));
        assertEquals((short) 0x3F80, Bf16KvCache.toBf16(Float.intBitsToFloat(0x3F808000))); // tie -> even
        assertEquals((short) 0x3F82, Bf16KvCache.toBf16(Float.intBitsToFloat(0x3F818000))); // tie -> even (up)
        assertEquals((short) 0x3F81, Bf16KvCache.toBf16(Float.intBitsToFloat(0x3F808001)));
    }
}
