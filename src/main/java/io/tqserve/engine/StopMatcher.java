package io.tqserve.engine;

import java.util.List;

/**
 * Finds stop strings in streamed text. Text that could be the start of a stop string is held back until it is
 * known not to be one; the stop string itself and everything after it is never released.
 */
public final class StopMatcher {
    private final List<String> stops;
    private final int longest;
    private final StringBuilder held = new StringBuilder();
    private boolean stopped;
    private String matched;

    public StopMatcher(List<String> stops) {
        this.stops = stops.stream().filter(s -> !s.isEmpty()).toList();
        this.longest = this.stops.stream().mapToInt(String::length).max().orElse(0);
    }

    /** Adds decoded text; returns what may be emitted now (possibly ""). After a stop, returns "". */
    public String feed(String text) {
        if (stopped) {
            return "";
        }
        held.append(text);
        if (stops.isEmpty()) {
            String out = held.toString();
            held.setLength(0);
            return out;
        }
        int cut = Integer.MAX_VALUE;
        for (String s : stops) {
            int at = held.indexOf(s);
            if (at >= 0 && at < cut) {
                cut = at;
                matched = s;
            }
        }
        if (cut != Integer.MAX_VALUE) {
            stopped = true;
            String out = held.substring(0, cut);
            held.setLength(0);
            return out;
        }
        // Keep the longest suffix that is a proper prefix of some stop string.
        int keep = 0;
        int maxKeep = Math.min(longest - 1, held.length());
        for (int k = maxKeep; k > 0; k--) {
            String suffix = held.substring(held.length() - k);
            if (stops.stream().anyMatch(s -> s.startsWith(suffix))) {
                keep = k;
                break;
            }
        }
        // never split a surrogate pair
        if (keep < held.length() && keep > 0 && Character.isLowSurrogate(held.charAt(held.length() - keep))) {
            keep++;
        }
        String out = held.substring(0, held.length() - keep);
        held.delete(0, held.length() - keep);
        return out;
    }

    /** True once a stop string was seen. */
    public boolean stopped() {
        return stopped;
    }

    /** The stop string that ended the text (the first given of those starting earliest), or null. */
    public String matched() {
        return matched;
    }

    /** At the end of generation without a stop: the held-back text is released. */
    public String flush() {
        if (stopped) {
            return "";
        }
        String out = held.toString();
        held.setLength(0);
        return out;
    }
}
