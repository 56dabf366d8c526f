package io.tqserve.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

class PromptLookupTest {
    static int[] propose(PromptLookup l, int[] history, int limit) {
        int[] draft = new int[16];
        int n = l.propose(history, history.length, draft, limit);
        return Arrays.copyOf(draft, n);
    }

    @Test
    void theLongestSuffixThenTheMostRecentOccurrenceWins() {
        PromptLookup l = new PromptLookup(1, 3, 4);
        // "1 2 3" occurs at 0 and the suffix is "2 3" -> after the 3-gram? suffix 3-gram "9 2 3" never occurred;
        // the 2-gram "2 3" occurred at 1 (followed by 4 5 6 7) and at 6 (followed by 8): the most recent wins
        int[] h = {1, 2, 3, 4, 5, 6, 2, 3, 8, 9, 2, 3};
        assertArrayEquals(new int[] {8, 9, 2, 3}, propose(l, h, 8));
        // a 3-gram match beats a more recent 2-gram match
        int[] g = {7, 2, 3, 4, 4, 2, 3, 5, 7, 2, 3};
        assertArrayEquals(new int[] {4, 4, 2, 3}, propose(l, g, 8));
    }

    @Test
    void draftsStopAtTheLimitsAndTheHistory() {
        PromptLookup l = new PromptLookup(2, 2, 8);
        int[] h = {5, 6, 7, 5, 6};
        assertArrayEquals(new int[] {7, 5}, propose(l, h, 2));
        assertArrayEquals(new int[] {7, 5, 6, 7, 5, 6, 7, 5}, propose(l, h, 10),
                "past the history's end the run repeats (period 3), up to max-draft");
        assertArrayEquals(new int[] {7, 5, 6, 7}, propose(l, h, 4));
        assertEquals(0, propose(l, new int[] {1, 2, 3, 4}, 8).length, "nothing recurs");
        assertEquals(0, propose(new PromptLookup(2, 2, 8), new int[] {3, 5, 3}, 8).length, "1-gram only: below min");
        assertEquals(0, propose(PromptLookup.OFF, h, 8).length);
    }

    @Test
    void repeatedRunsOverlapTheirSuffix() {
        assertArrayEquals(new int[] {9, 9}, propose(new PromptLookup(2, 2, 2), new int[] {9, 9, 9, 9}, 8),
                "the most recent occurrence, though it overlaps the suffix, and its run repeated");
        // "a b c" loops with period 3: the 3-gram suffix recurs 3 back, one token follows it in the history
        assertArrayEquals(new int[] {1, 2, 3, 1, 2, 3},
                propose(new PromptLookup(2, 3, 6), new int[] {4, 1, 2, 3, 1, 2, 3, 1, 2, 3}, 6));
        // a far occurrence is copied as it stands
        assertArrayEquals(new int[] {5, 6, 7}, propose(new PromptLookup(2, 2, 3), new int[] {1, 2, 5, 6, 7, 8, 1, 2}, 8));
    }

    @Test
    void badSettingsAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> new PromptLookup(0, 2, 4));
        assertThrows(IllegalArgumentException.class, () -> new PromptLookup(3, 2, 4));
        assertThrows(IllegalArgumentException.class, () -> new PromptLookup(1, 2, -1));
    }
}
