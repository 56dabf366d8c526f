package io.tqserve.model;

/**
 * Jinja2's source-level whitespace rules, applied to a template before Jinjava parses it:
 * <ul>
 *   <li>newlines ({@code \r\n}, {@code \r}) become {@code \n} and one trailing newline is dropped
 *       ({@code keep_trailing_newline=False}); Jinjava keeps both as written;</li>
 *   <li>{@code lstrip_blocks}: spaces and tabs between the start of a line and a block tag or comment are removed.
 *       Jinjava's own lstrip also removes them in the middle of a line ({@code a {% if x %}} loses its space), so
 *       it is switched off and done here;</li>
 *   <li>{@code trim_blocks}: the first newline after a block tag or comment is removed (done here too, so both
 *       rules see the same line starts, as in Jinja2's lexer);</li>
 *   <li>the {@code +} modifiers ({@code {%+}, {@code +%}}), which turn these off for one tag, are honoured and
 *       removed, since Jinjava does not know them.</li>
 * </ul>
 * The {@code -} modifiers are left to Jinjava. Content inside <code>{{ }}</code>, tags and string literals, and
 * between {@code {% raw %}} and {@code {% endraw %}}, is copied unchanged.
 */
final class TemplateWhitespace {

    private TemplateWhitespace() {
    }

    static String apply(String source) {
        String s = source.replace("\r\n", "\n").replace('\r', '\n');
        if (s.endsWith("\n")) {
            s = s.substring(0, s.length() - 1);
        }
        StringBuilder out = new StringBuilder(s.length());
        int lineStart = 0;   // index in out where the current output line starts
        int i = 0;
        int n = s.length();
        while (i < n) {
            if (s.startsWith("{{", i)) {
                int end = tagEnd(s, i + 2, "}}");
                out.append(s, i, end);
                i = end;
                continue;
            }
            boolean block = s.startsWith("{%", i);
            if (!block && !s.startsWith("{#", i)) {
                char c = s.charAt(i++);
                out.append(c);
                if (c == '\n') {
                    lineStart = out.length();
                }
                continue;
            }
            int end = block ? tagEnd(s, i + 2, "%}") : commentEnd(s, i + 2);
            String tag = s.substring(i, end);
            char open = tag.length() > 2 ? tag.charAt(2) : ' ';
            char close = tag.length() > 4 ? tag.charAt(tag.length() - 3) : ' ';
            if (open != '-' && open != '+' && isBlank(out, lineStart)) {
                out.setLength(lineStart);
            }
            if (open == '+') {
                tag = tag.substring(0, 2) + tag.substring(3);
            }
            if (close == '+') {
                tag = tag.substring(0, tag.length() - 3) + tag.substring(tag.length() - 2);
            }
            out.append(tag);
            i = end;
            if (close != '-' && close != '+' && i < n && s.charAt(i) == '\n') {
                i++;
                lineStart = out.length();   // the newline was eaten, but a new line starts here (Jinja2's rule)
            }
            if (block && tagName(tag).equals("raw")) {
                int endRaw = findEndRaw(s, i);
                String raw = s.substring(i, endRaw);
                out.append(raw);
                if (raw.indexOf('\n') >= 0) {
                    lineStart = out.lastIndexOf("\n") + 1;
                }
                i = endRaw;
            }
        }
        return out.toString();
    }

    private static boolean isBlank(StringBuilder out, int from) {
        for (int k = from; k < out.length(); k++) {
            char c = out.charAt(k);
            if (c != ' ' && c != '\t') {
                return false;
            }
        }
        return true;
    }

    /** Index just past {@code close}, skipping string literals; the end of the text if unclosed. */
    private static int tagEnd(String s, int from, String close) {
        char quote = 0;
        for (int k = from; k < s.length(); k++) {
            char c = s.charAt(k);
            if (quote != 0) {
                if (c == '\\') {
                    k++;
                } else if (c == quote) {
                    quote = 0;
                }
            } else if (c == '\'' || c == '"') {
                quote = c;
            } else if (s.startsWith(close, k)) {
                return k + close.length();
            }
        }
        return s.length();
    }

    private static int commentEnd(String s, int from) {
        int k = s.indexOf("#}", from);
        return k < 0 ? s.length() : k + 2;
    }

    private static String tagName(String tag) {
        String body = tag.substring(2, tag.length() - 2).strip();
        if (body.startsWith("-") || body.startsWith("+")) {
            body = body.substring(1);
        }
        if (body.endsWith("-") || body.endsWith("+")) {
            body = body.substring(0, body.length() - 1);
        }
        return body.strip();
    }

    /** Start of the {@code {% endraw %}} tag closing a raw block that begins at {@code from}. */
    private static int findEndRaw(String s, int from) {
        for (int k = s.indexOf("{%", from); k >= 0; k = s.indexOf("{%", k + 2)) {
            int end = tagEnd(s, k + 2, "%}");
            if (tagName(s.substring(k, end)).equals("endraw")) {
                return k;
            }
        }
        return s.length();
    }
}
