package io.tqserve.cli;

import io.tqserve.backend.BackendSelector;
import io.tqserve.backend.ComputeBackend;
import io.tqserve.engine.GenerationEvent;
import io.tqserve.engine.GenerationRequest;
import io.tqserve.engine.SamplingParams;
import io.tqserve.engine.SerialTurboLane;
import io.tqserve.kv.KvScheme;
import io.tqserve.model.ChatMessage;
import io.tqserve.model.Model;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * {@code ./tqserve generate --prompt TEXT [--model DIR] [--max-tokens N] [--temperature T] [--seed S] [--chat]
 * [--kv SCHEME] [--top-p P] [--top-k K] [--threads N] [--backend auto|cpu|mlx] [--mlx-library PATH]}: prints
 * only the generated text to stdout as it streams, and the backend choice and timings to stderr.
 */
final class GenerateCommand {
    static final String USAGE = "usage: tqserve generate --prompt TEXT [--model DIR] [--max-tokens N] [--temperature T]"
            + " [--seed S] [--top-p P] [--top-k K] [--chat] [--kv bf16|turbo:k8v3|...] [--threads N]"
            + " [--backend auto|cpu|mlx] [--mlx-library PATH] [--mlx-dtype native|float32]";

    private GenerateCommand() {
    }

    static int run(String[] args) throws Exception {
        return run(args, new PrintStream(System.out, true, StandardCharsets.UTF_8), System.err);
    }

    /** Runs the verb writing the generated text to {@code out} and diagnostics to {@code err}. */
    static int run(String[] args, PrintStream out, PrintStream err) throws Exception {
        CliArgs a = new CliArgs(args, 1, Set.of("--prompt", "--model", "--max-tokens", "--temperature", "--seed",
                "--top-p", "--top-k", "--kv", "--threads", "--backend", "--mlx-library", "--mlx-dtype"), Set.of("--chat"));
        String prompt = a.require("--prompt");
        Path modelDir = Path.of(a.get("--model", TqserveMain.DEFAULT_MODEL));
        KvScheme scheme = KvScheme.parse(a.get("--kv", "bf16"));
        BackendSelector.Selection selection;
        try {
            selection = BackendSelector.select(a.get("--backend", "auto"),
                    a.getInt("--threads", 0),
                    a.get("--mlx-library", null), a.mlxOptions());
        } catch (IllegalStateException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
        err.println("tqserve: " + selection.reason());
        try (ComputeBackend backend = selection.backend();
                Model model = Model.load(modelDir, backend)) {
            String device = model.transformer().deviceDescription();
            err.println("tqserve: " + (device != null ? device : backend.name() + " Java forward") + "; model "
                    + model.config().architecture().hfName()
                    + " (" + model.config().numLayers() + " layers, head_dim " + model.config().headDim() + "); KV "
                    + scheme.id());
            int[] ids;
            if (a.has("--chat")) {
                if (model.chatTemplate() == null) {
                    throw new IllegalArgumentException("the model has no chat template; drop --chat");
                }
                String rendered = model.chatTemplate().render(ChatMessage.asTemplateValues(List.of(new ChatMessage("user", prompt))), true);
                ids = model.tokenizer().encode(rendered);
            } else {
                ids = model.tokenizer().encode(prompt);
            }
            float temperature = a.getFloat("--temperature", 0.8f);
            String seed = a.get("--seed", null);
            SamplingParams params = new SamplingParams(temperature, a.getInt("--top-k", 0),
                    a.getFloat("--top-p", 1f), 0f, seed == null ? null : Long.parseLong(seed), 1f, 0f, 0f, Map.of(),
                    a.getInt("--max-tokens", 128), List.of(), false, -1);
            int maxTokens = Math.min(params.maxTokens(), model.config().maxPositions() - ids.length);
            if (maxTokens < 1) {
                throw new IllegalArgumentException("the prompt (" + ids.length + " tokens) fills the model context of "
                        + model.config().maxPositions());
            }
            params = params.withMaxTokens(maxTokens);
            try (SerialTurboLane lane = new SerialTurboLane(model, scheme,
                    model.transformer().attentionShape().layout(scheme).bytesFor(model.config().maxPositions()), 1)) {
                lane.start();
                long t0 = System.nanoTime();
                long[] firstToken = {0};
                int[] generated = {0};
                String[] failure = {null};
                lane.submit(new GenerationRequest(ids, params)).doOnNext(e -> {
                    switch (e) {
                        case GenerationEvent.Token t -> {
                            if (firstToken[0] == 0) {
                                firstToken[0] = System.nanoTime();
                            }
                            out.print(t.text());
                        }
                        case GenerationEvent.Finished f -> {
                            out.print(f.trailingText());
                            generated[0] = f.completionTokens();
                        }
                        case GenerationEvent.Failed f -> failure[0] = f.message();
                        case GenerationEvent.Started s -> {
                        }
                    }
                }).blockLast();
                long t1 = System.nanoTime();
                if (System.console() != null) {
                    out.println(); // only for a terminal: piped output is exactly the generated text
                }
                if (failure[0] != null) {
                    err.println("tqserve: generation failed: " + failure[0]);
                    return 1;
                }
                double prefillS = ((firstToken[0] == 0 ? t1 : firstToken[0]) - t0) / 1e9;
                double decodeS = (t1 - (firstToken[0] == 0 ? t1 : firstToken[0])) / 1e9;
                err.printf("tqserve: prompt %d tokens, %.1f tok/s; decode %d tokens, %.1f tok/s%n", ids.length,
                        ids.length / prefillS, generated[0], generated[0] > 1 ? (generated[0] - 1) / decodeS : 0.0);
            }
        }
        return 0;
    }
}
