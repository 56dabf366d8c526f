package io.tqserve.template;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;

/** Python's str semantics the templates rely on: repr, float repr, whitespace, strip/split, escapes. */
final class PyText {
    private PyText() {
    }

    /** {@code str.isspace()} for one code point. */
    static boolean isSpace(int c) {
        return (c >= 9 && c <= 13) || c == ' ' || (c >= 0x1c && c <= 0x1f) || c == 0x85 || c == 0xa0
                || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f
                || c == 0x205f || c == 0x3000;
    }

    /** {@code str.strip/lstrip/rstrip(chars)}; chars null strips whitespace. */
    static String strip(String s, String chars, boolean left, boolean right) {
        int from = 0;
        int to = s.length();
        while (left && from < to && stripped(s.codePointAt(from), chars)) {
            from += Character.charCount(s.codePointAt(from));
        }
        while (right && to > from && stripped(s.codePointBefore(to), chars)) {
            to -= Character.charCount(s.codePointBefore(to));
        }
        return s.substring(from, to);
    }

    private static boolean stripped(int cp, String chars) {
        return chars == null ? isSpace(cp) : chars.indexOf(Character.toString(cp)) >= 0;
    }

    /** {@code str.split(sep, maxsplit)}; sep null splits on whitespace runs and drops empty parts. */
    static List<Object> split(String s, String sep, long maxsplit) {
        List<Object> out = new ArrayList<>();
        if (sep == null) {
            int i = 0;
            int n = s.length();
            while (true) {
                while (i < n && isSpace(s.charAt(i))) {
                    i++;
                }
                if (i >= n) {
                    return out;
                }
                if (maxsplit >= 0 && out.size() >= maxsplit) {
                    out.add(s.substring(i));
                    return out;
                }
                int j = i;
                while (j < n && !isSpace(s.charAt(j))) {
                    j++;
                }
                out.add(s.substring(i, j));
                i = j;
            }
        }
        if (sep.isEmpty()) {
            throw RenderException.value("empty separator");
        }
        int i = 0;
        while (maxsplit < 0 || out.size() < maxsplit) {
            int j = s.indexOf(sep, i);
            if (j < 0) {
                break;
            }
            out.add(s.substring(i, j));
            i = j + sep.length();
        }
        out.add(s.substring(i));
        return out;
    }

    /** {@code str.rsplit(sep, maxsplit)}. */
    static List<Object> rsplit(String s, String sep, long maxsplit) {
        if (maxsplit < 0) {
            return split(s, sep, -1);
        }
        if (sep == null) {
            List<Object> out = new ArrayList<>();
            int j = s.length();
            while (true) {
                while (j > 0 && isSpace(s.charAt(j - 1))) {
                    j--;
                }
                if (j <= 0) {
                    break;
                }
                if (out.size() >= maxsplit) {
                    out.addFirst(s.substring(0, j));
                    break;
                }
                int i = j;
                while (i > 0 && !isSpace(s.charAt(i - 1))) {
                    i--;
                }
                out.addFirst(s.substring(i, j));
                j = i;
            }
            return out;
        }
        List<Object> out = new ArrayList<>();
        int end = s.length();
        while (out.size() < maxsplit) {
            int j = s.lastIndexOf(sep, end - sep.length());
            if (j < 0) {
                break;
            }
            out.addFirst(s.substring(j + sep.length(), end));
            end = j;
        }
        out.addFirst(s.substring(0, end));
        return out;
    }

