package io.tqserve.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class StopMatcherTest {

    @Test
    void stopStringSplitAcrossTokensIsNeverEmitted() {
        StopMatcher m = new StopMatcher(List.of("END"));
        StringBuilder out = new StringBuilder();
        for (String piece : List.of("hello E", "N", "D and more")) {
            out.append(m.feed(piece));
        }
        assertEquals("hello ", out.toString());
        assertTrue(m.stopped());
        assertEquals("", m.feed("later"));
    }

    @Test
    void heldBackTextIsReleasedWhenItTurnsOutNotToBeAStop() {
        StopMatcher m = new StopMatcher(List.of("END"));
        assertEquals("a", m.feed("aE"));
        assertEquals("EN", m.feed("NX").substring(0, 2));
        assertFalse(m.stopped());
    }

    @Test
    void flushReleasesAPartialMatchAtTheEnd() {
        StopMatcher m = new StopMatcher(List.of("###"));
        assertEquals("x", m.feed("x##"));
        assertEquals("##", m.flush());
    }

    @Test
    void earliestOfSeveralStopsWins() {
        StopMatcher m = new StopMatcher(List.of("cd", "b"));
        assertEquals("a", m.feed("abcd"));
        assertTrue(m.stopped());
    }

    @Test
    void noStopsPassesEverythingThrough() {
        StopMatcher m = new StopMatcher(List.of());
        assertEquals("abc", m.feed("abc"));
        assertEquals("", m.flush());
    }
}
