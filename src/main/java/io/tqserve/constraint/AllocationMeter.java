package io.tqserve.constraint;

/**
 * How many bytes the compile running on the current thread has allocated so far: what a compile's memory budget
 * ({@link ConstraintLimits#compileBytes()}) is charged against, everything the compile's thread allocated since the
 * compile began (all the schemas of a tool set, the constraint built from them). Allocation bounds the heap a
 * compile can grow by whatever it builds, so the budget holds without knowing the compiler's data structures. The
 * JVM's per-thread counter lives outside {@code java.base} (HotSpot's {@code com.sun.management.ThreadMXBean}), so
 * the server passes a meter in; {@link #NONE} measures nothing and leaves compiles bounded by their other budgets.
 */
@FunctionalInterface
public interface AllocationMeter {
    /** Measures nothing: {@link #allocatedBytes()} is -1. */
    AllocationMeter NONE = () -> -1;

    /** Bytes the current thread's compile has allocated since it began, or -1 when not measured. */
    long allocatedBytes();
}
