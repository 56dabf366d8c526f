package io.tqserve.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.kv.Bf16KvCache;
import io.tqserve.kv.KvCache;
import io.tqserve.kv.KvScheme;
import io.tqserve.kv.turbo.AttentionPath;
import io.tqserve.model.ForwardState;
import io.tqserve.model.Model;
import io.tqserve.model.Transformer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** The kv-curve protocol on the tiny model with short prompts. */
class KvCurveTest {
    static CpuBackend backend;
    static Model model;
    static List<int[]> prompts;
    static final int P = 12;
    static final int D = 6;

    @BeforeAll
    static void load() throws Exception {
        backend = CpuBackend.create(2);
        model = Model.load(Path.of("models/tiny-llama-h128"), backend);
        List<String> texts = EvalCommand.readPrompts(null);
        prompts = List.of(model.tokenizer().encode(texts.get(0), false), model.tokenizer().encode(texts.get(3), false));
    }

    @AfterAll
    static void close() {
        model.close();
        backend.close();
    }

    static List<KvCurve.Row> curve(AttentionPath path, List<KvScheme> schemes) {
        return new KvCurve(model.transformer(), P, D, path, System.err).run(schemes, prompts);
    }

    @Test
    void controlHasZeroKlAndFullAgreementAndRowsKeepTheRequestedOrder() {
        List<KvCurve.Row> rows = curve(AttentionPath.FUSED, List.of(KvScheme.parse("int4"), KvScheme.BF16,
                KvScheme.parse("turbo:k8v3")));
        assertEquals(List.of("int4", "bf16", "turbo:k8v3"), rows.stream().map(KvCurve.Row::scheme).toList());
        KvCurve.Row bf16 = rows.get(1);
        assertEquals(0.0, bf16.meanKl());
        assertEquals(1.0, bf16.top1Agreement());
        assertEquals(16.0, bf16.effectiveBits());
        assertEquals(6.25, rows.get(2).effectiveBits());
        assertEquals(4.5, rows.get(0).effectiveBits());
        for (KvCurve.Row r : List.of(rows.get(0), rows.get(2))) {
            assertTrue(r.meanKl() > 0 && r.meanKl() < 5, r.toString());
        }
    }

    /**
     * The bf16 arm's perplexity against one full-precision pass over prompt + continuation with logits for every
     * row: the two differ only by the bf16 rounding of cached K/V, so a misaligned token (scoring x_i with the
     * distribution after x_i, or skipping x_0) would show as a large difference.
     */
    @Test
    void perplexityScoresEachContinuationTokenWithTheDistributionBeforeIt() {
        double nll = 0;
        Transformer t = model.transformer();
        int vocab = t.config().vocabSize();
        for (int[] p : prompts) {
            try (KvCache cache = new Bf16KvCache(t.attentionShape(), backend, P + D)) {
                float[] logits = t.forward(new ForwardState(t.config()), List.of(new Transformer.Chunk(cache, p, 0, P + D,
                        true)));
                for (int i = 0; i < D; i++) { // row P-1+i predicts token P+i
                    float[] row = java.util.Arrays.copyOfRange(logits, (P - 1 + i) * vocab, (P + i) * vocab);
                    nll -= KvCurve.logSoftmax(row)[p[P + i]];
                }
            }
        }
        double expected = Math.exp(nll / (prompts.size() * D));
        double measured = curve(AttentionPath.FUSED, List.of(KvScheme.BF16)).getFirst().perplexity();
        assertEquals(expected, measured, expected * 0.01);
    }

    @Test
    void fusedAndDequantizedPathsGiveTheSameCurve() {
        List<KvScheme> s = List.of(KvScheme.parse("turbo:k4v2"));
        double fused = curve(AttentionPath.FUSED, s).getFirst().meanKl();
        double dequant = curve(AttentionPath.DEQUANT, s).getFirst().meanKl();
        assertEquals(dequant, fused, 1e-3 * dequant);
    }

    @Test
    void jsonIsAnArrayOfObjectsWithExactlyTheFiveKeys(@TempDir Path dir) throws Exception {
        List<KvCurve.Row> rows = List.of(new KvCurve.Row("bf16", 16, 1, 0, 12.5, 1),
                new KvCurve.Row("turbo:k8v3", 6.25, 2.56, 0.03, 12.9, 0.9));
        KvCurveReport.write(dir, rows, "./tqserve eval kv-curve", "test");
        JsonNode root = JsonMapper.shared().readTree(Files.readString(dir.resolve("kv-curve.json")));
        assertEquals(2, root.size());
        Iterator<String> names = root.get(1).propertyNames().iterator();
        for (String key : List.of("scheme", "effective_bits", "mean_kl", "perplexity", "top1_agreement")) {
            assertEquals(key, names.next());
        }
        assertTrue(!names.hasNext());
        assertEquals("turbo:k8v3", root.get(1).get("scheme").asString());
        assertEquals(0.03, root.get(1).get("mean_kl").asDouble());
        assertTrue(Files.size(dir.resolve("kv-curve.png")) > 1000);
        assertTrue(Files.readString(dir.resolve("kv-curve.md")).contains("| turbo:k8v3 | 6.25 | 2.56x |"));
    }

    @Test
    void tooShortPromptIsAnErrorNamingIt(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("p.json");
        Files.writeString(file, "[\"" + "a long enough line of words ".repeat(80) + "\", \"too short to use\"]");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> EvalCommand.run(new String[] {
                "eval", "kv-curve", "--prompts", file.toString(), "--schemes", "bf16", "--out", dir.toString()}));
        assertTrue(e.getMessage().contains("prompt 2 (\"too short to use\")"), e.getMessage());
    }

    @Test
    void builtInPromptsAreLongEnoughForTheDefaultProtocol() throws Exception {
        List<String> texts = EvalCommand.readPrompts(null);
        assertTrue(texts.size() >= 8);
        for (String s : texts) {
            assertTrue(model.tokenizer().encode(s, false).length >= 256, s.substring(0, 30));
        }
    }
}
