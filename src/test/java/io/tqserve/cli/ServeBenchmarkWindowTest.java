package io.tqserve.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The rate bench serve prints: tokens inside the window in which every stream decodes, per second. */
class ServeBenchmarkWindowTest {

    @Test
    void countsOnlyTheTokensWhileEveryStreamDecodes() {
        // stream a: tokens at 0, 1, 2, 3 s; stream b starts at 1 s and ends at 4 s: window (1 s, 3 s]
        long s = 1_000_000_000L;
        double rate = ServeBenchmark.windowRate(List.of(new long[] {0, s, 2 * s, 3 * s},
                new long[] {s, 2 * s, 3 * s, 4 * s}));
        assertEquals(4 / 2.0, rate, 1e-9); // a: 2 s, 3 s; b: 2 s, 3 s
    }

    /** A stream with fewer than two timed tokens has no interval: an error saying so, not NaN (or a division by zero). */
    @Test
    void aStreamWithoutTwoTimedTokensIsAnErrorNotNaN() {
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> ServeBenchmark.windowRate(List.of(new long[] {5})));
        assertTrue(e.getMessage().contains("1 timed tokens"), e.getMessage());
        assertThrows(IllegalStateException.class, () -> ServeBenchmark.windowRate(List.of(new long[0])));
    }
}