    /** {@code str.splitlines()} (keepends false). */
    static List<String> splitlines(String s) {
        List<String> out = new ArrayList<>();
        int start = 0;
        int i = 0;
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c == '\n' || c == '\r' || c == 0x0b || c == 0x0c || (c >= 0x1c && c <= 0x1e) || c == 0x85
                    || c == 0x2028 || c == 0x2029) {
                out.add(s.substring(start, i));
                i += c == '\r' && i + 1 < s.length() && s.charAt(i + 1) == '\n' ? 2 : 1;
                start = i;
            } else {
                i++;
            }
        }
        if (start < s.length()) {
            out.add(s.substring(start));
        }
        return out;
    }

    /** {@code str.title()}: upper after an uncased character, lower after a cased one. */
    static String title(String s) {
        StringBuilder b = new StringBuilder(s.length());
        boolean prevCased = false;
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            if (prevCased) {
                b.appendCodePoint(Character.toLowerCase(cp));
            } else {
                b.append(titleCase(cp));
            }
            prevCased = Character.isUpperCase(cp) || Character.isLowerCase(cp) || Character.isTitleCase(cp);
            i += Character.charCount(cp);
        }
        return b.toString();
    }

    /** {@code str.capitalize()}. */
    static String capitalize(String s) {
        if (s.isEmpty()) {
            return s;
        }
        int first = s.codePointAt(0);
        return titleCase(first) + s.substring(Character.charCount(first)).toLowerCase(java.util.Locale.ROOT);
    }

    /** Python's full title-case mapping of one character ({@code ß} -> {@code Ss}). */
    private static String titleCase(int cp) {
        String upper = Character.toString(cp).toUpperCase(java.util.Locale.ROOT);
        if (upper.codePointCount(0, upper.length()) > 1 && Character.toTitleCase(cp) == cp) {
            int first = upper.codePointAt(0);
            return Character.toString(first) + upper.substring(Character.charCount(first)).toLowerCase(
                    java.util.Locale.ROOT);
        }
        return Character.toString(Character.toTitleCase(cp));
    }

    static int compareCodePoints(String a, String b) {
        int i = 0;
        int j = 0;
        while (i < a.length() && j < b.length()) {
            int x = a.codePointAt(i);
            int y = b.codePointAt(j);
            if (x != y) {
                return Integer.compare(x, y);
            }
            i += Character.charCount(x);
            j += Character.charCount(y);
        }
        return Integer.compare(a.length() - i, b.length() - j);
    }

    /** Python's {@code repr(float)}: shortest round-trip digits, exponent form below 1e-4 and from 1e16. */
    static String floatRepr(double d) {
        if (Double.isNaN(d)) {
            return "nan";
        }
        if (Double.isInfinite(d)) {
            return d > 0 ? "inf" : "-inf";
        }
        if (d == 0) {
            return (1 / d < 0) ? "-0.0" : "0.0";
        }
        BigDecimal exact = shortest(Math.abs(d));
        String digits = exact.unscaledValue().toString();
        int decpt = digits.length() - exact.scale();   // value = 0.digits * 10^decpt
        String sign = d < 0 ? "-" : "";
        if (decpt > -4 && decpt <= 16) {
            if (decpt <= 0) {
                return sign + "0." + "0".repeat(-decpt) + digits;
            }
            if (decpt >= digits.length()) {
                return sign + digits + "0".repeat(decpt - digits.length()) + ".0";
            }
            return sign + digits.substring(0, decpt) + "." + digits.substring(decpt);
        }
        int exp = decpt - 1;
        String mantissa = digits.length() == 1 ? digits : digits.charAt(0) + "." + digits.substring(1);
        return sign + mantissa + "e" + (exp < 0 ? "-" : "+") + (Math.abs(exp) < 10 ? "0" : "") + Math.abs(exp);
    }

    /** The shortest decimal that reads back as d (Double.toString keeps two digits for some subnormals). */
    private static BigDecimal shortest(double d) {
        BigDecimal exact = new BigDecimal(Double.toString(d)).stripTrailingZeros();
        for (int digits = 1; digits < exact.precision(); digits++) {
            BigDecimal shorter = exact.round(new java.math.MathContext(digits, java.math.RoundingMode.HALF_EVEN));
            if (shorter.doubleValue() == d) {
                return shorter.stripTrailingZeros();
            }
        }
        return exact;
    }

    /** Python's {@code repr(str)}: single quotes unless the text has ' and no ", non-printables escaped. */
    static String strRepr(String s) {
        char quote = s.indexOf('\'') >= 0 && s.indexOf('"') < 0 ? '"' : '\'';
        StringBuilder b = new StringBuilder(s.length() + 2).append(quote);
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            i += Character.charCount(cp);
            switch (cp) {
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (cp == quote) {
                        b.append('\\').append(quote);
                    } else if (printable(cp)) {
                        b.appendCodePoint(cp);
                    } else if (cp <= 0xff) {
                        b.append(String.format("\\x%02x", cp));
                    } else if (cp <= 0xffff) {
                        b.append(String.format("\\u%04x", cp));
                    } else {
                        b.append(String.format("\\U%08x", cp));
                    }
                }
            }
        }
        return b.append(quote).toString();
    }

    private static boolean printable(int cp) {
        if (cp == ' ') {
            return true;
        }
        return switch (Character.getType(cp)) {
            case Character.CONTROL, Character.FORMAT, Character.SURROGATE, Character.PRIVATE_USE,
                 Character.UNASSIGNED, Character.LINE_SEPARATOR, Character.PARAGRAPH_SEPARATOR,
                 Character.SPACE_SEPARATOR -> false;
            default -> true;
        };
    }

    /** Python's unicode-escape decoding of a string literal's body (unknown escapes are kept). */
    static String unescape(String s) {
        if (s.indexOf('\\') < 0) {
            return s;
        }
        StringBuilder b = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c != '\\' || i + 1 >= s.length()) {
                b.append(c);
                continue;
            }
            char n = s.charAt(++i);
            switch (n) {
                case 'n' -> b.append('\n');
                case 't' -> b.append('\t');
                case 'r' -> b.append('\r');
                case '\\' -> b.append('\\');
                case '\'' -> b.append('\'');
                case '"' -> b.append('"');
                case 'a' -> b.append('\u0007');
                case 'b' -> b.append('\b');
                case 'f' -> b.append('\f');
                case 'v' -> b.append('\u000b');
                case '\n' -> { }
                case 'x', 'u', 'U' -> {
                    int len = n == 'x' ? 2 : n == 'u' ? 4 : 8;
                    if (i + len >= s.length() + 0 && i + len > s.length() - 1 + 1) {
                        throw new TemplateException("truncated \\" + n + " escape in a string literal", 0);
                    }
                    b.appendCodePoint(Integer.parseInt(s.substring(i + 1, i + 1 + len), 16));
                    i += len;
                }
                default -> {
                    if (n >= '0' && n <= '7') {
                        int j = i;
                        while (j < s.length() && j < i + 3 && s.charAt(j) >= '0' && s.charAt(j) <= '7') {
                            j++;
                        }
                        b.appendCodePoint(Integer.parseInt(s.substring(i, j), 8));
                        i = j - 1;
                    } else {
                        b.append('\\').append(n);
                    }
                }
            }
        }
        return b.toString();
    }
}
