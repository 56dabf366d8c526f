package io.tqserve.cli;

import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.constraint.ConstraintLimits;
import io.tqserve.constraint.ConstraintState;
import io.tqserve.constraint.SchemaCompiler;
import io.tqserve.constraint.TokenConstraint;
import io.tqserve.constraint.Vocabulary;
import io.tqserve.engine.GenerationEvent;
import io.tqserve.engine.GenerationRequest;
import io.tqserve.engine.OutputRules;
import io.tqserve.engine.SamplingParams;
import io.tqserve.engine.SerialTurboLane;
import io.tqserve.kv.KvScheme;
import io.tqserve.model.ChatMessage;
import io.tqserve.model.Model;
import io.tqserve.model.TokenBytes;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code ./tqserve bench constraint [--model DIR] [--rounds N] [--max-tokens N] [--threads N]}: the cost of
 * constrained decoding against the decode step, in one run. Generates {@code rounds} JSON-schema-constrained
 * completions (temperature 1, seeds 0..N-1) on the serial lane, then as many unconstrained tokens of the same
 * lengths, after uncounted rounds of both that last until the JIT is quiet ({@link JitWarmup}); both arms run
 * without prompt-lookup speculation (an accepted draft makes one step stand for several tokens, and free text
 * drafts differently from JSON: the arms would not compare decode steps). Then replays the constrained token
 * sequences through the masks alone (warm: the masks the run computed) and with a freshly compiled constraint
 * (cold: first use of the schema). Prints the decode step, the mask cost per token and their ratio. With {@code
 * --maskbench DIR} it runs MaskBench instead ({@link MaskBench}); with {@code --attack}, an unrelated completion's
 * latency alone and under structured-output attacks ({@link ConstraintAttackBenchmark}).
 */
final class ConstraintBenchmark {
    static final String SCHEMA = """
            {"type": "object", "properties": {
              "name": {"type": "string", "maxLength": 12},
              "score": {"type": "number", "minimum": 0, "maximum": 5},
              "year": {"type": "integer", "minimum": 1900, "maximum": 2100},
              "kind": {"type": "string", "enum": ["drama", "comedy", "documentary"]},
              "cast": {"type": "array", "maxItems": 3, "items": {"type": "object", "properties": {
                  "id": {"type": "integer", "minimum": 0, "maximum": 99}, "lead": {"type": "boolean"}},
                "required": ["id", "lead"], "additionalProperties": false}},
              "meta": {"type": "object", "properties": {"lang": {"type": "string", "enum": ["en", "fr"]}},
                "required": ["lang"], "additionalProperties": false}},
             "required": ["name", "score", "year", "kind", "cast", "meta"], "additionalProperties": false}""";

    private ConstraintBenchmark() {
    }

