package io.tqserve.template;

import io.tqserve.template.Evaluator.Arguments;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Jinja2's built-in filters (as of 3.1) that chat templates use, with transformers' {@code tojson}. */
final class Filters {
    @FunctionalInterface
    private interface Filter {
        Object apply(Object value, Arguments a, Evaluator ev);
    }

    private static final Map<String, Filter> FILTERS = new HashMap<>();
    private static final Pattern WORD_BEGINNING = Pattern.compile("([-\\s({\\[<]+)");
    private static final Pattern WORD = Pattern.compile("\\w+", Pattern.UNICODE_CHARACTER_CLASS);

    static {
        FILTERS.put("abs", (v, a, e) -> v instanceof Double d ? (Object) Math.abs(d) : (Object) Math.abs(Py.integer(v)));
        FILTERS.put("attr", (v, a, e) -> {
            Object r = v instanceof Map<?, ?> ? Methods.lookup(v, (String) a.get(0, "name", null))
                    : Evaluator.getattr(v, (String) a.get(0, "name", null));
            return r == null ? Undefined.member(v, a.get(0, "name", null)) : r;
        });
        FILTERS.put("capitalize", (v, a, e) -> PyText.capitalize(Py.str(v)));
        FILTERS.put("center", (v, a, e) -> Methods.lookup(Py.str(v), "center") instanceof PyCallable c
                ? c.call(List.of(a.get(0, "width", 80L)), Map.of()) : v);
        FILTERS.put("default", (v, a, e) -> v instanceof Undefined
                || (Py.truthy(a.get(1, "boolean", false)) && !Py.truthy(v)) ? a.get(0, "default_value", "") : v);
        FILTERS.put("d", FILTERS.get("default"));
        FILTERS.put("dictsort", Filters::dictsort);
        FILTERS.put("escape", (v, a, e) -> Markup.escape(v));
        FILTERS.put("e", FILTERS.get("escape"));
        FILTERS.put("forceescape", (v, a, e) -> new Markup(escape(Py.str(v))));
        FILTERS.put("first", (v, a, e) -> {
            List<Object> items = Py.iterate(v);
            return items.isEmpty() ? Undefined.plain("No first item, sequence was empty.") : items.getFirst();
        });
        FILTERS.put("last", (v, a, e) -> {
            if (v instanceof PyIterator it && !it.isView()) {
                throw RenderException.type("'" + it.typeName + "' object is not reversible");
            }
            List<Object> items = Py.iterate(v);
            return items.isEmpty() ? Undefined.plain("No last item, sequence was empty.") : items.getLast();
        });
        FILTERS.put("float", (v, a, e) -> toFloat(v, a.get(0, "default", 0.0)));
        FILTERS.put("int", (v, a, e) -> toInt(v, a.get(0, "default", 0L)));
        FILTERS.put("format", (v, a, e) -> Formats.percent(Py.str(v), a.kwargs().isEmpty()
                ? Tuple.of(a.positional()) : new LinkedHashMap<Object, Object>(a.kwargs())));
        FILTERS.put("indent", Filters::indent);
        FILTERS.put("items", (v, a, e) -> {
            if (v instanceof Undefined) {
                return PyIterator.generator(List.of());
            }
            if (!(v instanceof Map<?, ?> m)) {
                throw RenderException.type("Can only get item pairs from a mapping.");
            }
            List<Object> out = new ArrayList<>();
            m.forEach((k, x) -> out.add(new Tuple(k, x)));
            return PyIterator.generator(out);
        });
        FILTERS.put("join", (v, a, e) -> {
            Object attribute = a.get(1, "attribute", null);
            StringBuilder b = new StringBuilder();
            String sep = Py.str(a.get(0, "d", ""));
            boolean first = true;
            for (Object item : Py.iterate(v)) {
                b.append(first ? "" : sep).append(Py.str(attribute == null ? item : attr(item, attribute)));
                first = false;
            }
            return b.toString();
        });
        FILTERS.put("length", (v, a, e) -> (long) Py.len(v));
        FILTERS.put("count", FILTERS.get("length"));
        FILTERS.put("list", (v, a, e) -> new ArrayList<>(Py.iterate(v)));
        FILTERS.put("lower", (v, a, e) -> Py.str(v).toLowerCase(java.util.Locale.ROOT));
        FILTERS.put("upper", (v, a, e) -> Py.str(v).toUpperCase(java.util.Locale.ROOT));
        FILTERS.put("map", Filters::map);
        FILTERS.put("max", (v, a, e) -> extreme(v, a, true));
        FILTERS.put("min", (v, a, e) -> extreme(v, a, false));
        FILTERS.put("reject", (v, a, e) -> select(v, a, e, false, false));
        FILTERS.put("select", (v, a, e) -> select(v, a, e, true, false));
        FILTERS.put("rejectattr", (v, a, e) -> select(v, a, e, false, true));
        FILTERS.put("selectattr", (v, a, e) -> select(v, a, e, true, true));
        FILTERS.put("replace", (v, a, e) -> Methods.replace(Py.str(v), Py.str(a.get(0, "old", "")),
                Py.str(a.get(1, "new", "")), a.get(2, "count", null) == null ? -1 : Py.integer(a.get(2, "count", -1L))));
        FILTERS.put("reverse", (v, a, e) -> {
            if (v instanceof String s) {
                return new StringBuilder(s).reverse().toString();
            }
            List<Object> items = new ArrayList<>(Py.iterate(v));
            java.util.Collections.reverse(items);
            return v instanceof List<?> ? PyIterator.reversed(items) : items;
        });
        FILTERS.put("round", (v, a, e) -> {
            double x = Py.num(v);
            long precision = Py.integer(a.get(0, "precision", 0L));
            String method = (String) a.get(1, "method", "common");
            double scale = Math.pow(10, precision);
            return switch (method) {
                case "ceil" -> Math.ceil(x * scale) / scale;
                case "floor" -> Math.floor(x * scale) / scale;
                default -> new java.math.BigDecimal(Double.toString(x)).setScale((int) precision,
                        java.math.RoundingMode.HALF_EVEN).doubleValue();
            };
        });
        FILTERS.put("safe", (v, a, e) -> v instanceof Markup ? v : new Markup(Py.str(v)));
        FILTERS.put("sort", Filters::sort);
        FILTERS.put("string", (v, a, e) -> Py.str(v));
        FILTERS.put("sum", (v, a, e) -> {
            Object attribute = a.get(0, "attribute", null);
            Object total = a.get(1, "start", 0L);
            for (Object item : Py.iterate(v)) {
                total = Operators.binary("+", total, attribute == null ? item : attr(item, attribute));
            }
            return total;
        });
        FILTERS.put("title", (v, a, e) -> {
            StringBuilder b = new StringBuilder();
            for (String item : splitKeep(WORD_BEGINNING, Py.str(v))) {
                if (!item.isEmpty()) {
                    b.append(item.substring(0, 1).toUpperCase()).append(item.substring(1).toLowerCase());
                }
            }
            return b.toString();
        });
        FILTERS.put("tojson", (v, a, e) -> new JsonDumps(a.get(1, "indent", null), a.get(2, "separators", null),
                Py.truthy(a.get(3, "sort_keys", false)), Py.truthy(a.get(0, "ensure_ascii", false))).dumps(v));
        FILTERS.put("trim", (v, a, e) -> PyText.strip(Py.str(v), (String) a.get(0, "chars", null), true, true));
        FILTERS.put("truncate", Filters::truncate);
        FILTERS.put("unique", Filters::unique);
        FILTERS.put("wordcount", (v, a, e) -> WORD.matcher(Py.str(v)).results().count());
        FILTERS.put("batch", (v, a, e) -> {
            int size = (int) Py.integer(a.get(0, "linecount", 1L));
            List<Object> out = new ArrayList<>();
            List<Object> items = Py.iterate(v);
            for (int i = 0; i < items.size(); i += size) {
                out.add(new ArrayList<>(items.subList(i, Math.min(items.size(), i + size))));
            }
            return PyIterator.generator(out);
        });
    }

