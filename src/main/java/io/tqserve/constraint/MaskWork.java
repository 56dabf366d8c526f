package io.tqserve.constraint;

import io.tqserve.constraint.Parser.Config;

/**
 * Work meter and memo of one mask computation: the configurations after a byte, their first bytes and their
 * closing bound, per configuration array (by identity). The exits of a lexeme all continue from the same
 * configurations, so their subtries share these steps instead of repeating them. The memo is one open-addressed
 * table keyed by (array, slot) that allocates nothing per entry: most arrays of a walk are stepped once, and a
 * 256-entry row per array would cost more than the step.
 */
final class MaskWork {
    private static final int FIRST = 256;
    private static final int BOUND = 257;
    final MaskBudget budget;
    private final Parser parser;
    private final Closing closing;
    private Object[] keys = new Object[256];
    private int[] slots = new int[256];
    private Object[] values = new Object[256];
    private int size;
    private final java.util.Map<Configs, Configs> canonical = new java.util.HashMap<>();
    int[] nodeStack = new int[64];
    Config[][] cfgStack = new Config[64][];

    MaskWork(Parser parser, Closing closing, MaskBudget budget) {
        this.parser = parser;
        this.closing = closing;
        this.budget = budget;
    }

    private int index(Object key, int slot) {
        int h = System.identityHashCode(key) * 0x9E3779B9 + slot * 0x85EBCA6B;
        return (h ^ (h >>> 15)) & (keys.length - 1);
    }

    private Object get(Object key, int slot) {
        for (int i = index(key, slot);; i = (i + 1) & (keys.length - 1)) {
            Object k = keys[i];
            if (k == null) {
                return null;
            }
            if (k == key && slots[i] == slot) {
                return values[i];
            }
        }
    }

    private void put(Object key, int slot, Object value) {
        if (2 * (size + 1) > keys.length) {
            Object[] ok = keys;
            int[] os = slots;
            Object[] ov = values;
            keys = new Object[ok.length * 2];
            slots = new int[ok.length * 2];
            values = new Object[ok.length * 2];
            size = 0;
            for (int i = 0; i < ok.length; i++) {
                if (ok[i] != null) {
                    put(ok[i], os[i], ov[i]);
                }
            }
        }
        int i = index(key, slot);
        while (keys[i] != null) {
            i = (i + 1) & (keys.length - 1);
        }
        keys[i] = key;
        slots[i] = slot;
        values[i] = value;
        size++;
    }

    Config[] step(Config[] cs, int b) {
        Config[] r = (Config[]) get(cs, b);
        if (r == null) {
            budget.add(2L * cs.length + 1);
            r = intern(parser.step(cs, b));
            put(cs, b, r);
        }
        return r;
    }

    /**
     * The one array of the walk equal to {@code cs}: different bytes often lead to equal configurations (the
     * characters of a string, the digits of a number), and the memo is by identity, so an equal array found
     * again reuses its steps, first bytes and closing bound instead of recomputing them.
     */
    private Config[] intern(Config[] cs) {
        if (cs.length == 0) {
            return cs;
        }
        Configs key = new Configs(cs);
        Configs had = canonical.putIfAbsent(key, key);
        return had == null ? cs : had.cs();
    }

    long[] first(Config[] cs) {
        long[] f = (long[]) get(cs, FIRST);
        if (f == null) {
            budget.add(cs.length);
            f = new long[4];
            for (Config c : cs) {
                parser.first(c, f);
            }
            put(cs, FIRST, f);
        }
        return f;
    }

    int bound(Config[] cs) {
        Integer b = (Integer) get(cs, BOUND);
        if (b == null) {
            budget.add(cs.length);
            b = closing.bound(cs);
            put(cs, BOUND, b);
        }
        return b;
    }

    void add(long k) {
        budget.add(k);
    }

    /** A configuration array compared by content (the memo of {@link MaskWork} compares by identity). */
    private record Configs(Config[] cs) {
        @Override
        public boolean equals(Object o) {
            return o instanceof Configs c && java.util.Arrays.equals(cs, c.cs);
        }

        @Override
        public int hashCode() {
            return java.util.Arrays.hashCode(cs);
        }
    }
}
