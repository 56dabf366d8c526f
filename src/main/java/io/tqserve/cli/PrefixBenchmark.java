package io.tqserve.cli;

import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.engine.GenerationEvent;
import io.tqserve.engine.GenerationRequest;
import io.tqserve.engine.SamplingParams;
import io.tqserve.engine.SerialTurboLane;
import io.tqserve.kv.KvScheme;
import io.tqserve.kv.store.PromptCache;
import io.tqserve.model.Model;
import java.nio.file.Path;
import java.util.Set;
import java.util.stream.IntStream;

/**
 * {@code ./tqserve bench prefix [--model DIR] [--prefix-tokens N] [--kv SCHEME]}: time to first token of a request
 * with a long prompt, then of a second request sharing that prompt as a prefix (plus 16 new tokens), with the
 * prompt cache on, and their ratio — measured in one run on the serial lane.
 */
final class PrefixBenchmark {
    private PrefixBenchmark() {
    }

    static int run(String[] args) throws Exception {
        CliArgs a = new CliArgs(args, 2, Set.of("--model", "--prefix-tokens", "--kv", "--threads"), Set.of());
        int n = a.getInt("--prefix-tokens", 1024);
        KvScheme scheme = KvScheme.parse(a.get("--kv", "bf16"));
        try (CpuBackend backend = CpuBackend.create(a.getInt("--threads", 0));
                Model model = Model.load(Path.of(a.get("--model", TqserveMain.DEFAULT_MODEL)), backend)) {
            int vocab = model.config().vocabSize();
            int[] prefix = IntStream.range(0, n).map(i -> 3 + (i * 7919) % (vocab - 3)).toArray();
            int[] second = IntStream.concat(IntStream.of(prefix), IntStream.range(0, 16).map(i -> 100 + i)).toArray();
            SerialTurboLane lane = new SerialTurboLane(model, scheme, 1L << 34, 4);
            PromptCache cache = new PromptCache(scheme, model.transformer().attentionShape(), 1L << 32, 16,
                    model.fingerprint(), model.tokenizerHash(), null, 0);
            lane.setPromptCache(cache);
            lane.start();
            try (lane) {
                // JIT warm-up on the same code paths (fresh prefill, then a prefill continuing a restored prefix),
                // with other tokens so that nothing of it is cached for the measured pair
                int[] warmPrefix = IntStream.of(prefix).map(t -> 3 + (t + 1) % (vocab - 3)).toArray();
                double warm = ttft(lane, warmPrefix)
                        + ttft(lane, IntStream.concat(IntStream.of(warmPrefix), IntStream.range(0, 16)).toArray());
                double first = ttft(lane, prefix);
                double reuse = ttft(lane, second);
                System.out.printf("backend %s; KV %s; warm-up %.1f ms%n", backend.describe(), scheme.id(), warm);
                System.out.printf("first request (%d-token prompt): TTFT %.1f ms%n", prefix.length, first);
                System.out.printf("second request (same %d-token prefix + 16 new tokens, %d cached): TTFT %.1f ms%n",
                        prefix.length, prefix.length, reuse);
                System.out.printf("ratio second/first: %.3f%n", reuse / first);
            }
        }
        return 0;
    }

    private static double ttft(SerialTurboLane lane, int[] prompt) {
        long t0 = System.nanoTime();
        long[] first = {0};
        lane.submit(new GenerationRequest(prompt, SamplingParams.greedy(2))).doOnNext(e -> {
            if (e instanceof GenerationEvent.Token && first[0] == 0) {
                first[0] = System.nanoTime();
            }
        }).blockLast();
        return (first[0] - t0) / 1e6;
    }
}
