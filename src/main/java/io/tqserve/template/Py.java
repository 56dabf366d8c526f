package io.tqserve.template;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Python's value semantics over the engine's values: None is {@code null}, bool {@link Boolean}, int {@link Long},
 * float {@link Double}, str {@link String}, list {@link List} (a {@link Tuple} prints as a tuple), dict
 * {@link Map}, plus {@link Undefined}, {@link Namespace} and {@link PyCallable}. Truth, {@code str()},
 * {@code repr()}, equality, ordering, arithmetic and indexing behave as CPython's do.
 */
final class Py {
    private Py() {
    }

    // ---- truth, str, repr ----

    static boolean truthy(Object v) {
        return switch (v) {
            case null -> false;
            case Boolean b -> b;
            case Long l -> l != 0;
            case Double d -> d != 0;
            case String s -> !s.isEmpty();
            case Markup m -> !m.text().isEmpty();
            case Collection<?> c -> !c.isEmpty();
            case Map<?, ?> m -> !m.isEmpty();
            case Undefined u -> false;
            case PyIterator it -> !it.isView() || it.size() > 0;
            default -> true;
        };
    }

    static String str(Object v) {
        return switch (v) {
            case String s -> s;
            case null -> "None";
            case Boolean b -> b ? "True" : "False";
            case Long l -> l.toString();
            case Double d -> PyText.floatRepr(d);
            case Undefined u -> "";
            case Markup m -> m.text();
            default -> repr(v);
        };
    }

