package io.tqserve.model;

import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.filter.AdvancedFilter;
import com.hubspot.jinjava.lib.filter.LengthFilter;
import com.hubspot.jinjava.objects.collections.PyList;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import jinjava.javax.el.ELException;

/**
 * Jinja2 filters whose Jinjava versions give a different result on inputs chat templates produce; each replaces the
 * Jinjava filter of the same name (see {@link JinjaEnvironment}).
 */
final class JinjaFilters {

    private JinjaFilters() {
    }

    static void register(Jinjava jinjava) {
        jinjava.registerFilter(new ToJson());
        jinjava.registerFilter(new Trim());
        jinjava.registerFilter(new Length("length"));
        jinjava.registerFilter(new Length("count"));
        jinjava.registerFilter(new Str());
        jinjava.registerFilter(new Indent());
        jinjava.registerFilter(new Truncate());
        jinjava.registerFilter(new DictSort());
    }

    private static Object arg(Object[] args, Map<String, Object> kwargs, int index, String name, Object fallback) {
        if (kwargs.containsKey(name)) {
            return kwargs.get(name);
        }
        return args.length > index ? args[index] : fallback;
    }

    private static String text(Object value) {
        String python = PythonValues.str(value);
        return python != null ? python : value.toString();
    }

    private static boolean truthy(Object value) {
        return value instanceof Boolean b ? b : value != null;
    }

