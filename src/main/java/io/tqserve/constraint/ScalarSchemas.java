package io.tqserve.constraint;

import dk.brics.automaton.Automaton;
import dk.brics.automaton.RegExp;
import io.tqserve.constraint.Grammar.Lex;
import io.tqserve.constraint.Grammar.Node;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The grammar nodes of strings (length bounds as a counted lexeme; {@code format} and {@code pattern} as one
 * lexeme over the string's bytes), integers and numbers (ranges as digit automata) for {@link SchemaCompiler}.
 */
final class ScalarSchemas {
    private ScalarSchemas() {
    }

    /**
     * A string of {@code m}'s keywords. The lexemes of strings with a {@code format}, {@code pattern} or excluded
     * strings are kept in {@code cache} by those keywords and the length bounds (a compile meets the same string
     * schema in many places: a {@code date-time} in every member that has one, a pattern in every {@code oneOf}
     * branch that excludes the others); format-only lexemes also in one cache for the process (a few formats and
     * bounds; their automata are fixed).
     */
    static Node string(Map<?, ?> m, String at, ConstraintLimits limits, Runnable check,
            Map<String, Optional<Lexeme>> cache) {
        int min = Scalars.count(m, "minLength", at, 0);
        int max = Scalars.count(m, "maxLength", at, -1);
        if (max >= 0 && max < min) {
            throw new UnsupportedSchemaException("maxLength", "maxLength < minLength at " + at);
        }
        Object format = m.get("format") instanceof String f && SchemaKeywords.NUMERIC_FORMATS.contains(f) ? null
                : m.get("format");
        Object pattern = m.get("pattern");
        boolean negated = m.containsKey(Negation.NOT_STRINGS) || m.containsKey(Negation.NOT_PATTERNS);
        if (format != null || pattern != null || negated) {
            String key = Literals.json(Arrays.asList(format, pattern, min, max, m.get(Negation.NOT_STRINGS),
                    m.get(Negation.NOT_PATTERNS), limits.maxLexemeStates()));
            boolean shared = pattern == null && !negated;
            Optional<Lexeme> x = shared ? FORMATS.get(key) : null;
            if (x == null) {
                x = cache.get(key);
            }
            if (x == null) {
                Automaton excluded = Negation.excludedStrings(m, at, limits);
                if (format == null && pattern == null && excluded == null) {
                    return plain(min, max);
                }
                x = Optional.ofNullable(patterned(format, pattern, excluded, min, max, at, limits, check));
                cache.put(key, x);
                if (shared && FORMATS.size() < MAX_SHARED_FORMATS) {
                    FORMATS.putIfAbsent(key, x);
                }
            }
            return x.isEmpty() ? Grammar.fail() : Grammar.seq(Grammar.lit("\""), new Lex(x.get(), 0, -1),
                    Grammar.lit("\""));
        }
        return plain(min, max);
    }

    private static final int MAX_SHARED_FORMATS = 256;
    private static final Map<String, Optional<Lexeme>> FORMATS = new ConcurrentHashMap<>();

    private static Node plain(int min, int max) {
        if (max == 0) {
            return Grammar.lit("\"\"");
        }
        Node quote = Grammar.lit("\"");
        return Grammar.seq(quote, new Lex(JsonLexemes.STRING_CHAR, min, max), quote);
    }

    /**
     * The lexeme of a string's contents with a {@code format} and/or a {@code pattern}: the intersection of their
     * character automata, the complement of {@code excluded} (strings a {@code not} rules out; may be null) and the
     * length bounds, as one lexeme over the bytes of the string's contents; null when no string is left.
     */
    static Lexeme patterned(Object format, Object pattern, Automaton excluded, int min, int max, String at,
            ConstraintLimits limits, Runnable check) {
        Automaton chars = null; // DFAs only below: products of DFAs stay deterministic (no subset construction)
        String keyword = "pattern";
        String name = "";
        boolean minimal = true; // a format's or a pattern's automaton alone is minimal already
        if (format != null) {
            chars = Formats.chars(String.valueOf(format));
            if (chars == null) {
                throw new UnsupportedSchemaException("format", "string format '" + format + "' (at " + at
                        + ") is not supported by constrained decoding (supported: "
                        + String.join(", ", new java.util.TreeSet<>(Formats.SUPPORTED)) + ")");
            }
            keyword = "format";
            name = "format " + format;
        }
        if (pattern != null) {
            if (!(pattern instanceof String p)) {
                throw new UnsupportedSchemaException("pattern", "pattern at " + at + " must be a string");
            }
            Automaton search = EcmaRegex.search(p, limits.maxLexemeStates());
            minimal = chars == null;
            chars = chars == null ? search : chars.intersection(search);
            keyword = "pattern";
            name = (name.isEmpty() ? "" : name + ", ") + "pattern /" + p + "/";
        }
        if (excluded != null) {
            // not (pattern or enum): the strings outside the excluded ones (a complement of a DFA stays small)
            chars = CharNfa.determinize((chars == null ? EcmaRegex.anyString() : chars).intersection(
                    excluded.complement()), limits.maxLexemeStates(), "the automaton of not", "not");
            minimal = false;
            keyword = format == null && pattern == null ? "not" : keyword;
            name = (name.isEmpty() ? "" : name + ", ") + "not";
        }
        check.run();
        if (min > 0 || max >= 0) {
            int longest = chars.isFinite() ? longest(chars) : Integer.MAX_VALUE;
            boolean fits = max < 0 || longest <= max;
            boolean longEnough = min == 0 || chars.getShortestExample(true) != null
                    && chars.getShortestExample(true).length() >= min;
            if (!fits || !longEnough) {
                if (Math.max(min, max) > EcmaRegex.MAX_REPEAT) {
                    throw new ConstraintBudgetException(max > EcmaRegex.MAX_REPEAT ? "maxLength" : "minLength",
                            "length bounds above " + EcmaRegex.MAX_REPEAT + " beside a pattern or format (at " + at
                            + ") are beyond the compile budget");
                }
                long product = (long) chars.getNumberOfStates() * ((max < 0 ? min : max) + 1);
                if (product > 8L * limits.maxLexemeStates()) {
                    throw new ConstraintBudgetException(max >= 0 ? "maxLength" : "minLength", "length bounds "
                            + "beside a pattern or format (at " + at + ") would make an automaton of up to " + product
                            + " states (at most " + 8L * limits.maxLexemeStates() + ")");
                }
                chars = chars.intersection(EcmaRegex.lengths(min, max));
                minimal = false;
            }
        }
        if (!minimal) {
            chars = CharDfa.minimal(chars);
        }
        if (chars.isEmpty()) {
            return null;
        }
        ByteNfa bytes = JsonStringContent.nfa(chars, 16 * limits.maxLexemeStates(), "the automaton of " + name,
                keyword);
        return JsonLexemes.of(name, bytes, limits.maxLexemeStates(), keyword);
    }

    /** Length of the longest string of a finite automaton. */
    static int longest(Automaton a) {
        Set<String> all = a.getFiniteStrings(10_000);
        if (all == null) {
            return Integer.MAX_VALUE;
        }
        int best = 0;
        for (String s : all) {
            best = Math.max(best, s.length());
        }
        return best;
    }

    private static final Automaton INTEGER = new RegExp("-?(0|[1-9][0-9]{0,18})").toAutomaton();
    private static final Automaton NUMBER = new RegExp(
            "-?(0|[1-9][0-9]{0,18})(\\.[0-9]{1,20})?([eE][+\\-]?[0-9]{1,3})?").toAutomaton();
    static final Lexeme INTEGER_LEXEME = JsonLexemes.of("integer", INTEGER, 1000, "type");
    static final Lexeme NUMBER_LEXEME = JsonLexemes.of("number", NUMBER, 1000, "type");

    private static final List<String> NUMERIC_KEYWORDS = List.of("minimum", "exclusiveMinimum", "maximum",
            "exclusiveMaximum", "multipleOf", "format");

    /**
     * An integer ({@code integer}) or a number of {@code m}'s keywords, its lexeme kept in {@code cache} (the
     * compile's, never shared between compiles) by those keywords: a schema repeats its bounds ({@code minimum: 0},
     * an {@code int32}) in many places, and each range is a product of automata and a minimisation.
     */
    static Node numeric(boolean integer, Map<?, ?> m, String at, ConstraintLimits limits,
            Map<String, Optional<Lexeme>> cache) {
        List<Object> key = new ArrayList<>(List.of(integer ? "integer" : "number", limits.maxLexemeStates()));
        boolean any = false;
        for (String k : NUMERIC_KEYWORDS) {
            any |= m.containsKey(k);
            key.add(m.get(k));
        }
        if (!any) {
            return integer ? integer(m, at, limits) : number(m, at, limits);
        }
        String k = Literals.json(key);
        Optional<Lexeme> x = cache.get(k);
        if (x == null) {
            Node n = integer ? integer(m, at, limits) : number(m, at, limits);
            x = n instanceof Lex l && l.min == 0 && l.max == -1 ? Optional.of(l.lexeme) : Optional.empty();
            if (x.isEmpty()) {
                return n;
            }
            cache.put(k, x);
        }
        return new Lex(x.get(), 0, -1);
    }

    static Node integer(Map<?, ?> m, String at, ConstraintLimits limits) {
        Automaton a;
        if (!m.containsKey("minimum") && !m.containsKey("maximum") && !m.containsKey("exclusiveMinimum")
                && !m.containsKey("exclusiveMaximum") && !"int32".equals(m.get("format"))) {
            if (m.get("format") != null && !"int64".equals(m.get("format"))) {
                throw new UnsupportedSchemaException("format", "integer format '" + m.get("format") + "' (at " + at
                        + ") is not supported (supported: int32, int64)");
            }
            if (!m.containsKey("multipleOf")) {
                return new Lex(INTEGER_LEXEME, 0, -1);
            }
            a = INTEGER.clone();
        } else {
            a = Scalars.integer(m, at);
        }
        String keyword = "minimum";
        if (m.containsKey("multipleOf")) {
            a = a.intersection(NumberRanges.multipleOf(m.get("multipleOf"), at, limits.maxLexemeStates()));
            keyword = "multipleOf";
        }
        return new Lex(JsonLexemes.of("integer range", a, limits.maxLexemeStates(), keyword), 0, -1);
    }

    static Node number(Map<?, ?> m, String at, ConstraintLimits limits) {
        Automaton a = Scalars.number(m, at, limits.maxLexemeStates());
        if (a == null) {
            return new Lex(NUMBER_LEXEME, 0, -1);
        }
        return new Lex(JsonLexemes.of("number range", a, limits.maxLexemeStates(),
                m.containsKey("multipleOf") ? "multipleOf" : "minimum"), 0, -1);
    }
}
