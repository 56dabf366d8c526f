package io.tqserve.template;

import java.time.LocalDateTime;
import java.time.format.TextStyle;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** Python's {@code %}-formatting, {@code str.format} and {@code strftime} as far as chat templates use them. */
final class Formats {
    private Formats() {
    }

    /** {@code "fmt" % args}: %s %r %d %i %f %x %% with optional width/precision. */
    static String percent(String fmt, Object args) {
        List<Object> values = args instanceof Tuple t ? t : List.of(args == null ? Py.MISSING : args);
        Map<?, ?> named = args instanceof Map<?, ?> m ? m : null;
        StringBuilder out = new StringBuilder();
        int next = 0;
        for (int i = 0; i < fmt.length(); i++) {
            char c = fmt.charAt(i);
            if (c != '%') {
                out.append(c);
                continue;
            }
            int j = i + 1;
            String key = null;
            if (j < fmt.length() && fmt.charAt(j) == '(') {
                int close = fmt.indexOf(')', j);
                key = fmt.substring(j + 1, close);
                j = close + 1;
            }
            int specStart = j;
            while (j < fmt.length() && "-+ #0123456789.".indexOf(fmt.charAt(j)) >= 0) {
                j++;
            }
            if (j >= fmt.length()) {
                throw RenderException.value("incomplete format");
            }
            String spec = fmt.substring(specStart, j);
            char conv = fmt.charAt(j);
            i = j;
            if (conv == '%') {
                out.append('%');
                continue;
            }
            Object v;
            if (key != null && named != null) {
                v = named.get(key);
            } else {
                if (next >= values.size()) {
                    throw RenderException.type("not enough arguments for format string");
                }
                v = values.get(next++);
                v = v == Py.MISSING ? null : v;
            }
            String text = switch (conv) {
                case 's' -> Py.str(v);
                case 'r', 'a' -> Py.repr(v);
                case 'd', 'i' -> Long.toString(Py.isNumber(v) ? (long) Py.num(v) : badNumber(v, conv));
                case 'f', 'F' -> String.format(Locale.ROOT, "%." + precision(spec, 6) + "f", Py.num(number(v, conv)));
                case 'x' -> Long.toHexString(Py.integer(number(v, conv)));
                default -> throw RenderException.value("unsupported format character '" + conv + "'");
            };
            out.append(pad(text, spec));
        }
        if (named == null && next < values.size() && !(values.size() == 1 && values.getFirst() == Py.MISSING)) {
            throw RenderException.type("not all arguments converted during string formatting");
        }
        return out.toString();
    }

    private static long badNumber(Object v, char conv) {
        throw RenderException.type("%" + conv + " format: a real number is required, not " + Py.typeName(v));
    }

    private static Object number(Object v, char conv) {
        if (!Py.isNumber(v)) {
            badNumber(v, conv);
        }
        return v;
    }

    private static int precision(String spec, int fallback) {
        int dot = spec.indexOf('.');
        return dot < 0 ? fallback : Integer.parseInt(spec.substring(dot + 1));
    }

    private static String pad(String text, String spec) {
        String w = spec.contains(".") ? spec.substring(0, spec.indexOf('.')) : spec;
        boolean left = w.contains("-");
        w = w.replaceAll("[-+ #0]", "");
        if (w.isEmpty()) {
            return text;
        }
        int width = Integer.parseInt(w);
        String fill = " ".repeat(Math.max(0, width - text.length()));
        return left ? text + fill : fill + text;
    }

    /** {@code "{} {name} {0}".format(...)} without format specs beyond plain fields. */
    static String format(String fmt, List<Object> args, Map<String, Object> kwargs) {
        StringBuilder out = new StringBuilder();
        int auto = 0;
        for (int i = 0; i < fmt.length(); i++) {
            char c = fmt.charAt(i);
            if (c == '{' && i + 1 < fmt.length() && fmt.charAt(i + 1) == '{') {
                out.append('{');
                i++;
            } else if (c == '}' && i + 1 < fmt.length() && fmt.charAt(i + 1) == '}') {
                out.append('}');
                i++;
            } else if (c == '{') {
                int close = fmt.indexOf('}', i);
                if (close < 0) {
                    throw RenderException.value("Single '{' encountered in format string");
                }
                String field = fmt.substring(i + 1, close);
                int colon = field.indexOf(':');
                String name = colon >= 0 ? field.substring(0, colon) : field;
                Object v;
                if (name.isEmpty()) {
                    v = args.get(auto++);
                } else if (name.chars().allMatch(Character::isDigit)) {
                    v = args.get(Integer.parseInt(name));
                } else {
                    v = kwargs.get(name);
                }
                out.append(Py.str(v));
                i = close;
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }

    /** {@code datetime.strftime} with the C-locale directives. */
    static String strftime(LocalDateTime t, String fmt) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < fmt.length(); i++) {
            char c = fmt.charAt(i);
            if (c != '%' || i + 1 >= fmt.length()) {
                out.append(c);
                continue;
            }
            char d = fmt.charAt(++i);
            boolean noPad = false;
            if (d == '-' && i + 1 < fmt.length()) {
                noPad = true;
                d = fmt.charAt(++i);
            }
            String two = noPad ? "%d" : "%02d";
            out.append(switch (d) {
                case 'Y' -> Integer.toString(t.getYear());
                case 'y' -> String.format("%02d", t.getYear() % 100);
                case 'm' -> String.format(two, t.getMonthValue());
                case 'd' -> String.format(two, t.getDayOfMonth());
                case 'e' -> String.format("%2d", t.getDayOfMonth());
                case 'H' -> String.format(two, t.getHour());
                case 'I' -> String.format(two, (t.getHour() + 11) % 12 + 1);
                case 'M' -> String.format(two, t.getMinute());
                case 'S' -> String.format(two, t.getSecond());
                case 'p' -> t.getHour() < 12 ? "AM" : "PM";
                case 'b', 'h' -> t.getMonth().getDisplayName(TextStyle.SHORT, Locale.ENGLISH);
                case 'B' -> t.getMonth().getDisplayName(TextStyle.FULL, Locale.ENGLISH);
                case 'a' -> t.getDayOfWeek().getDisplayName(TextStyle.SHORT, Locale.ENGLISH);
                case 'A' -> t.getDayOfWeek().getDisplayName(TextStyle.FULL, Locale.ENGLISH);
                case 'j' -> String.format(noPad ? "%d" : "%03d", t.getDayOfYear());
                case 'w' -> Integer.toString(t.getDayOfWeek().getValue() % 7);
                case 'u' -> Integer.toString(t.getDayOfWeek().getValue());
                case 'f' -> String.format("%06d", t.getNano() / 1000);
                case 'F' -> String.format("%d-%02d-%02d", t.getYear(), t.getMonthValue(), t.getDayOfMonth());
                case 'T' -> String.format("%02d:%02d:%02d", t.getHour(), t.getMinute(), t.getSecond());
                case 'D' -> String.format("%02d/%02d/%02d", t.getMonthValue(), t.getDayOfMonth(), t.getYear() % 100);
                case 'z', 'Z' -> "";
                case '%' -> "%";
                default -> "%" + d;
            });
        }
        return out.toString();
    }
}
