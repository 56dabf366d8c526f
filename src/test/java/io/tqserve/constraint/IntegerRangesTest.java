package io.tqserve.constraint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dk.brics.automaton.Automaton;
import dk.brics.automaton.RegExp;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Integer ranges against two oracles: arithmetic (the texts of values at and around both bounds, and of random
 * values, accepted exactly when the value is in the range, with or without a leading zero or {@code -0}), and the
 * regular expression of digit ranges that built them before (kept here as the reference: dk.brics' own {@code
 * makeMinInteger} rejects {@code 10} as at least {@code 9}), the same language; and no state more than the minimal
 * automaton.
 */
class IntegerRangesTest {
    private static Automaton reference(long lo, long hi) {
        StringBuilder re = new StringBuilder();
        if (hi >= 0) {
            naturals(Math.max(lo, 0), hi, re);
        }
        if (lo < 0) {
            StringBuilder neg = new StringBuilder();
            naturals(Math.max(1, -Math.min(hi, -1)), -lo, neg);
            if (!re.isEmpty()) {
                re.append('|');
            }
            re.append("-(").append(neg).append(')');
        }
        return new RegExp(re.toString(), RegExp.NONE).toAutomaton();
    }

    private static void naturals(long a, long b, StringBuilder re) {
        String sa = Long.toString(a);
        String sb = Long.toString(b);
        boolean first = true;
        for (int len = sa.length(); len <= sb.length(); len++) {
            long from = len == sa.length() ? a : pow10(len - 1);
            long to = len == sb.length() ? b : pow10(len) - 1;
            if (from > to) {
                continue;
            }
            if (!first) {
                re.append('|');
            }
            first = false;
            re.append('(');
            sameLength(Long.toString(from), Long.toString(to), re);
            re.append(')');
        }
    }
    private static long pow10(int n) {
        long p = 1;
        for (int i = 0; i < n; i++) {
            p *= 10;
        }
        return p;
    }
    private static void sameLength(String x, String y, StringBuilder re) {
        int n = x.length();
        if (n == 0) {
            return;
        }
        if (x.chars().allMatch(c -> c == '0') && y.chars().allMatch(c -> c == '9')) {
            re.append("[0-9]{").append(n).append('}');
            return;
        }
        char x0 = x.charAt(0);
        char y0 = y.charAt(0);
        if (n == 1) {
            re.append('[').append(x0).append('-').append(y0).append(']');
            return;
        }
        if (x0 == y0) {
            re.append(x0).append('(');
            sameLength(x.substring(1), y.substring(1), re);
            re.append(')');
            return;
        }
        re.append('(').append(x0).append('(');
        sameLength(x.substring(1), "9".repeat(n - 1), re);
        re.append("))");
        if (x0 + 1 <= y0 - 1) {
            re.append("|([").append((char) (x0 + 1)).append('-').append((char) (y0 - 1)).append("][0-9]{")
                    .append(n - 1).append("})");
        }
        re.append("|(").append(y0).append('(');
        sameLength("0".repeat(n - 1), y.substring(1), re);
        re.append("))");
    }

    private static void check(long lo, long hi, SplittableRandom rnd) {
        Automaton a = IntegerRanges.of(lo, hi);
        assertThat(a.isDeterministic()).isTrue();
        List<Long> values = new ArrayList<>(List.of(0L, 1L, -1L, lo, hi));
        for (long d = 1; d <= 2; d++) {
            values.addAll(List.of(lo - d, lo + d, hi - d, hi + d));
        }
        for (int i = 0; i < 20; i++) {
            values.add(lo + (long) (rnd.nextDouble() * ((double) hi - lo)));
            values.add(randomValue(rnd));
        }
        for (long v : values) {
            boolean in = v >= lo && v <= hi;
            assertThat(a.run(Long.toString(v))).as("%d in [%d, %d]", v, lo, hi).isEqualTo(in);
            if (v != 0) {
                String abs = Long.toString(Math.abs(v));
                assertThat(a.run((v < 0 ? "-0" : "0") + abs)).as("leading zero %d", v).isFalse();
            }
        }
        assertThat(a.run("-0")).isFalse();
        assertThat(a.equals(reference(lo, hi))).as("[%d, %d]", lo, hi).isTrue(); // dk.brics: the same language
        Automaton min = a.clone();
        min.minimize();
        assertThat(a.getNumberOfStates()).as("states of [%d, %d]", lo, hi).isEqualTo(min.getNumberOfStates());
    }

    @Test
    void smallRangesAcceptExactlyTheirIntegers() {
        var a = IntegerRanges.of(-12, 105);
        for (int v = -300; v <= 1300; v++) {
            assertThat(a.run(Integer.toString(v))).as("%d", v).isEqualTo(v >= -12 && v <= 105);
        }
        for (String s : List.of("", "-", "007", "-0", "00", "+1", "1-", "--1", "01")) {
            assertThat(a.run(s)).as(s).isFalse();
        }
        assertThat(IntegerRanges.of(0, 0).run("0")).isTrue();
        assertThat(IntegerRanges.of(0, 0).run("-0")).isFalse();
        assertThat(IntegerRanges.of(-5, -5).run("-5")).isTrue();
        assertThat(IntegerRanges.of(-5, -5).run("5")).isFalse();
    }

    @Test
    void edgeRangesMatchTheOracle() {
        long big = 999_999_999_999_999L;
        long[][] ranges = {{0, 0}, {0, 9}, {1, 9}, {0, 10}, {9, 10}, {10, 99}, {-9, 19}, {-19, 19}, {-19, 9},
            {-1, 0}, {-1, -1}, {-10, -1}, {-100, -10}, {11, 19}, {100, 100}, {99, 1000}, {123, 4567}, {-big, big},
            {0, big}, {-big, -1}, {Integer.MIN_VALUE, Integer.MAX_VALUE}, {0, Integer.MAX_VALUE},
            {1, 999_999_999_999_999_999L}, {-999_999_999_999_999_999L, 999_999_999_999_999_999L}, {1000, 1999}, {1900, 2100}, {-5, 5}};
        for (long[] r : ranges) {
            check(r[0], r[1], new SplittableRandom(r[0] ^ r[1]));
        }
    }

    @Test
    void randomRangesMatchTheOracle() {
        SplittableRandom rnd = new SplittableRandom(29);
        List<long[]> ranges = new ArrayList<>();
        for (int i = 0; i < 120; i++) {
            long x = randomValue(rnd);
            long y = randomValue(rnd);
            ranges.add(new long[] {Math.min(x, y), Math.max(x, y)});
        }
        for (long[] r : ranges) {
            check(r[0], r[1], rnd);
        }
    }

    /** Values of every digit count, signs mixed, digits often repeated (nines, zeros: the splits' edges). */
    private static long randomValue(SplittableRandom rnd) {
        int digits = 1 + rnd.nextInt(15);
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < digits; i++) {
            int kind = rnd.nextInt(4);
            sb.append(kind == 0 ? '0' : kind == 1 ? '9' : (char) ('0' + rnd.nextInt(10)));
        }
        long v = Long.parseLong(sb.toString());
        return rnd.nextBoolean() ? -v : v;
    }

    @Test
    void anEmptyRangeIsRefused() {
        assertThatThrownBy(() -> IntegerRanges.of(5, 4)).isInstanceOf(IllegalArgumentException.class);
    }
}