    private Filters() {
    }

    static boolean exists(String name) {
        return FILTERS.containsKey(name);
    }

    static Object apply(String name, Object value, Arguments args, Evaluator ev) {
        Filter f = FILTERS.get(name);
        if (f == null) {
            throw new RenderException("TemplateRuntimeError", "No filter named '" + name + "' found.");
        }
        return f.apply(value, args, ev);
    }

    private static Object attr(Object item, Object attribute) {
        return attribute instanceof Long l ? Evaluator.getitem(item, l) : Evaluator.attributePath(item, (String) attribute);
    }

    private static Object sortKey(Object v, boolean caseSensitive) {
        return !caseSensitive && v instanceof String s ? s.toLowerCase(java.util.Locale.ROOT) : v;
    }

    private static Object dictsort(Object v, Arguments a, Evaluator e) {
        boolean cs = Py.truthy(a.get(0, "case_sensitive", false));
        int pos = "value".equals(a.get(1, "by", "key")) ? 1 : 0;
        List<Object> items = new ArrayList<>();
        ((Map<?, ?>) v).forEach((k, x) -> items.add(new Tuple(k, x)));
        Comparator<Object> c = (x, y) -> Py.compare(sortKey(((Tuple) x).get(pos), cs), sortKey(((Tuple) y).get(pos),
                cs), "<");
        items.sort(Py.truthy(a.get(2, "reverse", false)) ? c.reversed() : c);
        return items;
    }

