package io.tqserve.backend.cpu;

import static io.tqserve.backend.cpu.VectorKernels.F;
import static io.tqserve.backend.cpu.VectorKernels.L;

import jdk.incubator.vector.FloatVector;

/**
 * The horizontal sums of {@link PackedGemm}'s outputs, sixteen at a time, in vector registers: the same additions
 * in the same order as {@link VectorKernels#sumLanes} (its scalar twin; {@code LaneSumsTest}), so the same bits.
 * sumLanes folds one output's L lanes in halves (lane k + lane k + L/2, then k + L/4, ..., 1); here each fold level
 * runs for all sixteen outputs at once: two vectors' halves are gathered by two two-table permutes
 * ({@code selectFrom}, one {@code vpermt2ps}) into one vector of lower halves and one of upper halves, and one add
 * folds both. Four levels (16 lanes) take 15 adds and 30 permutes for sixteen outputs where the scalar sums take
 * 16·16 loads and 16·15 adds: at 512 columns, where a group's tile runs only 16 steps per call, the scalar sums were a
 * large share of a multi-row pass. Only with 16 lanes ({@link #applies}); other widths keep the scalar sums.
 *
 * <p>Addition is commutative bit for bit (IEEE 754 round-to-nearest), and each output's lanes meet in exactly the
 * pairs and the order the scalar fold uses, so no result changes.
 */
final class LaneSums {
    /** Permute indexes of each level: lower and upper halves of each output's current lanes, two vectors as a table. */
    private static final FloatVector LO1 = index(16, false), HI1 = index(16, true);
    private static final FloatVector LO2 = index(8, false), HI2 = index(8, true);
    private static final FloatVector LO3 = index(4, false), HI3 = index(4, true);
    private static final FloatVector LO4 = index(2, false), HI4 = index(2, true);

    private LaneSums() {
    }

    /** Whether the vector sums apply: 16-lane float vectors. */
    static boolean applies() {
        return L == 16;
    }

    /**
     * Table indexes of one fold level whose inputs hold outputs of {@code s} lanes each: lane t of the result is
     * output t / (s/2)'s lane t % (s/2) (lower half) or that plus s/2 (upper half), in the concatenation of the two
     * input vectors.
     */
    private static FloatVector index(int s, boolean upper) {
        float[] v = new float[16];
        int h = s / 2;
        for (int t = 0; t < 16; t++) {
            v[t] = (t / h) * s + t % h + (upper ? h : 0);
        }
        return L == 16 ? FloatVector.fromArray(F, v, 0) : null;
    }

    /**
     * dst[dstOff + 4·i + q] = sumLanes(acc, a_i + q·L) for i in 0..3, q in 0..3: the sums of four runs of four
     * accumulator vectors each (a tile's four weight rows for one activation row); needs {@link #applies}. A run
     * repeated (the same offset twice) just computes its sums twice.
     */
    static void sums(float[] acc, int a0, int a1, int a2, int a3, float[] dst, int dstOff) {
        FloatVector v0 = FloatVector.fromArray(F, acc, a0);
        FloatVector v1 = FloatVector.fromArray(F, acc, a0 + 16);
        FloatVector v2 = FloatVector.fromArray(F, acc, a0 + 32);
        FloatVector v3 = FloatVector.fromArray(F, acc, a0 + 48);
        FloatVector v4 = FloatVector.fromArray(F, acc, a1);
        FloatVector v5 = FloatVector.fromArray(F, acc, a1 + 16);
        FloatVector v6 = FloatVector.fromArray(F, acc, a1 + 32);
        FloatVector v7 = FloatVector.fromArray(F, acc, a1 + 48);
        FloatVector v8 = FloatVector.fromArray(F, acc, a2);
        FloatVector v9 = FloatVector.fromArray(F, acc, a2 + 16);
        FloatVector v10 = FloatVector.fromArray(F, acc, a2 + 32);
        FloatVector v11 = FloatVector.fromArray(F, acc, a2 + 48);
        FloatVector v12 = FloatVector.fromArray(F, acc, a3);
        FloatVector v13 = FloatVector.fromArray(F, acc, a3 + 16);
        FloatVector v14 = FloatVector.fromArray(F, acc, a3 + 32);
        FloatVector v15 = FloatVector.fromArray(F, acc, a3 + 48);
        // level 1: lane k + lane k+8 of each output; two outputs per vector
        FloatVector b0 = LO1.selectFrom(v0, v1).add(HI1.selectFrom(v0, v1));
        FloatVector b1 = LO1.selectFrom(v2, v3).add(HI1.selectFrom(v2, v3));
        FloatVector b2 = LO1.selectFrom(v4, v5).add(HI1.selectFrom(v4, v5));
        FloatVector b3 = LO1.selectFrom(v6, v7).add(HI1.selectFrom(v6, v7));
        FloatVector b4 = LO1.selectFrom(v8, v9).add(HI1.selectFrom(v8, v9));
        FloatVector b5 = LO1.selectFrom(v10, v11).add(HI1.selectFrom(v10, v11));
        FloatVector b6 = LO1.selectFrom(v12, v13).add(HI1.selectFrom(v12, v13));
        FloatVector b7 = LO1.selectFrom(v14, v15).add(HI1.selectFrom(v14, v15));
        // level 2: k + k+4; four outputs per vector
        FloatVector c0 = LO2.selectFrom(b0, b1).add(HI2.selectFrom(b0, b1));
        FloatVector c1 = LO2.selectFrom(b2, b3).add(HI2.selectFrom(b2, b3));
        FloatVector c2 = LO2.selectFrom(b4, b5).add(HI2.selectFrom(b4, b5));
        FloatVector c3 = LO2.selectFrom(b6, b7).add(HI2.selectFrom(b6, b7));
        // level 3: k + k+2; eight outputs per vector
        FloatVector d0 = LO3.selectFrom(c0, c1).add(HI3.selectFrom(c0, c1));
        FloatVector d1 = LO3.selectFrom(c2, c3).add(HI3.selectFrom(c2, c3));
        // level 4: lane 0 + lane 1; sixteen outputs, in order
        FloatVector e = LO4.selectFrom(d0, d1).add(HI4.selectFrom(d0, d1));
        ((FloatVector) F.vectorType().cast(e)).intoArray(dst, dstOff);
    }
}
