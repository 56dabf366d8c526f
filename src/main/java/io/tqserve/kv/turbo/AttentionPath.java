package io.tqserve.kv.turbo;

import java.util.Locale;

/**
 * How attention reads a TurboQuant cache. All three give the same result up to float32 rounding; they differ in
 * the memory they touch and the work they do per stored token.
 */
public enum AttentionPath {
    /**
     * Dequantize-on-fetch: decode the window's keys and values (values un-rotated per token) into float32, then
     * ordinary attention. The simple, obviously correct baseline.
     */
    DEQUANT,
    /**
     * As {@link #DEQUANT}, but values stay in the rotated domain: the weighted sum is un-rotated once per query row
     * (one inverse FWHT per row instead of one per token).
     */
    DEFERRED,
    /**
     * Fused: scores straight from the key codes with the per-group scale/zero algebra, values accumulated from
     * codes × centroid × scale in the rotated domain, one inverse FWHT per query row; no float copy of the window.
     */
    FUSED;

    /** Parses {@code dequant}, {@code deferred} or {@code fused} (any case). */
    public static AttentionPath parse(String s) {
        try {
            return valueOf(s.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("unknown attention path '" + s + "'; accepted: dequant, deferred, fused");
        }
    }
}
