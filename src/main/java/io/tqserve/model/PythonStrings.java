package io.tqserve.model;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;

/**
 * Python {@code str} methods with Python's semantics, for chat templates that call them ({@code .strip()},
 * {@code .split('</think>')[-1]}, {@code .startswith(...)}: Qwen2.5/Qwen3, DeepSeek-R1, ...). Jinjava would
 * otherwise call the Java {@link String} method of the same name where one exists — {@code split} takes a regex
 * and drops trailing empty strings, {@code strip} knows no {@code chars} argument and a different whitespace set —
 * or fail where none exists. No library provides Python's string semantics in Java, hence this class.
 *
 * <p>Indices ({@code find}, {@code count}) are in code points, as in Python. Whitespace is Python's
 * {@code str.isspace()} set.
 */
final class PythonStrings {

    private PythonStrings() {
    }

    /** Invokes the Python str method {@code name} on {@code s}; throws {@link IllegalArgumentException} if unknown. */
    static Object invoke(String s, String name, Object[] args) {
        return switch (name) {
            case "strip" -> strip(s, optChars(name, args), true, true);
            case "lstrip" -> strip(s, optChars(name, args), true, false);
            case "rstrip" -> strip(s, optChars(name, args), false, true);
            case "startswith" -> matchesAffix(s, name, args, true);
            case "endswith" -> matchesAffix(s, name, args, false);
            case "split" -> split(s, optString(name, args, 0), optInt(name, args, 1, -1));
            case "rsplit" -> rsplit(s, optString(name, args, 0), optInt(name, args, 1, -1));
            case "splitlines" -> splitlines(s, args.length > 0 && Boolean.TRUE.equals(args[0]));
            case "replace" -> replace(s, string(name, args, 0), string(name, args, 1), optInt(name, args, 2, -1));
            case "upper" -> noArgs(name, args, s.toUpperCase(Locale.ROOT));
            case "lower" -> noArgs(name, args, s.toLowerCase(Locale.ROOT));
            case "title" -> noArgs(name, args, title(s));
            case "capitalize" -> noArgs(name, args, capitalize(s));
            case "find" -> find(s, string(name, args, 0), false);
            case "rfind" -> find(s, string(name, args, 0), true);
            case "count" -> count(s, string(name, args, 0));
            case "join" -> join(s, args);
            case "isspace" -> noArgs(name, args, !s.isEmpty() && s.codePoints().allMatch(PythonStrings::isSpace));
            case "isdigit" -> noArgs(name, args, !s.isEmpty() && s.codePoints().allMatch(Character::isDigit));
            case "isalpha" -> noArgs(name, args, !s.isEmpty() && s.codePoints().allMatch(Character::isLetter));
            case "isalnum" -> noArgs(name, args, !s.isEmpty() && s.codePoints().allMatch(Character::isLetterOrDigit));
            default -> throw new IllegalArgumentException("'str' object has no attribute '" + name
                    + "' (not one of the Python string methods tqserve's chat templates support)");
        };
    }

    /** Python's {@code str.isspace()} for one code point. */
    static boolean isSpace(int cp) {
        return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680
                || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F
                || cp == 0x3000;
    }

    /** {@code s.strip(chars)}: {@code chars == null} strips Python whitespace. */
    static String strip(String s, String chars, boolean left, boolean right) {
        int begin = 0;
        int end = s.length();
        while (left && begin < end) {
            int cp = s.codePointAt(begin);
            if (!stripped(cp, chars)) {
                break;
            }
            begin += Character.charCount(cp);
        }
        while (right && end > begin) {
            int cp = s.codePointBefore(end);
            if (!stripped(cp, chars)) {
                break;
            }
            end -= Character.charCount(cp);
        }
        return s.substring(begin, end);
    }

    private static boolean stripped(int cp, String chars) {
        return chars == null ? isSpace(cp) : chars.indexOf(cp) >= 0;
    }

