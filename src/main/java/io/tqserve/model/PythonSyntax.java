package io.tqserve.model;

import com.hubspot.jinjava.el.ExtendedSyntaxBuilder;
import com.hubspot.jinjava.el.ext.AstRangeBracket;
import com.hubspot.jinjava.el.ext.ExtendedParser;
import com.hubspot.jinjava.objects.collections.PyList;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import jinjava.de.odysseus.el.tree.Bindings;
import jinjava.de.odysseus.el.tree.impl.Builder;
import jinjava.de.odysseus.el.tree.impl.Parser;
import jinjava.de.odysseus.el.tree.impl.ast.AstNode;
import jinjava.javax.el.ELContext;
import jinjava.javax.el.ELException;

/**
 * Two places where Jinjava's expression parser disagrees with Jinja2 on syntax real chat templates use, fixed by
 * rewriting each expression's text before Jinjava parses it (its parser has no hook for either):
 * <ul>
 *   <li>Slices. Jinjava parses only {@code x[a:b]}, so {@code messages[::-1]} — how Qwen2.5 and Qwen3 templates walk
 *       the conversation backwards — is a syntax error, and its two-part slices do not follow Python on strings
 *       (code points, out-of-range bounds). {@code x[a:b:c]} becomes {@code x[a:tqserve_slice_step(b, c)]}, and
 *       every slice node evaluates with Python's rules, taking the step from the {@link Step} that function
 *       returns.</li>
 *   <li>Keyword arguments. Jinjava's {@code name=value} operator binds tighter than arithmetic, so Qwen3's
 *       {@code namespace(..., last_query_index=messages|length - 1)} computes {@code (name=4) - 1} and fails.
 *       Each keyword argument's value is parenthesised: {@code name=(value)}.</li>
 * </ul>
 */
final class PythonSyntax {

    /** Name of the global function the rewrite calls; registered by {@link ChatTemplate}. */
    static final String STEP_FUNCTION = "tqserve_slice_step";

    /** A slice's stop and step, carried through Jinjava's two-part slice node. */
    record Step(Object stop, Object step) {
    }

    private PythonSyntax() {
    }

    /** The global function behind {@link #STEP_FUNCTION}. */
    public static Step step(Object stop, Object step) {
        return new Step(stop, step);
    }

    /** Tree builder for Jinjava's expression factory: Jinjava's extended syntax plus the rewrites above. */
    static final class SyntaxBuilder extends ExtendedSyntaxBuilder {
        private static final long serialVersionUID = 1L;

        SyntaxBuilder(Feature... features) {
            super(features);
        }

        @Override
        protected Parser createParser(String expression) {
            return new SliceParser(this, rewrite(expression));
        }
    }

    private static final class SliceParser extends ExtendedParser {
        SliceParser(Builder context, String input) {
            super(context, input);
        }

        @Override
        protected AstRangeBracket createAstRangeBracket(AstNode base, AstNode rangeStart, AstNode rangeMax,
                boolean lvalue, boolean strict) {
            return new SliceNode(base, rangeStart, rangeMax, lvalue, strict);
        }
    }

    private static final class SliceNode extends AstRangeBracket {
        SliceNode(AstNode base, AstNode rangeStart, AstNode rangeMax, boolean lvalue, boolean strict) {
            super(base, rangeStart, rangeMax, lvalue, strict, false);
        }

        @Override
        public Object eval(Bindings bindings, ELContext context) {
            Object base = prefix.eval(bindings, context);
            Object start = property == null ? null : property.eval(bindings, context);
            Object stop = rangeMax == null ? null : rangeMax.eval(bindings, context);
            Object step = null;
            if (stop instanceof Step s) {
                stop = s.stop();
                step = s.step();
            }
            return slice(base, start, stop, step);
        }
    }

    /** {@code base[start:stop:step]} with Python's semantics; lists give a list, strings a string (by code point). */
    static Object slice(Object base, Object start, Object stop, Object step) {
        if (base instanceof String s) {
            int[] cps = s.codePoints().toArray();
            StringBuilder out = new StringBuilder();
            for (int i : indices(cps.length, start, stop, step)) {
                out.appendCodePoint(cps[i]);
            }
            return out.toString();
        }
        List<Object> items = new ArrayList<>();
        switch (base) {
            case Collection<?> c -> items.addAll(c);
            case Iterable<?> it -> it.forEach(items::add);
            case Object[] array -> items.addAll(List.of(array));
            case null -> throw new ELException("'NoneType' object is not subscriptable");
            default -> throw new ELException("'" + base.getClass().getSimpleName() + "' object is not subscriptable");
        }
        List<Object> out = new ArrayList<>();
        for (int i : indices(items.size(), start, stop, step)) {
            out.add(items.get(i));
        }
        return new PyList(out);
    }

    /** The indices Python's {@code slice(start, stop, step).indices(length)} walks. */
    static int[] indices(int length, Object startArg, Object stopArg, Object stepArg) {
        long step = stepArg == null ? 1 : index(stepArg);
        if (step == 0) {
            throw new ELException("slice step cannot be zero");
        }
        long lower = step < 0 ? -1 : 0;
        long upper = step < 0 ? length - 1 : length;
        long start = startArg == null ? (step < 0 ? upper : lower) : clamp(index(startArg), length, lower, upper);
        long stop = stopArg == null ? (step < 0 ? lower : upper) : clamp(index(stopArg), length, lower, upper);
        int count = (int) (step > 0 ? Math.max(0, (stop - start + step - 1) / step)
                : Math.max(0, (start - stop - step - 1) / -step));
        int[] out = new int[count];
        for (int k = 0; k < count; k++) {
            out[k] = (int) (start + k * step);
        }
        return out;
    }

