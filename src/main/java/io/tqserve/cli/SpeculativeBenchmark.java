package io.tqserve.cli;

import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.engine.BatchedBf16Lane;
import io.tqserve.engine.GenerationEvent;
import io.tqserve.engine.GenerationRequest;
import io.tqserve.engine.Lane;
import io.tqserve.engine.PromptLookup;
import io.tqserve.engine.SamplingParams;
import io.tqserve.engine.SerialTurboLane;
import io.tqserve.engine.Warmup;
import io.tqserve.kv.KvScheme;
import io.tqserve.model.Model;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;

/**
 * {@code ./tqserve bench speculative [--model DIR] [--kv SCHEME] [--tokens N] [--rounds N] [--threads N]
 * [--min-ngram N] [--max-ngram N] [--max-draft N] [--account]}: greedy decode speed with and without prompt-lookup
 * speculation,
 * in one run, rounds alternating off/on, on the serial lane (the {@code --kv} scheme) and the batched lane (bf16),
 * for three workloads: <b>copy</b> (the prompt holds a page's closing sections and then their first lines again,
 * so the continuation repeats the prompt: {@link #FOOTER}), <b>free</b> (short prompts with nothing to copy,
 * greedy: the model's output still repeats itself) and <b>free sampled</b> (the same prompts at temperature 0.8,
 * seeded: little repeats). Prints per workload and lane how much the plain output repeats its history
 * ({@link #repeats}), the decode tok/s off and on (medians over the rounds), their ratio, the draft acceptance and
 * tokens per verifying pass, and whether the tokens were identical (they must be: drafts are verified, and sampled
 * tokens are drawn exactly as without them). "on/off CPU" is the same ratio by the CPU time of the lane's thread and
 * the kernel threads (with {@code --threads 1} the lane's thread does all the work, and the ratio does not move with
 * other jobs' load; with more threads the kernel threads' spinning between tasks counts too). {@code --account}
 * prints {@link SpeculativeAccount}'s cost of a pass of k rows against one row instead (one thread by default).
 */
final class SpeculativeBenchmark {
    /**
     * The closing sections of a GNU coreutils manual page. The embedded model, trained on manual pages, has no
     * induction copy (a page given once, twice or four times is continued with new text on every KV scheme), but
     * these sections recur nearly verbatim across its training pages, so given once and begun again it writes them
     * out again: its output repeats the prompt, as an edit or a repeat-this-page request would.
     */
    static final String FOOTER = """
            AUTHOR
                   Written by Richard M. Stallman and David MacKenzie.

            REPORTING BUGS
                   GNU coreutils online help: <https://www.gnu.org/software/coreutils/>
                   Report any translation bugs to <https://translationproject.org/team/>

            COPYRIGHT
                   Copyright (C) 2022 Free Software Foundation, Inc.  License GPLv3+: GNU GPL version 3 or later
                   <https://gnu.org/licenses/gpl.html>.
                   This is free software: you are free to change and redistribute it.  There is NO WARRANTY, to the
                   extent permitted by law.

            SEE ALSO
                   Full documentation <https://www.gnu.org/software/coreutils/ls>
                   or available locally via: info '(coreutils) ls invocation'
            """;
    static final String[] FREE = {"The ls command", "SYNOPSIS\n       grep", "The following options are",
        "ENVIRONMENT\n       HOME"};

    private SpeculativeBenchmark() {
    }