    private static Object sort(Object v, Arguments a, Evaluator e) {
        boolean reverse = Py.truthy(a.get(0, "reverse", false));
        boolean cs = Py.truthy(a.get(1, "case_sensitive", false));
        Object attribute = a.get(2, "attribute", null);
        List<Object> items = new ArrayList<>(Py.iterate(v));
        Comparator<Object> c = (x, y) -> Py.compare(sortKey(attribute == null ? x : attr(x, attribute), cs),
                sortKey(attribute == null ? y : attr(y, attribute), cs), "<");
        items.sort(reverse ? c.reversed() : c);
        return items;
    }

    private static Object unique(Object v, Arguments a, Evaluator e) {
        boolean cs = Py.truthy(a.get(0, "case_sensitive", false));
        Object attribute = a.get(1, "attribute", null);
        List<Object> seen = new ArrayList<>();
        List<Object> out = new ArrayList<>();
        for (Object item : Py.iterate(v)) {
            Object key = sortKey(attribute == null ? item : attr(item, attribute), cs);
            if (seen.stream().noneMatch(s -> Py.eq(s, key))) {
                seen.add(key);
                out.add(item);
            }
        }
        return PyIterator.generator(out);
    }

    private static Object extreme(Object v, Arguments a, boolean max) {
        boolean cs = Py.truthy(a.get(0, "case_sensitive", false));
        Object attribute = a.get(1, "attribute", null);
        Object best = null;
        Object bestKey = null;
        for (Object item : Py.iterate(v)) {
            Object key = sortKey(attribute == null ? item : attr(item, attribute), cs);
            int c = best == null ? 0 : Py.compare(key, bestKey, "<");
            if (best == null || (max ? c > 0 : c < 0)) {
                best = item;
                bestKey = key;
            }
        }
        return best == null ? Undefined.plain("No aggregated item, sequence was empty.") : best;
    }

    private static Object map(Object v, Arguments a, Evaluator e) {
        List<Object> out = new ArrayList<>();
        if (!Py.truthy(v)) {
            return PyIterator.generator(out);
        }
        if (a.size() == 0 && a.kwargs().containsKey("attribute")) {
            Object attribute = a.kwargs().get("attribute");
            Object fallback = a.kwargs().getOrDefault("default", Py.MISSING);
            for (Object item : Py.iterate(v)) {
                Object x = attr(item, attribute);
                out.add(x instanceof Undefined && fallback != Py.MISSING ? fallback : x);
            }
            return PyIterator.generator(out);
        }
        String name = (String) a.positional().getFirst();
        if (!exists(name)) {
            throw new RenderException("TemplateRuntimeError", "No filter named '" + name + "'.");
        }
        Arguments rest = new Arguments(a.positional().subList(1, a.size()), a.kwargs());
        for (Object item : Py.iterate(v)) {
            out.add(apply(name, item, rest, e));
        }
        return PyIterator.generator(out);
    }

