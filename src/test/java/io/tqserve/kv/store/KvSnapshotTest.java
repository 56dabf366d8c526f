package io.tqserve.kv.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.kv.KvCache;
import io.tqserve.kv.KvCacheFactory;
import io.tqserve.kv.KvScheme;
import io.tqserve.kv.TinyTransformerFixture;
import io.tqserve.model.ForwardState;
import io.tqserve.model.Transformer;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

class KvSnapshotTest extends TinyTransformerFixture {
    static final String FP = "a".repeat(64);
    static final String TOK = "b".repeat(64);
    static final int[] PROMPT = {6414, 784, 4178, 294, 3326, 80, 284, 81, 90};

    @TempDir
    Path dir;

    static Stream<String> schemes() {
        return Stream.of("bf16", "turbo:k8v3", "int4");
    }

    KvCache cache(KvScheme s) {
        return KvCacheFactory.create(s, t.attentionShape(), backend, 256);
    }

    static int argmax(float[] x) {
        int b = 0;
        for (int i = 1; i < x.length; i++) {
            if (x[i] > x[b]) {
                b = i;
            }
        }
        return b;
    }

    /** Greedy tokens continuing from a cache whose next-token logits are given. */
    int[] continueGreedy(KvCache cache, float[] logits, int n) {
        ForwardState s = new ForwardState(t.config());
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            out[i] = argmax(logits);
            logits = Arrays.copyOf(t.forward(s, List.of(Transformer.Chunk.of(cache, new int[] {out[i]}))),
                    t.config().vocabSize());
        }
        return out;
    }

    Path snapshotAfterPrompt(KvScheme scheme, int[][] expectedOut) throws Exception {
        Path file = dir.resolve("s.tqkv");
        try (KvCache c = cache(scheme); Arena arena = Arena.ofConfined()) {
            float[] logits = Arrays.copyOf(t.forward(new ForwardState(t.config()), List.of(Transformer.Chunk.of(c, PROMPT))),
                    t.config().vocabSize());
            KvSnapshot.capture(c, PROMPT, logits, FP, TOK, arena).write(file);
            expectedOut[0] = continueGreedy(c, logits, 16);
        }
        return file;
    }

    @ParameterizedTest
    @MethodSource("schemes")
    void restoredSnapshotContinuesWithIdenticalTokens(String schemeId) throws Exception {
        KvScheme scheme = KvScheme.parse(schemeId);
        int[][] expected = new int[1][];
        Path file = snapshotAfterPrompt(scheme, expected);
        try (KvCache fresh = cache(scheme); Arena arena = Arena.ofConfined()) {
            KvSnapshot snap = KvSnapshot.read(file, scheme, FP, TOK, arena);
            assertArrayEquals(PROMPT, snap.tokens());
            snap.restoreInto(fresh);
            assertEquals(PROMPT.length, fresh.length());
            assertArrayEquals(expected[0], continueGreedy(fresh, snap.logits(), 16));
        }
    }

    @Test
    void bytesOnDiskAreKvLayoutPerTokenPlusFixedOverhead() throws Exception {
        Path file = snapshotAfterPrompt(KvScheme.BF16, new int[1][]);
        long kv = t.attentionShape().layout(KvScheme.BF16).bytesFor(PROMPT.length);
        long fixed = KvSnapshot.HEADER_BYTES + 4 + 4L * t.config().vocabSize() + 4 + 4L * t.config().numLayers();
        assertEquals(kv + 4L * PROMPT.length + fixed, Files.size(file));
    }

    SnapshotException.Reason refusal(Path file, KvScheme scheme, String fp) {
        try (Arena arena = Arena.ofConfined()) {
            return assertThrows(SnapshotException.class, () -> KvSnapshot.read(file, scheme, fp, TOK, arena)).reason();
        }
    }

    @Test
    void truncatedFileIsRefused() throws Exception {
        Path file = snapshotAfterPrompt(KvScheme.BF16, new int[1][]);
        byte[] b = Files.readAllBytes(file);
        Files.write(file, Arrays.copyOf(b, b.length - 100));
        assertEquals(SnapshotException.Reason.TRUNCATED, refusal(file, KvScheme.BF16, FP));
        Files.write(file, Arrays.copyOf(b, 50));
        assertEquals(SnapshotException.Reason.TRUNCATED, refusal(file, KvScheme.BF16, FP));
    }

    @Test
    void oneFlippedByteAnywhereIsRefused() throws Exception {
        Path file = snapshotAfterPrompt(KvScheme.BF16, new int[1][]);
        byte[] good = Files.readAllBytes(file);
        for (int pos : new int[] {20, KvSnapshot.HEADER_BYTES + 3, good.length / 2, good.length - 10}) {
            byte[] bad = good.clone();
            bad[pos] ^= 0x10;
            Files.write(file, bad);
            SnapshotException.Reason r = refusal(file, KvScheme.BF16, FP);
            assertTrue(r == SnapshotException.Reason.CHECKSUM, "byte " + pos + ": " + r);
        }
    }

    @Test
    void wrongSchemeAndWrongModelAreRefusedWithTheirOwnReason() throws Exception {
        Path file = snapshotAfterPrompt(KvScheme.BF16, new int[1][]);
        assertEquals(SnapshotException.Reason.WRONG_SCHEME, refusal(file, KvScheme.TURBO_DEFAULT, FP));
        assertEquals(SnapshotException.Reason.WRONG_MODEL, refusal(file, KvScheme.BF16, "c".repeat(64)));
        Files.writeString(file, "not a snapshot ".repeat(20));
        assertEquals(SnapshotException.Reason.NOT_A_SNAPSHOT, refusal(file, KvScheme.BF16, FP));
    }

    @Test
    void aWriteInterruptedBeforeTheRenameLeavesNoFileALaterStartLoads() throws Exception {
        Path good = snapshotAfterPrompt(KvScheme.BF16, new int[1][]);
        Path spill = dir.resolve("store").resolve(FP).resolve("bf16");
        Files.createDirectories(spill);
        byte[] bytes = Files.readAllBytes(good);
        // what a crash in the middle of KvSnapshot.write leaves behind: a partial temp file, never the target name
        Path partial = spill.resolve(PromptCache.key(PromptCache.SHARED, PROMPT) + ".tqkv.tmp-4242-1");
        Files.write(partial, Arrays.copyOf(bytes, bytes.length / 2));
        PromptCache restarted = new PromptCache(KvScheme.BF16, t.attentionShape(), 1 << 30, 1, FP, TOK,
                dir.resolve("store"), 1 << 30);
        assertEquals(0, restarted.diskBytes(), "nothing loadable was indexed");
        assertFalse(Files.exists(partial), "the partial write was cleaned up");
        try (KvCache c = cache(KvScheme.BF16)) {
            assertEquals(0, restarted.restoreLongestPrefix(PROMPT, c).tokens());
        }
        restarted.close();
    }
}