    static int run(String[] args) throws Exception {
        CliArgs a = new CliArgs(args, 2, Set.of("--model", "--kv", "--tokens", "--rounds", "--threads", "--min-ngram",
                "--max-ngram", "--max-draft"), Set.of("--account"));
        KvScheme scheme = KvScheme.parse(a.get("--kv", "turbo:k8v3"));
        int tokens = a.getInt("--tokens", 256);
        int rounds = a.getInt("--rounds", 5);
        PromptLookup lookup = new PromptLookup(a.getInt("--min-ngram", 2), a.getInt("--max-ngram", 4),
                a.getInt("--max-draft", 8));
        String[] copy = {FOOTER + "\n" + FOOTER.substring(0, FOOTER.indexOf("REPORTING BUGS") + 14)};
        if (a.has("--account")) {
            try (CpuBackend backend = CpuBackend.create(a.getInt("--threads", 1))) {
                PhaseTimedBackend timed = new PhaseTimedBackend(backend);
                try (Model model = Model.load(Path.of(a.get("--model", TqserveMain.DEFAULT_MODEL)), timed)) {
                    System.err.printf("backend %s; pass account, %d rounds%n", backend.describe(), rounds);
                    SpeculativeAccount.run(model.transformer(), timed, List.of(scheme, KvScheme.parse("bf16")),
                            model.tokenizer().encode(copy[0]), new int[] {1, 2, 3, 4, 5, 7, 9}, rounds);
                }
            }
            return 0;
        }
        try (CpuBackend backend = CpuBackend.create(a.getInt("--threads", 0));
                Model model = Model.load(Path.of(a.get("--model", TqserveMain.DEFAULT_MODEL)), backend)) {
            System.err.printf("backend %s; %d tokens per request; %d rounds; lookup n=%d..%d, draft %d%n",
                    backend.describe(), tokens, rounds, lookup.minNgram(), lookup.maxNgram(), lookup.maxDraft());
            // the server's startup warm-up (tqserve.backend.warmup), so the lanes' cost gates time compiled passes
            Warmup.Report w = Warmup.run(model, List.of(scheme, KvScheme.BF16), Duration.ofSeconds(30));
            System.err.printf("warm-up: %d rounds, %d ms%n", w.rounds(), w.millis());
            System.out.println("| workload | lane | repeats | decode tok/s off | decode tok/s on | on/off | on/off CPU"
                    + " | acceptance | tokens/pass | identical |");
            System.out.println("|---|---|---|---|---|---|---|---|---|---|");
            for (String lane : List.of("serial " + scheme.id(), "batched bf16")) {
                for (String workload : List.of("copy", "free", "free sampled")) {
                    String[] prompts = workload.equals("copy") ? copy : FREE;
                    Lane l;
                    if (lane.startsWith("serial")) {
                        SerialTurboLane s = new SerialTurboLane(model, scheme, 1L << 32, 4);
                        s.setPromptLookup(lookup);
                        s.start();
                        l = s;
                    } else {
                        BatchedBf16Lane b = new BatchedBf16Lane(model, 1L << 32, 16, 8, 64, 1);
                        b.setPromptLookup(lookup);
                        b.start();
                        l = b;
                    }
                    try (l) {
                        measure(model, l, lane, workload, prompts, tokens, rounds, workload.endsWith("sampled"),
                                lookup);
                    }
                }
            }
        }
        return 0;
    }

    private static void measure(Model model, Lane lane, String laneName, String workload, String[] prompts,
            int tokens, int rounds, boolean sampled, PromptLookup lookup) {
        int[][] ids = new int[prompts.length][];
        for (int i = 0; i < prompts.length; i++) {
            ids[i] = model.tokenizer().encode(prompts[i]);
        }
        run(lane, ids, 32, false, sampled); // JIT warm-up of both paths
        run(lane, ids, 32, true, sampled);
        double[] off = new double[rounds];
        double[] on = new double[rounds];
        double[] cpuOff = new double[rounds];
        double[] cpuOn = new double[rounds];
        boolean identical = true;
        double repeats = 0;
        long drafts0 = lane.draftTokensProposed();
        long accepted0 = lane.draftTokensAccepted();
        long passes0 = lane.verificationPasses();
        long emitted0 = lane.verificationTokens();
        for (int r = 0; r < rounds; r++) {
            Result a = run(lane, ids, tokens, false, sampled);
            Result b = run(lane, ids, tokens, true, sampled);
            repeats = repeats(ids, a.tokens(), lookup);
            off[r] = a.tokPerSec();
            on[r] = b.tokPerSec();
            cpuOff[r] = a.tokPerCpuSec();
            cpuOn[r] = b.tokPerCpuSec();
            identical &= Arrays.deepEquals(a.tokens(), b.tokens());
        }
        double drafts = lane.draftTokensProposed() - drafts0;
        double passes = lane.verificationPasses() - passes0;
        double offMedian = median(off);
        double onMedian = median(on);
        double cpuRatio = median(cpuOn) / median(cpuOff);
        System.out.printf("| %s | %s | %.2f | %.1f | %.1f | %.2fx | %.2fx | %s | %s | %s |%n", workload, laneName,
                repeats, offMedian, onMedian, onMedian / offMedian, cpuRatio, drafts == 0 ? "-" : String.format("%.2f", (lane.draftTokensAccepted() - accepted0)
                        / drafts), passes == 0 ? "-" : String.format("%.2f", (lane.verificationTokens() - emitted0)
                        / passes), identical ? "yes" : "NO");
        System.out.flush();
    }

