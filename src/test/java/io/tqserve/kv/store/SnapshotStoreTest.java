package io.tqserve.kv.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.tqserve.kv.KvCache;
import io.tqserve.kv.KvCacheFactory;
import io.tqserve.kv.KvScheme;
import io.tqserve.kv.TinyTransformerFixture;
import io.tqserve.model.ForwardState;
import io.tqserve.model.Transformer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Owners, quotas (count and bytes, per owner and in total) and unexpected entries of the snapshot store. */
class SnapshotStoreTest extends TinyTransformerFixture {
    static final String FP = "f".repeat(64);
    static final String TOK = "c".repeat(64);
    static final String A = "0123456789abcdef0123456789abcdef";
    static final String B = "fedcba9876543210fedcba9876543210";

    @TempDir
    Path dir;

    KvSnapshot snapshot(int tokens) {
        try (KvCache c = KvCacheFactory.create(KvScheme.BF16, t.attentionShape(), backend, 256)) {
            int[] ids = new int[tokens];
            for (int i = 0; i < tokens; i++) {
                ids[i] = 5 + i;
            }
            float[] logits = t.forward(new ForwardState(t.config()),
                    List.of(new Transformer.Chunk(c, ids, 0, tokens, false)));
            return KvSnapshot.captureOnHeap(c, ids, Arrays.copyOf(logits, t.config().vocabSize()), FP, TOK);
        }
    }

    long sizeOf(KvSnapshot s) throws Exception {
        SnapshotStore probe = new SnapshotStore(dir.resolve("probe"), FP, TOK);
        return probe.save(A, s).bytes();
    }

    @Test
    void byteAndCountQuotasHoldPerOwnerAndInTotal() throws Exception {
        KvSnapshot s = snapshot(8);
        long one = sizeOf(s);
        SnapshotStore st = new SnapshotStore(dir.resolve("q"), FP, TOK, new SnapshotStore.Quota(0, 3 * one, 0,
                2 * one));
        st.save(A, s);
        st.save(A, s);
        assertThatThrownBy(() -> st.save(A, s)).isInstanceOf(SnapshotStore.QuotaExceededException.class)
                .hasMessageContaining("API key");
        assertThatThrownBy(() -> st.checkRoom(A)).isInstanceOf(SnapshotStore.QuotaExceededException.class);
        st.save(B, s);
        assertThatThrownBy(() -> st.save(B, s)).isInstanceOf(SnapshotStore.QuotaExceededException.class)
                .hasMessageContaining("server");
        assertThat(st.list(A)).hasSize(2);
        assertThat(st.list(B)).hasSize(1);
        // a refused save leaves nothing behind
        try (var files = Files.walk(dir.resolve("q"))) {
            assertThat(files.filter(Files::isRegularFile).count()).isEqualTo(3);
        }

        SnapshotStore counted = new SnapshotStore(dir.resolve("c"), FP, TOK, new SnapshotStore.Quota(2, 0, 1, 0));
        counted.save(A, s);
        assertThatThrownBy(() -> counted.save(A, s)).isInstanceOf(SnapshotStore.QuotaExceededException.class);
        String b = counted.save(B, s).id();
        assertThatThrownBy(() -> counted.save(PromptCache.SHARED, s))
                .isInstanceOf(SnapshotStore.QuotaExceededException.class);
        assertThat(counted.delete(B, b)).isTrue();
        counted.save(PromptCache.SHARED, s);
    }

    @Test
    void ownersSeeOnlyTheirOwnAndUnexpectedEntriesAreNotFound() throws Exception {
        SnapshotStore st = new SnapshotStore(dir, FP, TOK);
        String id = st.save(A, snapshot(4)).id();
        assertThat(st.load(B, id)).isEmpty();
        assertThat(st.delete(B, id)).isFalse();
        assertThat(st.list(B)).isEmpty();
        assertThat(st.load(A, id)).isPresent();

        String fake = "00000000000000000000000000000001";
        Files.createDirectories(dir.resolve(FP).resolve(fake + ".tqkv"));
        assertThat(st.load(PromptCache.SHARED, fake)).isEmpty();
        assertThat(st.delete(PromptCache.SHARED, fake)).isFalse();
        assertThat(st.list(PromptCache.SHARED)).isEmpty();
        Files.createSymbolicLink(dir.resolve(FP).resolve(B), dir.resolve(FP).resolve(A));
        assertThat(st.load(B, id)).as("an owner folder that is a link").isEmpty();
        assertThatThrownBy(() -> st.load("../" + A, id)).isInstanceOf(IllegalArgumentException.class);
    }
}