    static int run(String[] args) throws Exception {
        if (java.util.Arrays.asList(args).contains("--maskbench")) {
            return MaskBench.run(args);
        }
        if (java.util.Arrays.asList(args).contains("--attack")) {
            return ConstraintAttackBenchmark.run(args);
        }
        CliArgs a = new CliArgs(args, 2, Set.of("--model", "--rounds", "--max-tokens", "--threads"), Set.of());
        int rounds = a.getInt("--rounds", 20);
        int maxTokens = a.getInt("--max-tokens", 160);
        Object schema = JsonMapper.builder().build().readValue(SCHEMA, Map.class);
        try (CpuBackend backend = CpuBackend.create(a.getInt("--threads", 0));
                Model model = Model.load(Path.of(a.get("--model", TqserveMain.DEFAULT_MODEL)), backend)) {
            System.out.println("backend: " + backend.describe());
            int vocabSize = model.config().vocabSize();
            long t0 = System.nanoTime();
            Vocabulary vocabulary = new Vocabulary(TokenBytes.load(model.dir(), vocabSize));
            long t1 = System.nanoTime();
            TokenConstraint constraint = new TokenConstraint(SchemaCompiler.compileForGeneration(schema, ConstraintLimits.DEFAULT), vocabulary);
            long t2 = System.nanoTime();
            System.out.printf("vocabulary trie: %.1f ms (%d tokens); schema -> grammar: %.1f ms (%d nodes, "
                    + "at least %d tokens)%n", (t1 - t0) / 1e6, vocabSize, (t2 - t1) / 1e6,
                    constraint.grammar().nodes(), constraint.minTokens());
            int[] prompt = model.tokenizer().encode(model.chatTemplate().render(
                    ChatMessage.asTemplateValues(List.of(ChatMessage.user("Describe a movie as JSON."))), true));
            int[] eos = model.generation().eosTokenIds().stream().mapToInt(Integer::intValue).toArray();
            KvScheme scheme = KvScheme.parse("bf16");
            try (SerialTurboLane lane = new SerialTurboLane(model, scheme,
                    model.transformer().attentionShape().layout(scheme).bytesFor(model.config().maxPositions()), 1)) {
                lane.start();
                List<int[]> outputs = new ArrayList<>();
                double constrainedNs = 0;
                double freeNs = 0;
                long steps = 0;
                // Uncounted rounds (negative seeds, which no counted round uses) first, until the JIT is quiet
                // (JitWarmup): the constrained path's code is compiled over the first rounds, and on two cores the
                // compiler threads take a core from the kernel threads meanwhile (its steps ran 1.3-2.5x the free
                // arm's in rounds 0-2 after a single warm-up round, alike from round 5 on).
                JitWarmup warmup = new JitWarmup();
                for (int w = -1; !warmup.done(); w--) {
                    pair(lane, prompt, constraint, w, maxTokens);
                }
                for (int r = 0; r < rounds; r++) {
                    Run[] cf = pair(lane, prompt, constraint, r, maxTokens);
                    Run c = cf[0];
                    Run f = cf[1];
                    outputs.add(c.tokens);
                    if (c.tokens.length > 1 && f.tokens.length == c.tokens.length) {
                        constrainedNs += c.decodeNs;
                        freeNs += f.decodeNs;
                        steps += c.tokens.length - 1;
                    }
                }
                double stepUs = freeNs / steps / 1e3;
                double withMaskUs = constrainedNs / steps / 1e3;
                double warmUs = replay(constraint, outputs, eos, maxTokens, vocabSize) / 1e3;
                TokenConstraint cold = new TokenConstraint(SchemaCompiler.compileForGeneration(schema, ConstraintLimits.DEFAULT), vocabulary);
                long c0 = System.nanoTime();
                double coldFirstUs = replay(cold, outputs.subList(0, 1), eos, maxTokens, vocabSize) / 1e3;
                long c1 = System.nanoTime();
                System.out.printf("%d constrained completions, %d decode steps: decode step %.1f us unconstrained, "
                        + "%.1f us constrained (%+.1f%%)%n", rounds, steps, stepUs, withMaskUs,
                        100 * (withMaskUs / stepUs - 1));
                System.out.printf("mask + advance per token, warm lexeme masks: %.2f us = %.2f%% of a decode step%n", warmUs,
                        100 * warmUs / stepUs);
                System.out.printf("first use of the schema: one completion's masks computed cold: %.1f us per token, "
                        + "%.1f ms in all (%d lexeme masks cached, %d bytes)%n", coldFirstUs, (c1 - c0) / 1e6,
                        cold.cachedMasks(), cold.bytes());
            }
        }
        return 0;
    }

    record Run(int[] tokens, long decodeNs) {
    }

    /**
     * A constrained completion with this seed, then an unconstrained one of as many tokens (EOS ignored), both
     * without prompt-lookup speculation.
     */
    private static Run[] pair(SerialTurboLane lane, int[] prompt, TokenConstraint constraint, long seed,
            int maxTokens) {
        SamplingParams p = new SamplingParams(1f, 0, 1f, 0f, seed, 1f, 0f, 0f, Map.of(), maxTokens, List.of(), false,
                -1);
        Run c = generate(lane, new GenerationRequest(prompt, p, null, null,
                new OutputRules(constraint, -1, false)).withSpeculative(false));
        SamplingParams free = new SamplingParams(1f, 0, 1f, 0f, seed, 1f, 0f, 0f, Map.of(), c.tokens.length,
                List.of(), true, -1);
        return new Run[] {c, generate(lane, new GenerationRequest(prompt, free).withSpeculative(false))};
    }

    private static Run generate(SerialTurboLane lane, GenerationRequest request) {
        List<Integer> tokens = new ArrayList<>();
        long[] first = {0};
        lane.submit(request).doOnNext(e -> {
            if (e instanceof GenerationEvent.Token t) {
                if (first[0] == 0) {
                    first[0] = System.nanoTime();
                }
                tokens.add(t.tokenId());
            } else if (e instanceof GenerationEvent.Failed f) {
                throw new IllegalStateException(f.message());
            }
        }).blockLast();
        long end = System.nanoTime();
        return new Run(tokens.stream().mapToInt(Integer::intValue).toArray(), end - first[0]);
    }

    /** Mean ns per token of mask + advance over the given token sequences. */
    private static double replay(TokenConstraint c, List<int[]> outputs, int[] eos, int maxTokens, int vocab) {
        float[] logits = new float[vocab];
        SplittableRandom r = new SplittableRandom(1);
        for (int i = 0; i < vocab; i++) {
            logits[i] = (float) r.nextGaussian();
        }
        float[] x = new float[vocab];
        long ns = 0;
        long n = 0;
        for (int[] tokens : outputs) {
            ConstraintState st = new ConstraintState(c, eos, -1);
            for (int i = 0; i < tokens.length; i++) {
                System.arraycopy(logits, 0, x, 0, vocab);
                long t = System.nanoTime();
                st.mask(x, maxTokens - i);
                st.advance(tokens[i]);
                ns += System.nanoTime() - t;
                n++;
            }
        }
        return (double) ns / n;
    }
}
