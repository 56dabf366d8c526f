package io.tqserve.cli;

import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.engine.BatchedBf16Lane;
import io.tqserve.engine.GenerationEvent;
import io.tqserve.engine.GenerationRequest;
import io.tqserve.engine.Lane;
import io.tqserve.engine.PromptLookup;
import io.tqserve.engine.SamplingParams;
import io.tqserve.engine.SerialTurboLane;
import io.tqserve.kv.KvScheme;
import io.tqserve.model.Model;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;

/**
 * {@code ./tqserve bench speculative [--model DIR] [--kv SCHEME] [--tokens N] [--rounds N] [--threads N]
 * [--min-ngram N] [--max-ngram N] [--max-draft N]}: greedy decode speed with and without prompt-lookup speculation,
 * in one run, rounds alternating off/on, on the serial lane (the {@code --kv} scheme) and the batched lane (bf16),
 * for two workloads: <b>copy</b> (the prompt holds a manual page and then its first lines again, so the
 * continuation repeats the page) and <b>free</b> (short prompts with nothing to copy). Prints per workload and lane
 * the decode tok/s off and on (medians over the rounds), their ratio, the draft acceptance and tokens per verifying
 * pass, and whether the tokens were identical (they must be).
 */
final class SpeculativeBenchmark {
    static final String PAGE = """
            NAME
                   tar - an archiving utility

            SYNOPSIS
                   tar [OPTION...] [FILE]...

            DESCRIPTION
                   GNU tar saves many files together into a single tape or disk archive, and can restore individual
                   files from the archive. The first argument to tar should be a function; either one of the letters
                   Acdrtux, or one of the long function names. A function letter need not be prefixed with a dash.

            OPTIONS
                   -c, --create
                          create a new archive
                   -x, --extract, --get
                          extract files from an archive
                   -t, --list
                          list the contents of an archive
                   -f, --file=ARCHIVE
                          use archive file or device ARCHIVE
                   -v, --verbose
                          verbosely list files processed

            EXIT STATUS
                   Tar exits with status 0 if all files were processed, 1 if some files differ, and 2 on a fatal error.
            """;
    static final String[] FREE = {"The ls command", "SYNOPSIS\n       grep", "The following options are",
        "ENVIRONMENT\n       HOME"};

    private SpeculativeBenchmark() {
    }

    static int run(String[] args) throws Exception {
        CliArgs a = new CliArgs(args, 2, Set.of("--model", "--kv", "--tokens", "--rounds", "--threads", "--min-ngram",
                "--max-ngram", "--max-draft"), Set.of());
        KvScheme scheme = KvScheme.parse(a.get("--kv", "turbo:k8v3"));
        int tokens = a.getInt("--tokens", 256);
        int rounds = a.getInt("--rounds", 5);
        PromptLookup lookup = new PromptLookup(a.getInt("--min-ngram", 2), a.getInt("--max-ngram", 4),
                a.getInt("--max-draft", 8));
        try (CpuBackend backend = CpuBackend.create(a.getInt("--threads", 0));
                Model model = Model.load(Path.of(a.get("--model", TqserveMain.DEFAULT_MODEL)), backend)) {
            String[] copy = {PAGE + "\n" + PAGE.substring(0, PAGE.indexOf("DESCRIPTION"))};
            System.err.printf("backend %s; %d tokens per request; %d rounds; lookup n=%d..%d, draft %d%n",
                    backend.describe(), tokens, rounds, lookup.minNgram(), lookup.maxNgram(), lookup.maxDraft());
            System.out.println("| workload | lane | decode tok/s off | decode tok/s on | on/off | acceptance | tokens/pass"
                    + " | identical |");
            System.out.println("|---|---|---|---|---|---|---|---|");
            for (String lane : List.of("serial " + scheme.id(), "batched bf16")) {
                for (String workload : List.of("copy", "free")) {
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
                        measure(model, l, lane, workload, prompts, tokens, rounds);
                    }
                }
            }
        }
        return 0;
    }

    private static void measure(Model model, Lane lane, String laneName, String workload, String[] prompts,
            int tokens, int rounds) {
        int[][] ids = new int[prompts.length][];
        for (int i = 0; i < prompts.length; i++) {
            ids[i] = model.tokenizer().encode(prompts[i]);
        }
        run(lane, ids, 32, false); // JIT warm-up of both paths
        run(lane, ids, 32, true);
        double[] off = new double[rounds];
        double[] on = new double[rounds];
        boolean identical = true;
        long drafts0 = lane.draftTokensProposed();
        long accepted0 = lane.draftTokensAccepted();
        long passes0 = lane.verificationPasses();
        long emitted0 = lane.verificationTokens();
        for (int r = 0; r < rounds; r++) {
            Result a = run(lane, ids, tokens, false);
            Result b = run(lane, ids, tokens, true);
            off[r] = a.tokPerSec();
            on[r] = b.tokPerSec();
            identical &= Arrays.deepEquals(a.tokens(), b.tokens());
        }
        double drafts = lane.draftTokensProposed() - drafts0;
        double passes = lane.verificationPasses() - passes0;
        double offMedian = median(off);
        double onMedian = median(on);
        System.out.printf("| %s | %s | %.1f | %.1f | %.2fx | %s | %s | %s |%n", workload, laneName, offMedian, onMedian,
                onMedian / offMedian, drafts == 0 ? "-" : String.format("%.2f", (lane.draftTokensAccepted() - accepted0)
                        / drafts), passes == 0 ? "-" : String.format("%.2f", (lane.verificationTokens() - emitted0)
                        / passes), identical ? "yes" : "NO");
        System.out.flush();
    }

    private record Result(int[][] tokens, double tokPerSec) {
    }

    /** The prompts one after another; decode speed = tokens after each first token / time after each first token. */
    private static Result run(Lane lane, int[][] prompts, int tokens, boolean speculative) {
        int[][] out = new int[prompts.length][];
        long decodeNanos = 0;
        long decoded = 0;
        for (int i = 0; i < prompts.length; i++) {
            SamplingParams p = new SamplingParams(0f, 0, 1f, 0f, null, 1f, 0f, 0f, java.util.Map.of(), tokens,
                    List.of(), true, -1);
            List<Integer> got = new ArrayList<>();
            long[] first = {0};
            lane.submit(new GenerationRequest(prompts[i], p).withSpeculative(speculative)).doOnNext(e -> {
                if (e instanceof GenerationEvent.Token t) {
                    if (first[0] == 0) {
                        first[0] = System.nanoTime();
                    }
                    got.add(t.tokenId());
                } else if (e instanceof GenerationEvent.Failed f) {
                    throw new IllegalStateException(f.message());
                }
            }).blockLast();
            decodeNanos += System.nanoTime() - first[0];
            decoded += got.size() - 1;
            out[i] = got.stream().mapToInt(Integer::intValue).toArray();
        }
        return new Result(out, decoded / (decodeNanos / 1e9));
    }

    private static double median(double[] x) {
        double[] s = x.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }
}
