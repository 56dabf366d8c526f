package io.tqserve.template;

import java.util.List;

/**
 * A Python iterable that is not a list: a generator ({@code map}, {@code select}, {@code selectattr},
 * {@code unique}, ... return one in Jinja2), a {@code list_reverseiterator}, or a dict view
 * ({@code dict.items()}). A generator is always true, has no {@code len()}, cannot be indexed or serialised by
 * {@code tojson}, and is used up by its first iteration, exactly as in Python.
 */
final class PyIterator {
    final String typeName;
    private final List<Object> items;
    private final boolean view;
    private boolean consumed;

    private PyIterator(String typeName, List<Object> items, boolean view) {
        this.typeName = typeName;
        this.items = items;
        this.view = view;
    }

    static PyIterator generator(List<Object> items) {
        return new PyIterator("generator", items, false);
    }

    static PyIterator reversed(List<Object> items) {
        return new PyIterator("list_reverseiterator", items, false);
    }

    /** {@code dict_items}, {@code dict_keys}, {@code dict_values}: sized, re-iterable. */
    static PyIterator view(String typeName, List<Object> items) {
        return new PyIterator(typeName, items, true);
    }

    boolean isView() {
        return view;
    }

    int size() {
        return items.size();
    }

    List<Object> iterate() {
        if (view) {
            return items;
        }
        if (consumed) {
            return List.of();
        }
        consumed = true;
        return items;
    }

    @Override
    public String toString() {
        return view ? typeName + "(" + Py.repr(items) + ")" : "<" + typeName + " object>";
    }
}
