package io.tqserve.template;

import java.util.List;

/** Jinja2's {@code loop} variable of a for loop. */
final class LoopContext {
    private final List<Object> items;
    private final int depth;
    int index0;
    private Object lastChanged = Py.MISSING;

    LoopContext(List<Object> items, int depth) {
        this.items = items;
        this.depth = depth;
    }

    /** {@code loop.<name>}, or {@link Py#MISSING}. */
    Object attribute(String name) {
        int n = items.size();
        return switch (name) {
            case "index" -> (long) index0 + 1;
            case "index0" -> (long) index0;
            case "revindex" -> (long) (n - index0);
            case "revindex0" -> (long) (n - index0 - 1);
            case "first" -> index0 == 0;
            case "last" -> index0 == n - 1;
            case "length" -> (long) n;
            case "depth" -> (long) depth;
            case "depth0" -> (long) depth - 1;
            case "previtem" -> index0 > 0 ? items.get(index0 - 1)
                    : Undefined.plain("there is no previous item");
            case "nextitem" -> index0 + 1 < n ? items.get(index0 + 1) : Undefined.plain("there is no next item");
            case "cycle" -> (PyCallable) (args, kwargs) -> {
                if (args.isEmpty()) {
                    throw RenderException.type("no items for cycling given");
                }
                return args.get(index0 % args.size());
            };
            case "changed" -> (PyCallable) (args, kwargs) -> {
                Object value = new java.util.ArrayList<>(args);
                if (!Py.eq(value, lastChanged)) {
                    lastChanged = value;
                    return true;
                }
                return false;
            };
            default -> Py.MISSING;
        };
    }
}