    private static boolean matchesAffix(String s, String name, Object[] args, boolean prefix) {
        if (args.length != 1) {
            throw new IllegalArgumentException(name + "() takes one argument here (start/end are not supported)");
        }
        if (args[0] instanceof String affix) {
            return prefix ? s.startsWith(affix) : s.endsWith(affix);
        }
        if (args[0] instanceof Collection<?> affixes) {   // a tuple of prefixes
            for (Object a : affixes) {
                if (!(a instanceof String affix)) {
                    throw new IllegalArgumentException(name + "() tuple items must be strings");
                }
                if (prefix ? s.startsWith(affix) : s.endsWith(affix)) {
                    return true;
                }
            }
            return false;
        }
        throw new IllegalArgumentException(name + "() argument must be a string or a tuple of strings");
    }

    static List<String> split(String s, String sep, int maxsplit) {
        List<String> out = new ArrayList<>();
        if (sep == null) {
            int i = 0;
            int n = s.length();
            while (true) {
                while (i < n && isSpace(s.codePointAt(i))) {
                    i += Character.charCount(s.codePointAt(i));
                }
                if (i >= n) {
                    return out;
                }
                if (maxsplit >= 0 && out.size() == maxsplit) {
                    out.add(s.substring(i));
                    return out;
                }
                int j = i;
                while (j < n && !isSpace(s.codePointAt(j))) {
                    j += Character.charCount(s.codePointAt(j));
                }
                out.add(s.substring(i, j));
                i = j;
            }
        }
        checkSeparator(sep);
        int from = 0;
        while (maxsplit < 0 || out.size() < maxsplit) {
            int at = s.indexOf(sep, from);
            if (at < 0) {
                break;
            }
            out.add(s.substring(from, at));
            from = at + sep.length();
        }
        out.add(s.substring(from));
        return out;
    }

    static List<String> rsplit(String s, String sep, int maxsplit) {
        List<String> out = new ArrayList<>();
        if (sep == null) {
            int j = s.length();
            while (true) {
                while (j > 0 && isSpace(s.codePointBefore(j))) {
                    j -= Character.charCount(s.codePointBefore(j));
                }
                if (j <= 0) {
                    break;
                }
                if (maxsplit >= 0 && out.size() == maxsplit) {
                    out.add(s.substring(0, j));
                    break;
                }
                int i = j;
                while (i > 0 && !isSpace(s.codePointBefore(i))) {
                    i -= Character.charCount(s.codePointBefore(i));
                }
                out.add(s.substring(i, j));
                j = i;
            }
            return out.reversed();
        }
        checkSeparator(sep);
        int to = s.length();
        while (maxsplit < 0 || out.size() < maxsplit) {
            int at = s.lastIndexOf(sep, to - sep.length());
            if (at < 0) {
                break;
            }
            out.add(s.substring(at + sep.length(), to));
            to = at;
        }
        out.add(s.substring(0, to));
        return out.reversed();
    }

    private static void checkSeparator(String sep) {
        if (sep.isEmpty()) {
            throw new IllegalArgumentException("empty separator");
        }
    }

    static List<String> splitlines(String s, boolean keepEnds) {
        List<String> out = new ArrayList<>();
        int begin = 0;
        int i = 0;
        while (i < s.length()) {
            char c = s.charAt(i);
            boolean lineBreak = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || (c >= 0x1C && c <= 0x1E)
                    || c == 0x85 || c == 0x2028 || c == 0x2029;
            if (!lineBreak) {
                i++;
                continue;
            }
            int end = (c == '\r' && i + 1 < s.length() && s.charAt(i + 1) == '\n') ? i + 2 : i + 1;
            out.add(s.substring(begin, keepEnds ? end : i));
            begin = end;
            i = end;
        }
        if (begin < s.length()) {
            out.add(s.substring(begin));
        }
        return out;
    }

    private static String replace(String s, String old, String replacement, int count) {
        StringBuilder out = new StringBuilder();
        int done = 0;
        if (old.isEmpty()) {   // Python inserts the replacement before every code point and at the end
            int i = 0;
            while (i < s.length() && (count < 0 || done < count)) {
                out.append(replacement);
                done++;
                int cp = s.codePointAt(i);
                out.appendCodePoint(cp);
                i += Character.charCount(cp);
            }
            out.append(s, i, s.length());
            if (i == s.length() && (count < 0 || done < count)) {
                out.append(replacement);
            }
            return out.toString();
        }
        int from = 0;
        while (count < 0 || done < count) {
            int at = s.indexOf(old, from);
            if (at < 0) {
                break;
            }
            out.append(s, from, at).append(replacement);
            from = at + old.length();
            done++;
        }
        return out.append(s, from, s.length()).toString();
    }