    private static Object select(Object v, Arguments a, Evaluator e, boolean keep, boolean byAttribute) {
        int skip = byAttribute ? 1 : 0;
        Object attribute = byAttribute ? a.positional().getFirst() : null;
        String test = a.size() > skip ? (String) a.positional().get(skip) : null;
        if (test != null && !Tests.exists(test)) {
            throw new RenderException("TemplateRuntimeError", "No test named '" + test + "'.");
        }
        Arguments rest = new Arguments(a.size() > skip + 1 ? a.positional().subList(skip + 1, a.size()) : List.of(),
                a.kwargs());
        List<Object> out = new ArrayList<>();
        for (Object item : Py.truthy(v) ? Py.iterate(v) : List.of()) {
            Object x = byAttribute ? attr(item, attribute) : item;
            boolean r = test == null ? Py.truthy(x) : Tests.apply(test, x, rest, e);
            if (r == keep) {
                out.add(item);
            }
        }
        return PyIterator.generator(out);
    }

    private static Object indent(Object v, Arguments a, Evaluator e) {
        Object width = a.get(0, "width", 4L);
        String indention = width instanceof String s ? s : " ".repeat((int) Py.integer(width));
        boolean first = Py.truthy(a.get(1, "first", false));
        boolean blank = Py.truthy(a.get(2, "blank", false));
        List<String> lines = PyText.splitlines(Py.str(v) + "\n");
        StringBuilder rv = new StringBuilder();
        if (blank) {
            rv.append(String.join("\n" + indention, lines));
        } else {
            rv.append(lines.getFirst());
            if (lines.size() > 1) {
                rv.append('\n');
                for (int i = 1; i < lines.size(); i++) {
                    String line = lines.get(i);
                    rv.append(i > 1 ? "\n" : "").append(line.isEmpty() ? line : indention + line);
                }
            }
        }
        return first ? indention + rv : rv.toString();
    }

    private static Object truncate(Object v, Arguments a, Evaluator e) {
        String s = Py.str(v);
        int length = (int) Py.integer(a.get(0, "length", 255L));
        boolean killwords = Py.truthy(a.get(1, "killwords", false));
        String end = (String) a.get(2, "end", "...");
        Object lw = a.get(3, "leeway", null);
        int leeway = lw == null ? 5 : (int) Py.integer(lw);
        if (Py.len(s) <= length + leeway) {
            return s;
        }
        String head = (String) Py.slice(s, null, (long) (length - end.length()), null);
        if (killwords) {
            return head + end;
        }
        int space = head.lastIndexOf(' ');
        return (space < 0 ? head : head.substring(0, space)) + end;
    }

    private static Object toInt(Object v, Object fallback) {
        if (v instanceof Long || v instanceof Boolean) {
            return Py.integer(v);
        }
        if (v instanceof Double d) {
            return (long) d.doubleValue();
        }
        if (v instanceof String s) {
            String t = PyText.strip(s, null, true, true).replace("_", "");
            try {
                return Long.parseLong(t.startsWith("+") ? t.substring(1) : t);
            } catch (NumberFormatException ex) {
                try {
                    return (long) Double.parseDouble(t);
                } catch (NumberFormatException ex2) {
                    return fallback;
                }
            }
        }
        return fallback;
    }

    private static Object toFloat(Object v, Object fallback) {
        if (Py.isNumber(v)) {
            return Py.num(v);
        }
        if (v instanceof String s) {
            try {
                return Double.parseDouble(PyText.strip(s, null, true, true));
            } catch (NumberFormatException ex) {
                return fallback;
            }
        }
        return fallback;
    }

    static String escape(String s) {
        StringBuilder b = new StringBuilder(s.length());
        for (char c : s.toCharArray()) {
            switch (c) {
                case '&' -> b.append("&amp;");
                case '<' -> b.append("&lt;");
                case '>' -> b.append("&gt;");
                case '"' -> b.append("&#34;");
                case '\'' -> b.append("&#39;");
                default -> b.append(c);
            }
        }
        return b.toString();
    }

    /** Python's re.split with a capturing group: the separators are kept as items. */
    private static List<String> splitKeep(Pattern p, String s) {
        List<String> out = new ArrayList<>();
        Matcher m = p.matcher(s);
        int last = 0;
        while (m.find()) {
            out.add(s.substring(last, m.start()));
            out.add(m.group(1));
            last = m.end();
        }
        out.add(s.substring(last));
        return out;
    }
}
