package io.tqserve.template;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The Python methods of str, dict and list that templates call ({@code content.strip()}, {@code m.get('x')},
 * {@code d.items()}, ...), bound to their object. Mutating list/dict methods are refused as Jinja2's
 * ImmutableSandboxedEnvironment refuses them (a SecurityError when used).
 */
final class Methods {
    private static final Set<String> UNSAFE_LIST = Set.of("append", "clear", "extend", "insert", "pop", "remove",
            "reverse", "sort");
    private static final Set<String> UNSAFE_DICT = Set.of("clear", "pop", "popitem", "setdefault", "update");

    private Methods() {
    }

    /** The bound method {@code obj.name}, an unsafe-undefined for a refused one, or null when there is none. */
    static Object lookup(Object obj, String name) {
        return switch (obj) {
            case String s -> string(s, name);
            case Markup m -> string(m.text(), name);
            case Map<?, ?> m -> UNSAFE_DICT.contains(name) ? Undefined.unsafe(obj, name) : dict(m, name);
            case List<?> l -> UNSAFE_LIST.contains(name) && !(obj instanceof Tuple) ? Undefined.unsafe(obj, name)
                    : list(l, name);
            case null, default -> null;
        };
    }

    private static PyCallable dict(Map<?, ?> m, String name) {
        return switch (name) {
            case "get" -> (a, k) -> {
                Object v = Py.item(m, arg(a, k, 0, "key"));
                return v == Py.MISSING ? (a.size() > 1 ? a.get(1) : null) : v;
            };
            case "items" -> (a, k) -> {
                List<Object> out = new ArrayList<>(m.size());
                m.forEach((key, v) -> out.add(new Tuple(key, v)));
                return PyIterator.view("dict_items", out);
            };
            case "keys" -> (a, k) -> PyIterator.view("dict_keys", new ArrayList<Object>(m.keySet()));
            case "values" -> (a, k) -> PyIterator.view("dict_values", new ArrayList<Object>(m.values()));
            case "copy" -> (a, k) -> new LinkedHashMap<Object, Object>(m);
            default -> null;
        };
    }

    private static PyCallable list(List<?> l, String name) {
        return switch (name) {
            case "count" -> (a, k) -> l.stream().filter(x -> Py.eq(x, a.getFirst())).count();
            case "index" -> (a, k) -> {
                for (int i = 0; i < l.size(); i++) {
                    if (Py.eq(l.get(i), a.getFirst())) {
                        return (long) i;
                    }
                }
                throw RenderException.value(Py.repr(a.getFirst()) + " is not in list");
            };
            case "copy" -> (a, k) -> new ArrayList<Object>(l);
            default -> null;
        };
    }

    private static Object arg(List<Object> a, Map<String, Object> k, int i, String name) {
        if (i < a.size()) {
            return a.get(i);
        }
        if (k.containsKey(name)) {
            return k.get(name);
        }
        throw RenderException.type("missing required argument '" + name + "' (pos " + (i + 1) + ")");
    }

    private static String optString(List<Object> a, Map<String, Object> k, int i, String name) {
        Object v = i < a.size() ? a.get(i) : k.get(name);
        return v == null ? null : (String) v;
    }

    private static long optLong(List<Object> a, Map<String, Object> k, int i, String name, long fallback) {
        Object v = i < a.size() ? a.get(i) : k.get(name);
        return v == null ? fallback : Py.integer(v);
    }

    private static boolean affix(String s, Object arg, boolean start) {
        if (arg instanceof List<?> options) {
            for (Object o : options) {
                if (start ? s.startsWith((String) o) : s.endsWith((String) o)) {
                    return true;
                }
            }
            return false;
        }
        if (!(arg instanceof String x)) {
            throw RenderException.type((start ? "startswith" : "endswith") + " first arg must be str or a tuple of"
                    + " str, not " + Py.typeName(arg));
        }
        return start ? s.startsWith(x) : s.endsWith(x);
    }

