package io.tqserve.constraint;

/**
 * The budget of one constraint: what compiling a schema and computing its token masks may cost. Exceeding a bound
 * throws {@link ConstraintBudgetException} naming the schema keyword responsible (an API maps it to a 400 before
 * generation, and ends only that request during it).
 *
 * <p>Mask work is counted in units of one vocabulary-trie node visited by a lexeme or by the parser, one parser
 * step or closing bound computed, one byte of a token checked against a tight budget. Every inner loop of a mask
 * charges its units as it goes, so a mask stops within a few thousand units of its budget whatever the schema.
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
 * @param maskCacheBytes    bytes of the per-constraint cache of lexeme masks (what a lexeme lets through, per
 *                          lexeme state)
 * @param maskWork          work units one token mask may take
 * @param compileMillis     time of one compile: the compiling thread's CPU time (wall time where the JVM does not
 *                          measure it)
 * @param requestWork       work units all the masks of one request may take together
 * @param maskMillis        wall time of one token mask (a backstop to {@code maskWork} on a starved machine)
 */
public record ConstraintLimits(int maxNodes, int maxLexemeStates, long maxEnumBytes, int maxConfigurations,
        long maxClosingBytes, int maxWhitespace, long maskCacheBytes, long maskWork, long compileMillis,
        long requestWork, long maskMillis) {
    /**
     * Default work of one mask: some 30 walks of a 150k-token vocabulary by a lexeme (a walk is one unit per trie
     * node, about 0.33 M units and 3 to 10 ms of one core), a few hundred ms at worst.
     */
    public static final long DEFAULT_MASK_WORK = 10_000_000L;
    /** Default work of one request's masks together (a few seconds of one core at worst). */
    public static final long DEFAULT_REQUEST_WORK = 200_000_000L;
    /** Default wall time of one mask. */
    public static final long DEFAULT_MASK_MILLIS = 1_000;

    /** Safe defaults: a schema within them compiles in milliseconds and small memory. */
    public static final ConstraintLimits DEFAULT = new ConstraintLimits(100_000, 5_000, 4L << 20, 512, 1L << 20, 32,
            16L << 20, DEFAULT_MASK_WORK, 2_000, DEFAULT_REQUEST_WORK, DEFAULT_MASK_MILLIS);

    public ConstraintLimits {
        if (maxNodes < 1 || maxLexemeStates < 1 || maxEnumBytes < 1 || maxConfigurations < 1 || maxClosingBytes < 1
                || maxWhitespace < 0 || maskCacheBytes < 0 || maskWork < 1 || compileMillis < 1 || requestWork < 1
                || maskMillis < 1) {
            throw new IllegalArgumentException("constraint limits must be positive");
        }
    }

    /** The compile limits with the default request work and mask time. */
    public ConstraintLimits(int maxNodes, int maxLexemeStates, long maxEnumBytes, int maxConfigurations,
            long maxClosingBytes, int maxWhitespace, long maskCacheBytes, long maskWork, long compileMillis) {
        this(maxNodes, maxLexemeStates, maxEnumBytes, maxConfigurations, maxClosingBytes, maxWhitespace,
                maskCacheBytes, maskWork, compileMillis, Math.max(maskWork, DEFAULT_REQUEST_WORK),
                DEFAULT_MASK_MILLIS);
    }

    /** These limits with another compile time. */
    public ConstraintLimits withCompileMillis(long millis) {
        return new ConstraintLimits(maxNodes, maxLexemeStates, maxEnumBytes, maxConfigurations, maxClosingBytes,
                maxWhitespace, maskCacheBytes, maskWork, millis, requestWork, maskMillis);
    }

    /** These limits with other mask budgets. */
    public ConstraintLimits withMaskBudget(long maskWork, long requestWork, long maskMillis) {
        return new ConstraintLimits(maxNodes, maxLexemeStates, maxEnumBytes, maxConfigurations, maxClosingBytes,
                maxWhitespace, maskCacheBytes, maskWork, compileMillis, requestWork, maskMillis);
    }
}
