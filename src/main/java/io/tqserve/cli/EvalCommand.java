package io.tqserve.cli;

import io.tqserve.backend.BackendSelector;
import io.tqserve.backend.ComputeBackend;
import io.tqserve.kv.KvScheme;
import io.tqserve.kv.turbo.AttentionPath;
import io.tqserve.model.Model;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code ./tqserve eval kv-curve [--model DIR] [--schemes LIST] [--prompts FILE] [--prompt-tokens 128]
 * [--decode-steps 128] [--out DIR] [--turbo-path fused|deferred|dequant] [--threads N] [--backend cpu|mlx|auto]
 * [--mlx-library FILE] [--mlx-dtype native|float32] [--mlx-turbo-kernel auto|ops|metal|cuda]}: the KV-scheme quality curve
 * ({@link KvCurve}), written as kv-curve.md, kv-curve.json and kv-curve.png in the output folder (default
 * target/kv-curve). Progress goes to stderr.
 */
final class EvalCommand {
    static final String USAGE = """
            usage: tqserve eval kv-curve [--model DIR] [--schemes LIST] [--prompts FILE] [--prompt-tokens 128]
                                         [--decode-steps 128] [--out DIR] [--turbo-path fused|deferred|dequant]
                                         [--threads N] [--backend cpu|mlx|auto] [--mlx-library FILE]
                                         [--mlx-dtype native|float32] [--mlx-turbo-kernel auto|ops|metal|cuda]
                   tqserve eval weight-curve [--model DIR] [--arms bf16/bf16,8/bf16,4/bf16,4r/bf16,4/turbo:k8v3]
                                         [--group-size 64] [--seed N] [--prompts FILE] [--prompt-tokens 128]
                                         [--decode-steps 128] [--threads N]
            """;
    static final String DEFAULT_SCHEMES =
            "bf16,turbo:k8v8,turbo:k8v4,turbo:k8v3,turbo:k8v2,turbo:k4v3,turbo:k4v2,int8,int4";
    /** The built-in prompt set: original English prose passages (see docs/quality.md). */
    static final String BUILT_IN_PROMPTS = "/eval/kv-curve-prompts.json";

    private EvalCommand() {
    }

    static int run(String[] args) throws Exception {
        String what = args.length > 1 ? args[1] : "";
        if (what.equals("weight-curve")) {
            return WeightCurve.run(args);
        }
        if (!what.equals("kv-curve")) {
            System.err.print(USAGE);
            return 2;
        }
        System.setProperty("java.awt.headless", "true");
        CliArgs a = new CliArgs(args, 2, Set.of("--model", "--schemes", "--prompts", "--prompt-tokens", "--decode-steps",
                "--out", "--turbo-path", "--threads", "--backend", "--mlx-library", "--mlx-dtype",
                "--mlx-turbo-kernel"), Set.of());
        Path modelDir = Path.of(a.get("--model", TqserveMain.DEFAULT_MODEL));
        List<KvScheme> schemes = new ArrayList<>();
        for (String s : a.get("--schemes", DEFAULT_SCHEMES).split(",")) {
            schemes.add(KvScheme.parse(s));
        }
        int promptTokens = a.getInt("--prompt-tokens", 128);
        int decodeSteps = a.getInt("--decode-steps", 128);
        if (promptTokens < 1 || decodeSteps < 1) {
            throw new IllegalArgumentException("--prompt-tokens and --decode-steps must be positive");
        }
        AttentionPath path = AttentionPath.parse(a.get("--turbo-path", "fused"));
        Path out = Path.of(a.get("--out", "target/kv-curve"));
        String promptsArg = a.get("--prompts", null);
        List<String> texts = readPrompts(promptsArg);
        BackendSelector.Selection selection = BackendSelector.select(a.get("--backend", "cpu"), a.getInt("--threads", 0),
                a.get("--mlx-library", null), a.mlxOptions());
        try (ComputeBackend backend = selection.backend();
                Model model = Model.load(modelDir, backend)) {
            if (promptTokens + decodeSteps > model.config().maxPositions()) {
                throw new IllegalArgumentException("prompt-tokens + decode-steps = " + (promptTokens + decodeSteps)
                        + " exceeds the model context of " + model.config().maxPositions());
            }
            List<int[]> prompts = tokenize(model, texts, promptTokens + decodeSteps);
            System.err.printf("kv-curve: %s; model %s; %d prompts x (%d prompt + %d teacher-forced tokens); %d schemes;"
                    + " turbo path %s%n", backend.describe(), modelDir, prompts.size(), promptTokens, decodeSteps,
                    schemes.size(), path.name().toLowerCase(java.util.Locale.ROOT));
            List<KvCurve.Row> rows = new KvCurve(model.transformer(), promptTokens, decodeSteps, path, System.err)
                    .run(schemes, prompts);
            StringBuilder command = new StringBuilder("./tqserve");
            for (String s : args) {
                command.append(' ').append(s);
            }
            String about = String.format(java.util.Locale.ROOT, "Model `%s`, %d prompts from %s, %d prompt tokens + %d "
                    + "teacher-forced decode steps each; KL and top-1 over the %d decode-step distributions per prompt, "
                    + "perplexity over the %d continuation tokens (each scored by the distribution before it was fed). "
                    + "Turbo attention path: %s.", modelDir, prompts.size(),
                    promptsArg == null ? "the built-in set (" + BUILT_IN_PROMPTS + ")" : promptsArg, promptTokens,
                    decodeSteps, decodeSteps, decodeSteps, path.name().toLowerCase(java.util.Locale.ROOT));
            KvCurveReport.write(out, rows, command.toString(), about);
            System.out.print(KvCurveReport.markdown(rows, command.toString(), about));
            System.err.println("kv-curve: wrote " + out.resolve("kv-curve.md") + ", kv-curve.json, kv-curve.png");
        }
        return 0;
    }

    /** The prompts' token ids, each checked to hold at least {@code need} tokens. */
    static List<int[]> tokenize(Model model, List<String> texts, int need) {
        List<int[]> prompts = new ArrayList<>();
        for (int i = 0; i < texts.size(); i++) {
            int[] ids = model.tokenizer().encode(texts.get(i), false);
            if (ids.length < need) {
                String head = texts.get(i).strip();
                head = head.length() > 40 ? head.substring(0, 40) + "…" : head;
                throw new IllegalArgumentException("prompt " + (i + 1) + " (\"" + head + "\") has " + ids.length
                        + " tokens; needs prompt-tokens + decode-steps = " + need);
            }
            prompts.add(ids);
        }
        return prompts;
    }

    /** A JSON array of strings from the file, or the built-in set. */
    static List<String> readPrompts(String file) throws IOException {
        String json;
        if (file == null) {
            try (InputStream in = EvalCommand.class.getResourceAsStream(BUILT_IN_PROMPTS)) {
                if (in == null) {
                    throw new IOException("built-in prompt set " + BUILT_IN_PROMPTS + " is missing from the jar");
                }
                json = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            }
        } else {
            json = Files.readString(Path.of(file));
        }
        JsonNode root = JsonMapper.shared().readTree(json);
        if (!root.isArray() || root.isEmpty()) {
            throw new IllegalArgumentException("--prompts must be a non-empty JSON array of strings");
        }
        List<String> out = new ArrayList<>();
        for (JsonNode n : root) {
            if (!n.isString()) {
                throw new IllegalArgumentException("--prompts must be a JSON array of strings; found " + n.getNodeType());
            }
            out.add(n.asString());
        }
        return out;
    }
}