    static String repr(Object v) {
        return switch (v) {
            case String s -> PyText.strRepr(s);
            case Markup m -> "Markup(" + PyText.strRepr(m.text()) + ")";
            case Tuple t -> {
                StringBuilder b = new StringBuilder("(");
                for (int i = 0; i < t.size(); i++) {
                    b.append(i > 0 ? ", " : "").append(repr(t.get(i)));
                }
                yield b.append(t.size() == 1 ? ",)" : ")").toString();
            }
            case List<?> l -> {
                StringBuilder b = new StringBuilder("[");
                for (int i = 0; i < l.size(); i++) {
                    b.append(i > 0 ? ", " : "").append(repr(l.get(i)));
                }
                yield b.append(']').toString();
            }
            case Map<?, ?> m -> {
                StringBuilder b = new StringBuilder("{");
                boolean first = true;
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    b.append(first ? "" : ", ").append(repr(e.getKey())).append(": ").append(repr(e.getValue()));
                    first = false;
                }
                yield b.append('}').toString();
            }
            case Undefined u -> "Undefined";
            case PyIterator it -> it.toString();
            case PyCallable f -> "<function>";
            case null, default -> str(v);
        };
    }

    /** Python's type name: {@code NoneType}, {@code bool}, {@code int}, {@code str}, {@code dict}, ... */
    static String typeName(Object v) {
        return switch (v) {
            case null -> "NoneType";
            case Boolean b -> "bool";
            case Long l -> "int";
            case Double d -> "float";
            case String s -> "str";
            case Markup m -> "Markup";
            case Tuple t -> "tuple";
            case List<?> l -> "list";
            case Map<?, ?> m -> "dict";
            case Undefined u -> "Undefined";
            case Namespace n -> "Namespace";
            case LoopContext c -> "LoopContext";
            case PyIterator it -> it.typeName;
            case PyCallable f -> "function";
            default -> v.getClass().getSimpleName();
        };
    }

    /** Jinja2's object_type_repr: {@code None}, else {@code "dict object"}. */
    static String objectTypeRepr(Object v) {
        return v == null ? "None" : typeName(v) + " object";
    }

    // ---- equality and ordering ----

    static boolean isNumber(Object v) {
        return v instanceof Long || v instanceof Double || v instanceof Boolean;
    }

    static double num(Object v) {
        return v instanceof Boolean b ? (b ? 1 : 0) : ((Number) v).doubleValue();
    }

    private static boolean isIntLike(Object v) {
        return v instanceof Long || v instanceof Boolean;
    }

    static long integer(Object v) {
        return v instanceof Boolean b ? (b ? 1 : 0) : ((Number) v).longValue();
    }

    static boolean eq(Object a, Object b) {
        if (a == b) {
            return true;
        }
        if (a instanceof Markup m) {
            return eq(m.text(), b);
        }
        if (b instanceof Markup m) {
            return eq(a, m.text());
        }
        if (isNumber(a) && isNumber(b)) {
            return isIntLike(a) && isIntLike(b) ? integer(a) == integer(b) : num(a) == num(b);
        }
        if (a instanceof List<?> x && b instanceof List<?> y) {
            if ((a instanceof Tuple) != (b instanceof Tuple) || x.size() != y.size()) {
                return false;
            }
            for (int i = 0; i < x.size(); i++) {
                if (!eq(x.get(i), y.get(i))) {
                    return false;
                }
            }
            return true;
        }
        if (a instanceof Map<?, ?> x && b instanceof Map<?, ?> y) {
            if (x.size() != y.size()) {
                return false;
            }
            for (Map.Entry<?, ?> e : x.entrySet()) {
                if (!y.containsKey(e.getKey()) || !eq(e.getValue(), y.get(e.getKey()))) {
                    return false;
                }
            }
            return true;
        }
        return Objects.equals(a, b);
    }

    /** Python's ordering (&lt;, &gt;, ...); TypeError for unorderable types, as CPython. */
    static int compare(Object a, Object b, String op) {
        if (a instanceof Markup m) {
            return compare(m.text(), b, op);
        }
        if (b instanceof Markup m) {
            return compare(a, m.text(), op);
        }
        if (isNumber(a) && isNumber(b)) {
            return isIntLike(a) && isIntLike(b) ? Long.compare(integer(a), integer(b)) : Double.compare(num(a), num(b));
        }
        if (a instanceof String x && b instanceof String y) {
            return PyText.compareCodePoints(x, y);
        }
        if (a instanceof List<?> x && b instanceof List<?> y && (a instanceof Tuple) == (b instanceof Tuple)) {
            for (int i = 0; i < Math.min(x.size(), y.size()); i++) {
                if (!eq(x.get(i), y.get(i))) {
                    return compare(x.get(i), y.get(i), op);
                }
            }
            return Integer.compare(x.size(), y.size());
        }
        if (a instanceof Undefined u) {
            throw u.fail();
        }
        if (b instanceof Undefined u) {
            throw u.fail();
        }
        throw RenderException.type("'" + op + "' not supported between instances of '" + typeName(a) + "' and '"
                + typeName(b) + "'");
    }

    // ---- containers ----

    static int len(Object v) {
        return switch (v) {
            case String s -> s.codePointCount(0, s.length());
            case Markup m -> len(m.text());
            case Collection<?> c -> c.size();
            case Map<?, ?> m -> m.size();
            case Undefined u -> 0;
            case PyIterator it when it.isView() -> it.size();
            case Namespace n -> throw RenderException.type("object of type 'Namespace' has no len()");
            case null, default -> throw RenderException.type("object of type '" + typeName(v) + "' has no len()");
        };
    }

    /** Iterates as Python's {@code iter()}: strings by character, dicts by key, undefined as empty. */
    static List<Object> iterate(Object v) {
        return switch (v) {
            case List<?> l -> {
                @SuppressWarnings("unchecked")
                List<Object> list = (List<Object>) l;
                yield list;
            }
            case Map<?, ?> m -> new ArrayList<>(m.keySet());
            case String s -> {
                List<Object> chars = new ArrayList<>(s.length());
                s.codePoints().forEach(cp -> chars.add(Character.toString(cp)));
                yield chars;
            }
            case Collection<?> c -> new ArrayList<>(c);
            case Undefined u -> List.of();
            case PyIterator it -> it.iterate();
            case Markup m -> iterate(m.text());
            case null, default -> throw RenderException.type("'" + typeName(v) + "' object is not iterable");
        };
    }

    static boolean contains(Object container, Object item) {
        switch (container) {
            case String s -> {
                if (!(item instanceof String sub)) {
                    throw RenderException.type("'in <string>' requires string as left operand, not "
                            + typeName(item));
                }
                return s.contains(sub);
            }
            case Map<?, ?> m -> {
                return m.containsKey(item) || (item instanceof Long l && m.containsKey(l.doubleValue()));
            }
            case Undefined u -> {
                return false;
            }
            case PyIterator it -> {
                return contains(it.iterate(), item);
            }
            case Markup m -> {
                return contains(m.text(), item instanceof Markup x ? x.text() : item);
            }
            case Collection<?> c -> {
                for (Object o : c) {
                    if (eq(o, item)) {
                        return true;
                    }
                }
                return false;
            }
            case null, default -> throw RenderException.type("argument of type '" + typeName(container)
                    + "' is not iterable");
        }
    }

    /** {@code obj[key]} in Python: a value, or null-safe {@link #MISSING} when there is no such item. */
    static Object item(Object obj, Object key) {
        switch (obj) {
            case Map<?, ?> m -> {
                if (m.containsKey(key)) {
                    return m.get(key);
                }
                if (key instanceof Boolean || key instanceof Double) {
                    Object k = key instanceof Boolean b ? (Object) (b ? 1L : 0L) : key;
                    return m.containsKey(k) ? m.get(k) : MISSING;
                }
                return MISSING;
            }
            case List<?> l when isIntLike(key) -> {
                long i = integer(key);
                long at = i < 0 ? i + l.size() : i;
                return at >= 0 && at < l.size() ? l.get((int) at) : MISSING;
            }
            case String s when isIntLike(key) -> {
                int[] cps = s.codePoints().toArray();
                long i = integer(key);
                long at = i < 0 ? i + cps.length : i;
                return at >= 0 && at < cps.length ? Character.toString(cps[(int) at]) : MISSING;
            }
            case Markup mk -> {
                return item(mk.text(), key);
            }
            case null, default -> {
                return MISSING;
            }
        }
    }

    /** Marks a missing item/attribute (distinct from None). */
    static final Object MISSING = new Object();

    /** {@code obj[start:stop:step]} of a list, tuple or string. */
    static Object slice(Object obj, Object start, Object stop, Object step) {
        long st = step == null ? 1 : integer(step);
        if (st == 0) {
            throw RenderException.value("slice step cannot be zero");
        }
        List<Object> items;
        if (obj instanceof Markup m) {
            return slice(m.text(), start, stop, step);
        }
        if (obj instanceof String s) {
            items = iterate(s);
        } else if (obj instanceof List<?> l) {
            items = iterate(l);
        } else if (obj instanceof Undefined u) {
            throw u.fail();
        } else {
            throw RenderException.type("'" + typeName(obj) + "' object is not subscriptable");
        }
        int n = items.size();
        long lo;
        long hi;
        if (st > 0) {
            lo = start == null ? 0 : clamp(integer(start), n, 0, n);
            hi = stop == null ? n : clamp(integer(stop), n, 0, n);
        } else {
            lo = start == null ? n - 1 : clamp(integer(start), n, -1, n - 1);
            hi = stop == null ? -1 : clamp(integer(stop), n, -1, n - 1);
        }
        List<Object> out = new ArrayList<>();
        for (long i = lo; st > 0 ? i < hi : i > hi; i += st) {
            out.add(items.get((int) i));
        }
        if (obj instanceof String) {
            StringBuilder b = new StringBuilder();
            out.forEach(c -> b.append((String) c));
            return b.toString();
        }
        return obj instanceof Tuple ? Tuple.of(out) : out;
    }

    private static long clamp(long i, int n, long min, long max) {
        long v = i < 0 ? i + n : i;
        return Math.max(min, Math.min(max, v));
    }

    static Iterator<Object> iterator(Object v) {
        return iterate(v).iterator();
    }

    // ---- whitespace helpers used by the lexer ----

    static boolean isSpace(int c) {
        return PyText.isSpace(c);
    }

    static boolean isSpaceRun(String s, int from) {
        for (int i = from; i < s.length(); i++) {
            if (!PyText.isSpace(s.charAt(i))) {
                return false;
            }
        }
        return true;
    }

    static String rstrip(String s, String chars) {
        return PyText.strip(s, chars, false, true);
    }

    static String unescape(String body) {
        return PyText.unescape(body);
    }
}