    /** transformers' {@code tojson}: {@code json.dumps(x, ensure_ascii=False, indent, separators, sort_keys)}. */
    private static final class ToJson implements AdvancedFilter {
        @Override
        public String getName() {
            return "tojson";
        }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, Object[] args, Map<String, Object> kwargs) {
            Object indent = arg(args, kwargs, 0, "indent", null);
            Object separators = kwargs.get("separators");
            if (separators != null && !(separators instanceof List<?>)) {
                throw new ELException("tojson separators must be a pair of strings");
            }
            if (truthy(kwargs.get("ensure_ascii"))) {
                throw new ELException("tojson(ensure_ascii=True) is not supported");
            }
            try {
                return new PythonValues(indent, (List<?>) separators, truthy(kwargs.get("sort_keys"))).write(var);
            } catch (IllegalArgumentException e) {
                throw new ELException(e.getMessage());
            }
        }
    }

    /** Jinja2's {@code trim(value, chars=None)}, i.e. Python's {@code str.strip}. */
    private static final class Trim implements AdvancedFilter {
        @Override
        public String getName() {
            return "trim";
        }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, Object[] args, Map<String, Object> kwargs) {
            Object chars = arg(args, kwargs, 0, "chars", null);
            return PythonStrings.strip(text(var), chars == null ? null : chars.toString(), true, true);
        }
    }

    /** {@code length}/{@code count}: Python's {@code len}, which counts a string's code points, not UTF-16 units. */
    private static final class Length implements AdvancedFilter {
        private static final LengthFilter JINJAVA_LENGTH = new LengthFilter();
        private final String name;

        Length(String name) {
            this.name = name;
        }

        @Override
        public String getName() {
            return name;
        }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, Object[] args, Map<String, Object> kwargs) {
            if (var instanceof String s) {
                return (long) s.codePointCount(0, s.length());
            }
            return JINJAVA_LENGTH.filter(var, interpreter);
        }
    }

    /** {@code string}: Python's {@code str()} ({@code True}, not Jinjava's {@code true}). */
    private static final class Str implements AdvancedFilter {
        @Override
        public String getName() {
            return "string";
        }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, Object[] args, Map<String, Object> kwargs) {
            return text(var);
        }
    }

    /** Jinja2's {@code indent(width=4, first=False, blank=False)}: blank lines stay empty unless {@code blank}. */
    private static final class Indent implements AdvancedFilter {
        @Override
        public String getName() {
            return "indent";
        }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, Object[] args, Map<String, Object> kwargs) {
            Object width = arg(args, kwargs, 0, "width", 4L);
            String indention = width instanceof Number n ? " ".repeat(n.intValue()) : String.valueOf(width);
            boolean first = truthy(arg(args, kwargs, 1, "first", false));
            boolean blank = truthy(arg(args, kwargs, 2, "blank", false));
            List<String> lines = PythonStrings.splitlines(text(var) + "\n", false);
            StringBuilder out = new StringBuilder(lines.getFirst());
            for (String line : lines.subList(1, lines.size())) {
                out.append('\n');
                if (blank || !line.isEmpty()) {
                    out.append(indention);
                }
                out.append(line);
            }
            return first ? indention + out : out.toString();
        }
    }

    /** Jinja2's {@code truncate(length=255, killwords=False, end='...', leeway=5)}. */
    private static final class Truncate implements AdvancedFilter {
        @Override
        public String getName() {
            return "truncate";
        }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, Object[] args, Map<String, Object> kwargs) {
            String s = text(var);
            int length = ((Number) arg(args, kwargs, 0, "length", 255L)).intValue();
            boolean killwords = truthy(arg(args, kwargs, 1, "killwords", false));
            String end = String.valueOf(arg(args, kwargs, 2, "end", "..."));
            int leeway = ((Number) arg(args, kwargs, 3, "leeway", 5L)).intValue();
            int[] cps = s.codePoints().toArray();
            if (cps.length <= length + leeway) {
                return s;
            }
            int keep = Math.max(0, length - end.codePointCount(0, end.length()));
            String head = new String(cps, 0, Math.min(keep, cps.length));
            if (killwords) {
                return head + end;
            }
            int space = head.lastIndexOf(' ');
            return (space >= 0 ? head.substring(0, space) : head) + end;
        }
    }

    /**
     * Jinja2's {@code dictsort(case_sensitive=False, by='key', reverse=False)}: a list of {@code (key, value)} tuples.
     * Jinjava's returns map entries, which a loop can unpack but {@code first}/indexing cannot.
     */
    private static final class DictSort implements AdvancedFilter {
        @Override
        public String getName() {
            return "dictsort";
        }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, Object[] args, Map<String, Object> kwargs) {
            if (var == null) {
                return new PyList(new ArrayList<>());   // an undefined variable (e.g. in the load-time probe)
            }
            if (!(var instanceof Map<?, ?> map)) {
                throw new ELException("dictsort expects a dict");
            }
            boolean caseSensitive = truthy(arg(args, kwargs, 0, "case_sensitive", false));
            String by = String.valueOf(arg(args, kwargs, 1, "by", "key"));
            boolean reverse = truthy(arg(args, kwargs, 2, "reverse", false));
            if (!by.equals("key") && !by.equals("value")) {
                throw new ELException("You can only sort by either 'key' or 'value'");
            }
            int pos = by.equals("key") ? 0 : 1;
            List<List<Object>> pairs = new ArrayList<>();
            for (Map.Entry<?, ?> e : map.entrySet()) {
                pairs.add(Arrays.asList(e.getKey(), e.getValue()));
            }
            Comparator<List<Object>> order = (a, b) -> compare(sortKey(a.get(pos), caseSensitive),
                    sortKey(b.get(pos), caseSensitive));
            pairs.sort(reverse ? order.reversed() : order);
            List<Object> out = new ArrayList<>();
            pairs.forEach(p -> out.add(new PythonValues.Tuple(p.get(0), p.get(1))));
            return new PyList(out);
        }

        private static Object sortKey(Object value, boolean caseSensitive) {
            return !caseSensitive && value instanceof String s ? s.toLowerCase(Locale.ROOT) : value;
        }

        private static int compare(Object a, Object b) {
            if (a instanceof String x && b instanceof String y) {
                return x.compareTo(y);
            }
            if (a instanceof Number x && b instanceof Number y) {
                return Double.compare(x.doubleValue(), y.doubleValue());
            }
            throw new ELException("dictsort cannot compare " + a + " and " + b);
        }
    }
}