    private static long clamp(long i, int length, long lower, long upper) {
        if (i < 0) {
            i += length;
        }
        return Math.min(Math.max(i, lower), upper);
    }

    private static long index(Object value) {
        return switch (value) {
            case Number n when !(n instanceof Double || n instanceof Float) -> n.longValue();
            case Boolean b -> b ? 1 : 0;
            default -> throw new ELException("slice indices must be integers or None, not " + value);
        };
    }

    /** Both rewrites. */
    static String rewrite(String expression) {
        return parenthesiseKeywordValues(rewriteSteps(expression));
    }

    /**
     * Wraps the value of every keyword argument of a call in parentheses ({@code f(a=x - 1)} to
     * {@code f(a=(x - 1))}), leaving string literals and comparison operators alone.
     */
    static String parenthesiseKeywordValues(String s) {
        int n = s.length();
        char[] kinds = new char[n + 1];
        boolean[] valueOpen = new boolean[n + 1];
        int[] argStart = new int[n + 1];
        StringBuilder out = new StringBuilder(n + 16);
        int depth = 0;
        char quote = 0;
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            if (quote != 0) {
                out.append(c);
                if (c == '\\' && i + 1 < n) {
                    out.append(s.charAt(++i));
                } else if (c == quote) {
                    quote = 0;
                }
                continue;
            }
            boolean inCall = depth > 0 && kinds[depth - 1] == '(';
            switch (c) {
                case '\'', '"' -> quote = c;
                case '[', '(', '{' -> {
                    kinds[depth] = c;
                    valueOpen[depth] = false;
                    argStart[depth] = out.length() + 1;
                    depth++;
                }
                case ',' -> {
                    if (inCall) {
                        closeValue(out, valueOpen, depth - 1);
                        argStart[depth - 1] = out.length() + 1;
                    }
                }
                case ']', ')', '}' -> {
                    if (depth > 0) {
                        depth--;
                        if (c == ')' && kinds[depth] == '(') {
                            closeValue(out, valueOpen, depth);
                        }
                    }
                }
                case '=' -> {
                    char prev = i > 0 ? s.charAt(i - 1) : ' ';
                    char next = i + 1 < n ? s.charAt(i + 1) : ' ';
                    if (inCall && !valueOpen[depth - 1] && "=!<>".indexOf(prev) < 0 && next != '='
                            && isIdentifier(out.substring(argStart[depth - 1]).strip())) {
                        out.append("=(");
                        valueOpen[depth - 1] = true;
                        continue;
                    }
                }
                default -> {
                }
            }
            out.append(c);
        }
        return out.toString();
    }

    private static void closeValue(StringBuilder out, boolean[] valueOpen, int frame) {
        if (valueOpen[frame]) {
            out.append(')');
            valueOpen[frame] = false;
        }
    }

    private static boolean isIdentifier(String s) {
        if (s.isEmpty() || !Character.isJavaIdentifierStart(s.charAt(0))) {
            return false;
        }
        for (int i = 1; i < s.length(); i++) {
            if (!Character.isJavaIdentifierPart(s.charAt(i))) {
                return false;
            }
        }
        return true;
    }

    /**
     * Rewrites every three-part slice {@code [a:b:c]} of an expression to {@code [a:tqserve_slice_step(b, c)]},
     * leaving string literals alone; empty parts become {@code none}.
     */
    static String rewriteSteps(String expression) {
        String current = expression;
        // Each pass rewrites one slice; the rewritten bracket has a single top-level colon, so this terminates.
        for (int[] slice = firstThreePartSlice(current); slice != null; slice = firstThreePartSlice(current)) {
            int colon1 = slice[0];
            int colon2 = slice[1];
            int close = slice[2];
            String stop = current.substring(colon1 + 1, colon2).strip();
            String step = current.substring(colon2 + 1, close).strip();
            current = current.substring(0, colon1 + 1) + STEP_FUNCTION + "(" + (stop.isEmpty() ? "none" : stop) + ", "
                    + (step.isEmpty() ? "none" : step) + ")" + current.substring(close);
        }
        return current;
    }

    /** {colon1, colon2, close} of the first-closing bracket with exactly two top-level colons, or null. */
    private static int[] firstThreePartSlice(String s) {
        int n = s.length();
        int[] firstColon = new int[n];
        int[] secondColon = new int[n];
        int[] colonCount = new int[n];
        char[] kinds = new char[n];
        int depth = 0;
        char quote = 0;
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            if (quote != 0) {
                if (c == '\\') {
                    i++;
                } else if (c == quote) {
                    quote = 0;
                }
                continue;
            }
            switch (c) {
                case '\'', '"' -> quote = c;
                case '[', '(', '{' -> {
                    kinds[depth] = c;
                    colonCount[depth] = 0;
                    depth++;
                }
                case ':' -> {
                    if (depth > 0 && kinds[depth - 1] == '[') {
                        int d = depth - 1;
                        if (colonCount[d] == 0) {
                            firstColon[d] = i;
                        } else if (colonCount[d] == 1) {
                            secondColon[d] = i;
                        }
                        colonCount[d]++;
                    }
                }
                case ']', ')', '}' -> {
                    if (depth > 0) {
                        depth--;
                        if (c == ']' && kinds[depth] == '[' && colonCount[depth] == 2) {
                            return new int[] {firstColon[depth], secondColon[depth], i};
                        }
                    }
                }
                default -> {
                }
            }
        }
        return null;
    }
}
