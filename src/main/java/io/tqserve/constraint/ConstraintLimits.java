package io.tqserve.constraint;

/**
 * The budget of one constraint: what compiling a schema and computing its token masks may cost. Exceeding a bound
 * throws {@link ConstraintBudgetException} naming the schema keyword responsible (an API maps it to a 400).
 *
 * @param maxNodes          grammar nodes a schema may compile to
 * @param maxLexemeStates   states of one regular lexeme's automaton (a {@code format}, an integer range, a
 *                          {@code pattern})
 * @param maxEnumBytes      total bytes of the values of one {@code enum}
 * @param maxConfigurations parser configurations alive at once (ambiguous {@code anyOf} branches or optional
 *                          properties sharing a prefix each add one)
 * @param maxClosingBytes   length of the shortest text that completes a document (e.g. {@code minItems} times
 *                          the shortest item)
 * @param maxWhitespace     bytes of one run of JSON whitespace (where JSON allows whitespace)
 * @param maskCacheBytes    bytes of the per-constraint cache of lexeme masks (what a wide lexeme such as a string's
 *                          contents lets through, per lexeme state)
 * @param maskWork          trie nodes times configurations one token mask may visit
 * @param compileMillis     wall time of one compile
 */
public record ConstraintLimits(int maxNodes, int maxLexemeStates, long maxEnumBytes, int maxConfigurations,
        long maxClosingBytes, int maxWhitespace, long maskCacheBytes, long maskWork, long compileMillis) {
    /** Safe defaults: a schema within them compiles in milliseconds and small memory. */
    public static final ConstraintLimits DEFAULT = new ConstraintLimits(100_000, 5_000, 4L << 20, 512, 1L << 20, 32,
            16L << 20, 50_000_000L, 2_000);

    public ConstraintLimits {
        if (maxNodes < 1 || maxLexemeStates < 1 || maxEnumBytes < 1 || maxConfigurations < 1 || maxClosingBytes < 1
                || maxWhitespace < 0 || maskCacheBytes < 0 || maskWork < 1 || compileMillis < 1) {
            throw new IllegalArgumentException("constraint limits must be positive");
        }
    }
}
