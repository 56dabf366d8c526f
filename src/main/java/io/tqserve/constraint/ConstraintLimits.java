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
 * @param compileBytes      bytes one compile may allocate, as {@code allocation} counts them on the compiling
 *                          thread, checked where the compile checks its time (beyond it: the keyword compiled then)
 * @param allocation        what counts the compiling thread's allocations ({@link AllocationMeter#NONE}: nothing,
 *                          so {@code compileBytes} is not enforced)
 */
public record ConstraintLimits(int maxNodes, int maxLexemeStates, long maxEnumBytes, int maxConfigurations,
        long maxClosingBytes, int maxWhitespace, long maskCacheBytes, long maskWork, long compileMillis,
        long requestWork, long maskMillis, long compileBytes, AllocationMeter allocation) {
    /**
     * Default work of one mask: some 30 walks of a 150k-token vocabulary by a lexeme (a walk is one unit per trie
     * node, about 0.33 M units and 3 to 10 ms of one core), a few hundred ms at worst.
     */
    public static final long DEFAULT_MASK_WORK = 10_000_000L;
    /** Default work of one request's masks together (a few seconds of one core at worst). */
    public static final long DEFAULT_REQUEST_WORK = 200_000_000L;
    /** Default wall time of one mask. */
    public static final long DEFAULT_MASK_MILLIS = 1_000;
    /**
     * Default allocation of one compile, garbage included: twice the most a MaskBench schema that passes allocates
     * (1,013 MB, Github_ultra o65325, 1.5 s of compile; of 11,305 schemas with Qwen3's vocabulary,
     * docs/benchmarks-journal.md, 2026-12-04). A compile allocates about 0.7 GB per second of its time budget; the
     * bound stops one that allocates much faster (a runaway merge held 5-6 GB live within its 2 s).
     */
    public static final long DEFAULT_COMPILE_BYTES = 2L << 30;

    /** Safe defaults: a schema within them compiles in milliseconds and small memory. */
    public static final ConstraintLimits DEFAULT = new ConstraintLimits(100_000, 5_000, 4L << 20, 512, 1L << 20, 32,
            16L << 20, DEFAULT_MASK_WORK, 2_000, DEFAULT_REQUEST_WORK, DEFAULT_MASK_MILLIS, DEFAULT_COMPILE_BYTES,
            AllocationMeter.NONE);

    public ConstraintLimits {
        if (maxNodes < 1 || maxLexemeStates < 1 || maxEnumBytes < 1 || maxConfigurations < 1 || maxClosingBytes < 1
                || maxWhitespace < 0 || maskCacheBytes < 0 || maskWork < 1 || compileMillis < 1 || requestWork < 1
                || maskMillis < 1 || compileBytes < 1 || allocation == null) {
            throw new IllegalArgumentException("constraint limits must be positive");
        }
    }

    /** The limits with the default compile memory, not measured ({@link AllocationMeter#NONE}). */
    public ConstraintLimits(int maxNodes, int maxLexemeStates, long maxEnumBytes, int maxConfigurations,
            long maxClosingBytes, int maxWhitespace, long maskCacheBytes, long maskWork, long compileMillis,
            long requestWork, long maskMillis) {
        this(maxNodes, maxLexemeStates, maxEnumBytes, maxConfigurations, maxClosingBytes, maxWhitespace,
                maskCacheBytes, maskWork, compileMillis, requestWork, maskMillis, DEFAULT_COMPILE_BYTES,
                AllocationMeter.NONE);
    }

    /** The compile limits with the default request work and mask time. */
    public ConstraintLimits(int maxNodes, int maxLexemeStates, long maxEnumBytes, int maxConfigurations,
            long maxClosingBytes, int maxWhitespace, long maskCacheBytes, long maskWork, long compileMillis) {
        this(maxNodes, maxLexemeStates, maxEnumBytes, maxConfigurations, maxClosingBytes, maxWhitespace,
                maskCacheBytes, maskWork, compileMillis, Math.max(maskWork, DEFAULT_REQUEST_WORK),
                DEFAULT_MASK_MILLIS, DEFAULT_COMPILE_BYTES, AllocationMeter.NONE);
    }

    /** These limits with another compile time. */
    public ConstraintLimits withCompileMillis(long millis) {
        return new ConstraintLimits(maxNodes, maxLexemeStates, maxEnumBytes, maxConfigurations, maxClosingBytes,
                maxWhitespace, maskCacheBytes, maskWork, millis, requestWork, maskMillis, compileBytes, allocation);
    }

    /** These limits with another compile memory budget, counted by {@code meter}. */
    public ConstraintLimits withCompileBytes(long bytes, AllocationMeter meter) {
        return new ConstraintLimits(maxNodes, maxLexemeStates, maxEnumBytes, maxConfigurations, maxClosingBytes,
                maxWhitespace, maskCacheBytes, maskWork, compileMillis, requestWork, maskMillis, bytes, meter);
    }

    /** These limits with other mask budgets. */
    public ConstraintLimits withMaskBudget(long maskWork, long requestWork, long maskMillis) {
        return new ConstraintLimits(maxNodes, maxLexemeStates, maxEnumBytes, maxConfigurations, maxClosingBytes,
                maxWhitespace, maskCacheBytes, maskWork, compileMillis, requestWork, maskMillis, compileBytes,
                allocation);
    }
}
