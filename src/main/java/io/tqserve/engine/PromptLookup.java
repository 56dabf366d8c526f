package io.tqserve.engine;

/**
 * Prompt-lookup (n-gram) drafting, as vLLM's ngram speculator and transformers' {@code prompt_lookup_num_tokens}:
 * when the last n tokens of a sequence (prompt and output so far) occurred earlier in it, the tokens that followed
 * that earlier occurrence are proposed as the next ones. n goes from {@code maxNgram} down to {@code minNgram}; of
 * the occurrences of the longest matching n-gram, the most recent one wins. Where fewer tokens follow it than the
 * draft may hold (the occurrence is a few tokens back: the sequence repeats a short run, as a model in a loop or
 * writing a list does), the draft goes on as an overlapping copy, repeating that run: vLLM's ngram speculator and
 * transformers' stop at the history's end, so a loop of period P gets drafts of at most P tokens. The lane verifies a draft in one
 * forward pass and keeps only what sampling confirms, so a draft never changes the output, only how many passes
 * it takes.
 *
 * <p>Cost: one backwards scan of the history per n tried, at most {@code (maxNgram - minNgram + 1) · length}
 * token comparisons per decode step (the history is bounded by the model's context), with no allocation beyond
 * the returned draft.
 *
 * @param minNgram  shortest suffix looked up (at least 1)
 * @param maxNgram  longest suffix looked up
 * @param maxDraft  most tokens proposed at once
 */
public record PromptLookup(int minNgram, int maxNgram, int maxDraft) {
    /** Off: never proposes anything. */
    public static final PromptLookup OFF = new PromptLookup(1, 1, 0);

    public PromptLookup {
        if (minNgram < 1 || maxNgram < minNgram || maxDraft < 0) {
            throw new IllegalArgumentException("prompt lookup needs 1 <= min-ngram <= max-ngram and max-draft >= 0"
                    + " (got " + minNgram + ", " + maxNgram + ", " + maxDraft + ")");
        }
    }

    public boolean enabled() {
        return maxDraft > 0;
    }

    /**
     * Writes into {@code draft} up to {@code limit} tokens that followed the most recent earlier occurrence of the
     * longest suffix of {@code history[0, length)} of {@code minNgram..maxNgram} tokens, and returns how many.
     */
    public int propose(int[] history, int length, int[] draft, int limit) {
        int want = Math.min(Math.min(limit, maxDraft), draft.length);
        if (want <= 0) {
            return 0;
        }
        for (int n = Math.min(maxNgram, length - 1); n >= minNgram; n--) {
            int suffix = length - n;
            // candidate starts: the n-gram at [start, start+n) must end before the suffix starts to propose anything
            for (int start = suffix - 1; start >= 0; start--) {
                if (matches(history, start, suffix, n)) {
                    // the tokens after the occurrence, up to the history's end and on past it as an overlapping
                    // copy does (LZ77's): where the occurrence is a period back, the period repeats
                    int from = start + n;
                    int period = length - from;
                    for (int i = 0; i < want; i++) {
                        draft[i] = i < period ? history[from + i] : draft[i - period];
                    }
                    return want;
                }
            }
        }
        return 0;
    }

    private static boolean matches(int[] h, int a, int b, int n) {
        for (int i = n - 1; i >= 0; i--) { // the last token differs most often
            if (h[a + i] != h[b + i]) {
                return false;
            }
        }
        return true;
    }
}
