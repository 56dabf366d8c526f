package io.tqserve.template;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Splits a template into tokens exactly as Jinja2's lexer does under transformers' settings
 * ({@code trim_blocks=True, lstrip_blocks=True}, {@code keep_trailing_newline=False}): text between tags with the
 * whitespace control of {@code -}, {@code +}, trim_blocks and lstrip_blocks already applied, comments dropped,
 * {@code raw} blocks turned into text, and the tokens of every <code>{{ }}</code> and <code>{% %}</code>.
 */
final class Lexer {

    enum Kind { TEXT, VAR_BEGIN, VAR_END, BLOCK_BEGIN, BLOCK_END, NAME, STRING, INT, FLOAT, OP, EOF }

    record Token(Kind kind, String text, Object value, int line) {
        boolean is(Kind k, String t) {
            return kind == k && text.equals(t);
        }

        boolean isName(String t) {
            return kind == Kind.NAME && text.equals(t);
        }

        boolean isOp(String t) {
            return kind == Kind.OP && text.equals(t);
        }
    }

    private static final Pattern RAW_BEGIN = Pattern.compile("\\{%([-+]?)\\s*raw\\s*(?:-%}\\s*|%})");
    private static final Pattern RAW_END = Pattern.compile(
            "\\{%([-+]?)\\s*endraw\\s*(?:\\+%}|-%}\\s*|%}\\n?)", Pattern.DOTALL);
    private static final Pattern FLOAT = Pattern.compile(
            "(?<!\\.)(\\d+_)*\\d+((\\.(\\d+_)*\\d+)?[eE][+\\-]?(\\d+_)*\\d+|\\.(\\d+_)*\\d+)");
    private static final Pattern INT = Pattern.compile(
            "(0[bB](_?[01])+|0[oO](_?[0-7])+|0[xX](_?[\\da-fA-F])+|[1-9](_?\\d)*|0(_?0)*)");
    private static final Pattern STRING = Pattern.compile(
            "'([^'\\\\]*(?:\\\\.[^'\\\\]*)*)'|\"([^\"\\\\]*(?:\\\\.[^\"\\\\]*)*)\"", Pattern.DOTALL);
    private static final String[] OPERATORS = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "~", "%",
        "[", "]", "(", ")", "{", "}", ">", "<", "=", ".", ":", "|", ",", ";"};

    private final String src;
    private final List<Token> out = new ArrayList<>();
    private int pos;
    private int line = 1;
    private boolean lineStarting = true;

    private Lexer(String source) {
        String s = source.replace("\r\n", "\n").replace('\r', '\n');
        if (s.endsWith("\n")) {
            s = s.substring(0, s.length() - 1);   // keep_trailing_newline=False
        }
        this.src = s;
    }

    static List<Token> tokenize(String source) {
        Lexer lexer = new Lexer(source);
        lexer.run();
        return lexer.out;
    }

    private void run() {
        while (pos < src.length()) {
            int open = nextTag(pos);
            if (open < 0) {
                emitText(src.substring(pos), line);
                line += count(src, pos, src.length());
                break;
            }
            char kind = src.charAt(open + 1);
            Matcher raw = kind == '%' ? RAW_BEGIN.matcher(src).region(open, src.length()) : null;
            boolean isRaw = raw != null && raw.lookingAt();
            String sign = open + 2 < src.length() && (src.charAt(open + 2) == '-' || src.charAt(open + 2) == '+')
                    ? String.valueOf(src.charAt(open + 2)) : "";
            if (isRaw) {
                sign = raw.group(1);
            }
            String text = strip(src.substring(pos, open), sign, kind != '{');
            int textLine = line;
            line += count(src, pos, open);
            emitText(text, textLine);
            if (isRaw) {
                rawBlock(raw.end());
            } else if (kind == '#') {
                comment(open + 2 + sign.length());
            } else {
                tag(open, kind, sign.length());
            }
        }
        out.add(new Token(Kind.EOF, "", null, line));
    }

    private int nextTag(int from) {
        int i = from;
        while ((i = src.indexOf('{', i)) >= 0 && i + 1 < src.length()) {
            char c = src.charAt(i + 1);
            if (c == '{' || c == '%' || c == '#') {
                return i;
            }
            i++;
        }
        return -1;
    }

    /** Jinja2's whitespace control for the text before a tag. */
    private String strip(String text, String sign, boolean lstripKind) {
        if (sign.equals("-")) {
            return Py.rstrip(text, null);
        }
        if (!sign.equals("+") && lstripKind) {
            int lpos = text.lastIndexOf('\n') + 1;
            if ((lpos > 0 || lineStarting) && lpos < text.length() && Py.isSpaceRun(text, lpos)) {
                return text.substring(0, lpos);
            }
        }
        return text;
    }

    private void emitText(String text, int textLine) {
        if (!text.isEmpty()) {
            out.add(new Token(Kind.TEXT, text, null, textLine));
        }
    }

    private void rawBlock(int start) {
        line += count(src, pos, start);
        Matcher end = RAW_END.matcher(src);
        int p = start;
        while (true) {
            int open = src.indexOf("{%", p);
            if (open < 0) {
                throw new TemplateException("Missing end of raw directive", line);
            }
            end.region(open, src.length());
            if (end.lookingAt()) {
                String sign = end.group(1);
                String body = strip(src.substring(start, open), sign, true);
                emitText(body, line);
                line += count(src, start, end.end());
                lineStarting = src.charAt(end.end() - 1) == '\n';
                pos = end.end();
                return;
            }
            p = open + 2;
        }
    }

    private void comment(int start) {
        int p = start;
        while (true) {
            int close = src.indexOf("#}", p);
            if (close < 0) {
                throw new TemplateException("Missing end of comment tag", line);
            }
            int endAt = close + 2;
            char before = close > start ? src.charAt(close - 1) : 0;
            if (before == '-' && close - 1 >= start) {
                endAt = skipSpace(endAt);
            } else if (before != '+' && endAt < src.length() && src.charAt(endAt) == '\n') {
                endAt++;
            }
            line += count(src, pos, endAt);
            lineStarting = src.charAt(endAt - 1) == '\n';
            pos = endAt;
            return;
        }
    }

    private int skipSpace(int i) {
        while (i < src.length() && Py.isSpace(src.charAt(i))) {
            i++;
        }
        return i;
    }

    private void tag(int open, char kind, int signLength) {
        boolean block = kind == '%';
        out.add(new Token(block ? Kind.BLOCK_BEGIN : Kind.VAR_BEGIN, block ? "{%" : "{{", null, line));
        int i = open + 2 + signLength;
        List<Character> balance = new ArrayList<>();
        while (true) {
            if (i >= src.length()) {
                throw new TemplateException("unexpected end of template, expected '" + (block ? "%}" : "}}") + "'",
                        line);
            }
            if (balance.isEmpty()) {
                int end = tagEnd(i, block);
                if (end >= 0) {
                    out.add(new Token(block ? Kind.BLOCK_END : Kind.VAR_END, block ? "%}" : "}}", null, line));
                    line += count(src, i, end);
                    lineStarting = src.charAt(end - 1) == '\n';
                    pos = end;
                    return;
                }
            }
            char c = src.charAt(i);
            if (Py.isSpace(c)) {
                if (c == '\n') {
                    line++;
                }
                i++;
                continue;
            }
            i = literal(i, balance);
        }
    }

    /** The end of a closing tag starting at i (its whitespace control applied), or -1. */
    private int tagEnd(int i, boolean block) {
        String close = block ? "%}" : "}}";
        if (src.startsWith("-" + close, i)) {
            return skipSpace(i + 3);
        }
        if (block && src.startsWith("+" + close, i)) {
            return i + 3;
        }
        if (src.startsWith(close, i)) {
            int end = i + 2;
            return block && end < src.length() && src.charAt(end) == '\n' ? end + 1 : end;
        }
        return -1;
    }

    private int literal(int i, List<Character> balance) {
        Matcher m = FLOAT.matcher(src).region(i, src.length());
        if (m.lookingAt()) {
            out.add(new Token(Kind.FLOAT, m.group(), Double.parseDouble(m.group().replace("_", "")), line));
            return m.end();
        }
        m = INT.matcher(src).region(i, src.length());
        if (m.lookingAt()) {
            String t = m.group().replace("_", "").toLowerCase();
            long v = t.startsWith("0x") ? Long.parseLong(t.substring(2), 16) : t.startsWith("0o")
                    ? Long.parseLong(t.substring(2), 8) : t.startsWith("0b") ? Long.parseLong(t.substring(2), 2)
                    : Long.parseLong(t);
            out.add(new Token(Kind.INT, m.group(), v, line));
            return m.end();
        }
        char c = src.charAt(i);
        if (Character.isLetter(c) || c == '_') {
            int j = i + 1;
            while (j < src.length() && isNamePart(src.charAt(j))) {
                j++;
            }
            out.add(new Token(Kind.NAME, src.substring(i, j), null, line));
            return j;
        }
        if (c == '\'' || c == '"') {
            m = STRING.matcher(src).region(i, src.length());
            if (!m.lookingAt()) {
                throw new TemplateException("unexpected char '" + c + "' at " + i, line);
            }
            String body = m.group().substring(1, m.group().length() - 1);
            out.add(new Token(Kind.STRING, m.group(), Py.unescape(body), line));
            line += count(body, 0, body.length());
            return m.end();
        }
        for (String op : OPERATORS) {
            if (src.startsWith(op, i)) {
                balance(op, balance);
                out.add(new Token(Kind.OP, op, null, line));
                return i + op.length();
            }
        }
        throw new TemplateException("unexpected char '" + c + "' at " + i, line);
    }

    private void balance(String op, List<Character> balance) {
        switch (op) {
            case "(" -> balance.add(')');
            case "[" -> balance.add(']');
            case "{" -> balance.add('}');
            case ")", "]", "}" -> {
                if (balance.isEmpty()) {
                    throw new TemplateException("unexpected '" + op + "'", line);
                }
                char expected = balance.removeLast();
                if (expected != op.charAt(0)) {
                    throw new TemplateException("unexpected '" + op + "', expected '" + expected + "'", line);
                }
            }
            default -> { }
        }
    }

    private static boolean isNamePart(char c) {
        return Character.isLetterOrDigit(c) || c == '_';
    }

    private static int count(String s, int from, int to) {
        int n = 0;
        for (int i = from; i < to; i++) {
            if (s.charAt(i) == '\n') {
                n++;
            }
        }
        return n;
    }
}
