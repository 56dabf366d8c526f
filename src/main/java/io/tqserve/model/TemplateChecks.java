package io.tqserve.model;

import com.hubspot.jinjava.Jinjava;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Static checks of a template's source for constructs Jinjava would render differently from Jinja2 without
 * reporting an error; {@link ChatTemplate} refuses such a template at load.
 */
final class TemplateChecks {

    /** Tags that open a block closed by {@code end<name>} ({@code set} only in its block form). */
    private static final Set<String> BLOCK_TAGS = Set.of("for", "if", "macro", "call", "filter", "with",
            "autoescape", "block");

    /** The inside of one <code>{{ }}</code> or <code>{% %}</code>, string literals blanked. */
    private record Part(boolean tag, List<String> words) {
    }

    private TemplateChecks() {
    }

    /**
     * What a template uses that this engine would silently render differently, as readable descriptions:
     * <ul>
     *   <li>filters and tests Jinjava does not have — it renders an unknown filter as an empty value;</li>
     *   <li>loop filters (<code>{% for x in xs if cond %}</code>: Jinjava ignores the {@code if} and iterates over
     *       everything) and recursive loops;</li>
     *   <li>{@code {% else %}} of a for loop, which Jinjava renders after every iteration.</li>
     * </ul>
     */
    static List<String> unsupported(String source, Jinjava jinjava) {
        List<String> found = new ArrayList<>();
        List<String> blocks = new ArrayList<>();   // open block tags, innermost last
        for (Part part : parts(source)) {
            List<String> words = part.words();
            for (int i = 0; i + 1 < words.size(); i++) {
                String name = words.get(i + 1);
                if (words.get(i).equals("|") && isName(name) && jinjava.getGlobalContext().getFilter(name) == null) {
                    found.add("filter '" + name + "'");
                }
                if (words.get(i).equals("is")) {
                    if (name.equals("not") && i + 2 < words.size()) {
                        name = words.get(i + 2);
                    }
                    if (isName(name) && jinjava.getGlobalContext().getExpTest(name) == null) {
                        found.add("test '" + name + "'");
                    }
                }
            }
            if (part.tag() && !words.isEmpty()) {
                checkTag(words, blocks, found);
            }
        }
        return found;
    }

    private static void checkTag(List<String> words, List<String> blocks, List<String> found) {
        String tag = words.getFirst();
        if (tag.equals("for")) {
            checkForLoop(words, found);
        }
        if (BLOCK_TAGS.contains(tag) || (tag.equals("set") && !words.contains("="))) {
            blocks.add(tag);
        } else if (tag.startsWith("end") && !blocks.isEmpty() && blocks.getLast().equals(tag.substring(3))) {
            blocks.removeLast();
        } else if (tag.equals("else") && !blocks.isEmpty() && blocks.getLast().equals("for")) {
            found.add("{% else %} of a for loop");
        }
    }

    /** Flags a top-level {@code if} or {@code recursive} after the {@code in} of a {@code for} tag. */
    private static void checkForLoop(List<String> words, List<String> found) {
        int depth = 0;
        boolean iterable = false;
        for (String w : words.subList(1, words.size())) {
            switch (w) {
                case "(", "[", "{" -> depth++;
                case ")", "]", "}" -> depth--;
                default -> {
                    if (depth == 0 && w.equals("in")) {
                        iterable = true;
                    } else if (depth == 0 && iterable && w.equals("if")) {
                        found.add("a for-loop filter ({% for x in xs if cond %})");
                        return;
                    } else if (depth == 0 && iterable && w.equals("recursive")) {
                        found.add("a recursive for loop");
                        return;
                    }
                }
            }
        }
    }

    private static boolean isName(String word) {
        return Character.isJavaIdentifierStart(word.charAt(0));
    }

    /** Every <code>{{ }}</code> and <code>{% %}</code> of a template (raw blocks skipped), as words. */
    private static List<Part> parts(String source) {
        List<Part> out = new ArrayList<>();
        int i = 0;
        while (true) {
            int open = source.indexOf('{', i);
            if (open < 0 || open + 1 >= source.length()) {
                return out;
            }
            char kind = source.charAt(open + 1);
            if (kind != '{' && kind != '%') {
                i = open + 1;
                continue;
            }
            String close = kind == '{' ? "}}" : "%}";
            StringBuilder body = new StringBuilder();
            char quote = 0;
            int k = open + 2;
            for (; k < source.length() && (quote != 0 || !source.startsWith(close, k)); k++) {
                char c = source.charAt(k);
                if (quote != 0) {
                    if (c == '\\') {
                        k++;
                    } else if (c == quote) {
                        quote = 0;
                    }
                } else if (c == '\'' || c == '"') {
                    quote = c;
                    body.append(" '' ");
                } else {
                    body.append(c);
                }
            }
            List<String> words = words(body.toString());
            if (!words.isEmpty() && (words.getFirst().equals("-") || words.getFirst().equals("+"))) {
                words = words.subList(1, words.size());
            }
            if (!words.isEmpty() && (words.getLast().equals("-") || words.getLast().equals("+"))) {
                words = words.subList(0, words.size() - 1);
            }
            i = k + 2;
            if (kind == '%' && words.size() == 1 && words.getFirst().equals("raw")) {
                int end = source.indexOf("endraw", i);
                i = end < 0 ? source.length() : source.indexOf("%}", end) < 0 ? source.length()
                        : source.indexOf("%}", end) + 2;
                continue;
            }
            out.add(new Part(kind == '%', words));
        }
    }

    /** Identifiers and single symbols of an expression, in order. */
    private static List<String> words(String expression) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < expression.length(); ) {
            char c = expression.charAt(i);
            if (Character.isWhitespace(c)) {
                i++;
            } else if (Character.isJavaIdentifierStart(c)) {
                int j = i;
                while (j < expression.length() && Character.isJavaIdentifierPart(expression.charAt(j))) {
                    j++;
                }
                out.add(expression.substring(i, j));
                i = j;
            } else {
                out.add(String.valueOf(c));
                i++;
            }
        }
        return out;
    }
}