    /** Python's {@code str.title()}: a cased character after an uncased one starts a word. */
    private static String title(String s) {
        StringBuilder out = new StringBuilder(s.length());
        boolean previousCased = false;
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            i += Character.charCount(cp);
            out.append(previousCased ? lower(cp) : titleCase(cp));
            previousCased = Character.isUpperCase(cp) || Character.isLowerCase(cp) || Character.isTitleCase(cp);
        }
        return out.toString();
    }

    /** Python 3.8+ {@code str.capitalize()}: first character in title case, the rest lower case. */
    private static String capitalize(String s) {
        if (s.isEmpty()) {
            return s;
        }
        int first = s.codePointAt(0);
        return titleCase(first) + s.substring(Character.charCount(first)).toLowerCase(Locale.ROOT);
    }

    private static String lower(int cp) {
        return new String(Character.toChars(cp)).toLowerCase(Locale.ROOT);
    }

    /** Full title-case mapping of one code point (e.g. ß -> Ss, dž -> Dž). */
    private static String titleCase(int cp) {
        int title = Character.toTitleCase(cp);
        if (title != Character.toUpperCase(cp)) {
            return new String(Character.toChars(title));
        }
        String upper = new String(Character.toChars(cp)).toUpperCase(Locale.ROOT);
        if (upper.codePointCount(0, upper.length()) <= 1) {
            return upper;
        }
        int head = upper.codePointAt(0);
        String rest = upper.substring(Character.charCount(head)).toLowerCase(Locale.ROOT);
        return new String(Character.toChars(head)) + rest;
    }

    private static long find(String s, String sub, boolean last) {
        int at = last ? s.lastIndexOf(sub) : s.indexOf(sub);
        return at < 0 ? -1 : s.codePointCount(0, at);
    }

    private static long count(String s, String sub) {
        if (sub.isEmpty()) {
            return s.codePointCount(0, s.length()) + 1L;
        }
        long n = 0;
        for (int at = s.indexOf(sub); at >= 0; at = s.indexOf(sub, at + sub.length())) {
            n++;
        }
        return n;
    }

    private static String join(String sep, Object[] args) {
        if (args.length != 1 || !(args[0] instanceof Iterable<?> items)) {
            throw new IllegalArgumentException("join() takes one iterable of strings");
        }
        StringBuilder out = new StringBuilder();
        boolean first = true;
        for (Object item : items) {
            if (!(item instanceof String str)) {
                throw new IllegalArgumentException("sequence item: expected str instance, "
                        + (item == null ? "NoneType" : item.getClass().getSimpleName()) + " found");
            }
            if (!first) {
                out.append(sep);
            }
            out.append(str);
            first = false;
        }
        return out.toString();
    }

    private static Object noArgs(String name, Object[] args, Object result) {
        if (args.length != 0) {
            throw new IllegalArgumentException(name + "() takes no arguments");
        }
        return result;
    }

    private static String optChars(String name, Object[] args) {
        if (args.length > 1) {
            throw new IllegalArgumentException(name + "() takes at most 1 argument");
        }
        return optString(name, args, 0);
    }

    private static String optString(String name, Object[] args, int i) {
        if (args.length <= i || args[i] == null) {
            return null;
        }
        if (args[i] instanceof String s) {
            return s;
        }
        throw new IllegalArgumentException(name + "() argument " + (i + 1) + " must be a string or None");
    }

    private static String string(String name, Object[] args, int i) {
        String s = optString(name, args, i);
        if (s == null) {
            throw new IllegalArgumentException(name + "() argument " + (i + 1) + " must be a string");
        }
        return s;
    }

    private static int optInt(String name, Object[] args, int i, int fallback) {
        if (args.length <= i || args[i] == null) {
            return fallback;
        }
        if (args[i] instanceof Number n) {
            return n.intValue();
        }
        throw new IllegalArgumentException(name + "() argument " + (i + 1) + " must be an integer");
    }
}
