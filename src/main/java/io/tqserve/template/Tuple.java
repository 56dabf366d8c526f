package io.tqserve.template;

import java.util.AbstractList;
import java.util.List;

/** A Python tuple: an immutable list that prints as {@code (a, b)} ({@code dict.items()}, {@code (1, 2)}). */
final class Tuple extends AbstractList<Object> {
    private final Object[] items;

    Tuple(Object... items) {
        this.items = items;
    }

    static Tuple of(List<?> items) {
        return new Tuple(items.toArray());
    }

    @Override
    public Object get(int index) {
        return items[index];
    }

    @Override
    public int size() {
        return items.length;
    }
}