    private static PyCallable string(String s, String name) {
        return switch (name) {
            case "strip" -> (a, k) -> PyText.strip(s, optString(a, k, 0, "chars"), true, true);
            case "lstrip" -> (a, k) -> PyText.strip(s, optString(a, k, 0, "chars"), true, false);
            case "rstrip" -> (a, k) -> PyText.strip(s, optString(a, k, 0, "chars"), false, true);
            case "split" -> (a, k) -> PyText.split(s, optString(a, k, 0, "sep"), optLong(a, k, 1, "maxsplit", -1));
            case "rsplit" -> (a, k) -> PyText.rsplit(s, optString(a, k, 0, "sep"), optLong(a, k, 1, "maxsplit", -1));
            case "splitlines" -> (a, k) -> new ArrayList<Object>(PyText.splitlines(s));
            case "startswith" -> (a, k) -> affix(s, a.getFirst(), true);
            case "endswith" -> (a, k) -> affix(s, a.getFirst(), false);
            case "upper" -> (a, k) -> s.toUpperCase(java.util.Locale.ROOT);
            case "lower" -> (a, k) -> s.toLowerCase(java.util.Locale.ROOT);
            case "title" -> (a, k) -> PyText.title(s);
            case "capitalize" -> (a, k) -> PyText.capitalize(s);
            case "swapcase" -> (a, k) -> swapcase(s);
            case "replace" -> (a, k) -> replace(s, (String) a.get(0), (String) a.get(1),
                    a.size() > 2 ? Py.integer(a.get(2)) : -1);
            case "find" -> (a, k) -> (long) cpIndex(s, s.indexOf((String) a.getFirst()));
            case "rfind" -> (a, k) -> (long) cpIndex(s, s.lastIndexOf((String) a.getFirst()));
            case "index", "rindex" -> (a, k) -> {
                int i = name.equals("index") ? s.indexOf((String) a.getFirst()) : s.lastIndexOf((String) a.getFirst());
                if (i < 0) {
                    throw RenderException.value("substring not found");
                }
                return (long) cpIndex(s, i);
            };
            case "count" -> (a, k) -> {
                String sub = (String) a.getFirst();
                if (sub.isEmpty()) {
                    return (long) Py.len(s) + 1;
                }
                long n = 0;
                for (int i = s.indexOf(sub); i >= 0; i = s.indexOf(sub, i + sub.length())) {
                    n++;
                }
                return n;
            };
            case "join" -> (a, k) -> {
                StringBuilder b = new StringBuilder();
                List<Object> items = Py.iterate(a.getFirst());
                for (int i = 0; i < items.size(); i++) {
                    if (!(items.get(i) instanceof String part)) {
                        throw RenderException.type("sequence item " + i + ": expected str instance, "
                                + Py.typeName(items.get(i)) + " found");
                    }
                    b.append(i > 0 ? s : "").append(part);
                }
                return b.toString();
            };
            case "format" -> (a, k) -> Formats.format(s, a, k);
            case "isdigit", "isnumeric", "isdecimal" -> (a, k) -> !s.isEmpty() && s.codePoints()
                    .allMatch(Character::isDigit);
            case "isalpha" -> (a, k) -> !s.isEmpty() && s.codePoints().allMatch(Character::isLetter);
            case "isalnum" -> (a, k) -> !s.isEmpty() && s.codePoints().allMatch(Character::isLetterOrDigit);
            case "isspace" -> (a, k) -> !s.isEmpty() && s.codePoints().allMatch(PyText::isSpace);
            case "isupper" -> (a, k) -> s.codePoints().anyMatch(Character::isUpperCase)
                    && s.codePoints().noneMatch(Character::isLowerCase);
            case "islower" -> (a, k) -> s.codePoints().anyMatch(Character::isLowerCase)
                    && s.codePoints().noneMatch(Character::isUpperCase);
            case "removeprefix" -> (a, k) -> s.startsWith((String) a.getFirst())
                    ? s.substring(((String) a.getFirst()).length()) : s;
            case "removesuffix" -> (a, k) -> s.endsWith((String) a.getFirst()) && !((String) a.getFirst()).isEmpty()
                    ? s.substring(0, s.length() - ((String) a.getFirst()).length()) : s;
            case "partition", "rpartition" -> (a, k) -> {
                String sep = (String) a.getFirst();
                int i = name.equals("partition") ? s.indexOf(sep) : s.lastIndexOf(sep);
                if (i < 0) {
                    return name.equals("partition") ? new Tuple(s, "", "") : new Tuple("", "", s);
                }
                return new Tuple(s.substring(0, i), sep, s.substring(i + sep.length()));
            };
            case "zfill" -> (a, k) -> {
                int width = (int) Py.integer(a.getFirst());
                int pad = width - Py.len(s);
                if (pad <= 0) {
                    return s;
                }
                boolean sign = !s.isEmpty() && (s.charAt(0) == '-' || s.charAt(0) == '+');
                return sign ? s.charAt(0) + "0".repeat(pad) + s.substring(1) : "0".repeat(pad) + s;
            };
            case "center", "ljust", "rjust" -> (a, k) -> {
                int width = (int) Py.integer(a.getFirst());
                String fill = a.size() > 1 ? (String) a.get(1) : " ";
                int pad = width - Py.len(s);
                if (pad <= 0) {
                    return s;
                }
                if (name.equals("ljust")) {
                    return s + fill.repeat(pad);
                }
                if (name.equals("rjust")) {
                    return fill.repeat(pad) + s;
                }
                int left = pad / 2 + (pad & width & 1);
                return fill.repeat(left) + s + fill.repeat(pad - left);
            };
            default -> null;
        };
    }

    static String replace(String s, String old, String replacement, long count) {
        if (count < 0) {
            return old.isEmpty() ? insertEverywhere(s, replacement) : s.replace(old, replacement);
        }
        StringBuilder b = new StringBuilder();
        int i = 0;
        long n = 0;
        while (n < count) {
            int j = s.indexOf(old, i);
            if (j < 0 || old.isEmpty()) {
                break;
            }
            b.append(s, i, j).append(replacement);
            i = j + old.length();
            n++;
        }
        return b.append(s.substring(i)).toString();
    }

    private static String insertEverywhere(String s, String r) {
        StringBuilder b = new StringBuilder(r);
        s.codePoints().forEach(cp -> b.appendCodePoint(cp).append(r));
        return b.toString();
    }

    private static int cpIndex(String s, int charIndex) {
        return charIndex < 0 ? -1 : s.codePointCount(0, charIndex);
    }

    private static String swapcase(String s) {
        StringBuilder b = new StringBuilder();
        s.codePoints().forEach(cp -> b.appendCodePoint(Character.isUpperCase(cp) ? Character.toLowerCase(cp)
                : Character.toUpperCase(cp)));
        return b.toString();
    }
}
