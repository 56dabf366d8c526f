package io.tqserve.engine;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;

/**
 * Which prefilling sequences of the batched lane get their next prompt chunk in a step. Their chunk rows total at
 * most {@code prefillsPerStep × prefillChunk} (one chunk always goes in), taken shortest remaining prompt first, so
 * a short prompt admitted behind long ones is prefilled in the next step instead of after them. The oldest
 * prefilling sequence goes first when the last step passed it over, so it gets a chunk at least every second step:
 * no prompt starves. Every decoding sequence is in every step, so a running stream waits for at most that many
 * prompt rows per token. Which chunks a prompt is cut into does not change: {@code prefillChunk} tokens from where
 * its prefill starts, whoever shares the step. Used by the lane's thread only.
 */
final class PrefillSchedule {
    private final int prefillChunk;
    private final long rowsPerStep;
    private Sequence passedOver; // the oldest prefill, when the last step left it out

    PrefillSchedule(int prefillChunk, int prefillsPerStep) {
        this.prefillChunk = prefillChunk;
        this.rowsPerStep = (long) prefillsPerStep * prefillChunk;
    }

    /**
     * @param active the running sequences, oldest first
     * @param busy   sequences whose last step has not been read yet (a queued device step): none of this step
     */
    Set<Sequence> choose(List<Sequence> active, Set<Sequence> busy) {
        List<Sequence> waiting = new ArrayList<>();
        for (Sequence s : active) {
            if (s.inPrefill() && s.readyLogits == null && !s.done() && !busy.contains(s)) {
                waiting.add(s);
            }
        }
        Set<Sequence> chosen = Collections.newSetFromMap(new IdentityHashMap<>());
        if (waiting.isEmpty()) {
            passedOver = null;
            return chosen;
        }
        Sequence oldest = waiting.getFirst();
        List<Sequence> order = new ArrayList<>(waiting);
        order.sort(Comparator.comparingInt(s -> s.prompt.length - s.prefilled)); // stable: the older first on ties
        if (passedOver == oldest) {
            order.remove(oldest);
            order.addFirst(oldest);
        }
        long rows = 0;
        for (Sequence s : order) {
            int n = Math.min(prefillChunk, s.prompt.length - s.prefilled);
            if (chosen.isEmpty() || rows + n <= rowsPerStep) {
                chosen.add(s);
                rows += n;
            }
        }
        passedOver = chosen.contains(oldest) ? null : oldest;
        return chosen;
    }
}