    private record Result(int[][] tokens, double tokPerSec, double tokPerCpuSec) {
    }

    /**
     * How much of an output repeats its history: the share of the generated tokens (after the first) that the lookup,
     * given the prompt and the tokens before, proposes as its first draft token. It depends on the plain output only,
     * so it says how copy-heavy a workload is whatever the gate then decides.
     */
    static double repeats(int[][] prompts, int[][] outputs, PromptLookup lookup) {
        int[] draft = new int[1];
        long hits = 0;
        long total = 0;
        for (int i = 0; i < prompts.length; i++) {
            int[] h = Arrays.copyOf(prompts[i], prompts[i].length + outputs[i].length);
            System.arraycopy(outputs[i], 0, h, prompts[i].length, outputs[i].length);
            for (int t = prompts[i].length + 1; t < h.length; t++) {
                hits += lookup.propose(h, t, draft, 1) == 1 && draft[0] == h[t] ? 1 : 0;
                total++;
            }
        }
        return total == 0 ? 0 : (double) hits / total;
    }

    /**
     * The prompts one after another, greedy or (sampled) at temperature 0.8, top-p 0.95 with a fixed seed per prompt;
     * decode speed = tokens after each first token / time after each first token.
     */
    private static Result run(Lane lane, int[][] prompts, int tokens, boolean speculative, boolean sampled) {
        int[][] out = new int[prompts.length][];
        long decodeNanos = 0;
        long decodeCpuNanos = 0;
        long decoded = 0;
        for (int i = 0; i < prompts.length; i++) {
            SamplingParams p = new SamplingParams(sampled ? 0.8f : 0f, 0, sampled ? 0.95f : 1f, 0f,
                    sampled ? 1000L + i : null, 1f, 0f, 0f, java.util.Map.of(), tokens, List.of(), true, -1);
            List<Integer> got = new ArrayList<>();
            long[] first = {0, 0, 0}; // wall at the first token, CPU at the first and at the last token
            lane.submit(new GenerationRequest(prompts[i], p).withSpeculative(speculative)).doOnNext(e -> {
                if (e instanceof GenerationEvent.Token t) {
                    // on the lane's thread: its CPU time and the kernel threads' (all of the decode's work)
                    long cpu = laneClock().nanos();
                    if (first[0] == 0) {
                        first[0] = System.nanoTime();
                        first[1] = cpu;
                    }
                    first[2] = cpu;
                    got.add(t.tokenId());
                } else if (e instanceof GenerationEvent.Failed f) {
                    throw new IllegalStateException(f.message());
                }
            }).blockLast();
            decodeNanos += System.nanoTime() - first[0];
            decodeCpuNanos += first[2] - first[1];
            decoded += got.size() - 1;
            out[i] = got.stream().mapToInt(Integer::intValue).toArray();
        }
        return new Result(out, decoded / (decodeNanos / 1e9), decoded / (decodeCpuNanos / 1e9));
    }

    /** The CPU clock of the calling lane thread and the kernel threads, made on the lane's first token. */
    private static CpuClock laneClock() {
        CpuClock c = LANE_CLOCK.get();
        if (c == null) {
            c = CpuClock.forKernelThreads();
            LANE_CLOCK.set(c);
        }
        return c;
    }

    private static final ThreadLocal<CpuClock> LANE_CLOCK = new ThreadLocal<>();

    private static double median(double[] x) {
        double[] s = x.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }
}
