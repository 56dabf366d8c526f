package io.tqserve.backend.cpu;

import static io.tqserve.backend.cpu.QuantizedVector.L;
import static io.tqserve.backend.cpu.VectorKernels.LE;

import io.tqserve.backend.DType;
import io.tqserve.backend.GroupQuant;
import io.tqserve.backend.Layouts;
import io.tqserve.backend.Matrix;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * A quantized matrix repacked at load for the kernels of {@link QuantizedVector} ({@link #pack}, made by
 * {@link CpuBackend#prepare}): per pair of rows, the two rows' loads of L ints side by side ({@code 8·L} bytes per
 * step), the pairs in row order, so the kernels read one contiguous stream per thread (as the bf16 decode kernel
 * does) instead of four streams a row apart; the scales as floats in row order ({@code scales[r·groups + g]}) and the
 * biases as floats with the four rows of a block side by side per group ({@code biases[(r/4)·4·groups + 4g + r%4]};
 * for {@link QuantizedInt8}'s 8-bit kernels the codes centred, {@code q - 128} as signed bytes, and the biases
 * {@code b + 128·s}),
 * so a call's prologue is a copy and one 4-lane multiply-add per group.
 */
record QuantizedPack(MemorySegment codes, MemorySegment scales, MemorySegment biases, long rowBytes, int groupSize) {
    /** Four floats: the bias terms of a block of four rows, one lane per row. */
    private static final VectorSpecies<Float> F4 = FloatVector.SPECIES_128;

    /**
     * Repacks the blocks of four rows [fromBlock, toBlock) of w (which {@link QuantizedVector#handles}, rows in fours)
     * into dst, from {@link #allocate} (callers split the work); {@code int8}: in the form of {@link QuantizedInt8}'s
     * kernels.
     */
    static void pack(Matrix w, QuantizedPack dst, int fromBlock, int toBlock, boolean int8) {
        GroupQuant q = w.quant();
        int n = w.cols();
        int groups = n / q.groupSize();
        long rb = q.rowBytes(n);
        long chunk = 4L * L;
        MemorySegment src = w.data();
        DType t = q.scaleType();
        for (long j = fromBlock; j < toBlock; j++) {
            long base = j * 4 * rb;
            for (int pair = 0; pair < 2; pair++) {
                long pb = base + pair * 2 * rb;
                for (long c = 0; c < rb; c += chunk) {
                    MemorySegment.copy(src, pb + c, dst.codes(), pb + 2 * c, chunk);
                    MemorySegment.copy(src, pb + rb + c, dst.codes(), pb + 2 * c + chunk, chunk);
                }
                if (int8 && q.bits() == 8) {
                    // the int8 kernels' 8-bit codes centred once here (q - 128, as a signed byte), not per load
                    MemorySegment codes = dst.codes();
                    for (long c = pb, end = pb + 2 * rb; c < end; c += 8) {
                        codes.set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, c, codes.get(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, c) ^ 0x8080808080808080L);
                    }
                }
            }
            for (int r = 0; r < 4; r++) {
                long row = 4 * j + r;
                for (int g = 0; g < groups; g++) {
                    float s = t.read(q.scales(), row * groups + g);
                    float b = t.read(q.biases(), row * groups + g);
                    dst.scales().setAtIndex(Layouts.FLOAT_LE, row * groups + g, s);
                    // the int8 kernels' 8-bit codes are centred: their bias carries 128 * scale (QuantizedInt8#bias)
                    dst.biases().setAtIndex(Layouts.FLOAT_LE, 4 * j * groups + 4L * g + r,
                            int8 ? QuantizedInt8.bias(b, s, q.bits()) : b);
                }
            }
        }
    }

    /** Memory for the pack of w (filled by {@link #pack}). */
    static QuantizedPack allocate(Matrix w, Arena arena) {
        GroupQuant q = w.quant();
        long rb = q.rowBytes(w.cols());
        long scales = (long) w.rows() * (w.cols() / q.groupSize()) * Float.BYTES;
        return new QuantizedPack(arena.allocate(rb * w.rows(), 64), arena.allocate(scales, 64),
                arena.allocate(scales, 64), rb, q.groupSize());
    }

    /**
     * {@link QuantizedVector#prologue} for rows row..row+3 of this pack: the same values in sb (scales copied, the
     * bias terms by the same multiply-adds in the same order, four rows in the lanes of one 128-bit vector). Returns
     * the groups.
     */
    int prologue(int row, int n, float[] xsum, int xsOff, float[] sb) {
        int groups = n / groupSize;
        MemorySegment.copy(scales, Layouts.FLOAT_LE, (long) row * groups * Float.BYTES, sb, 0, 4 * groups);
        MemorySegment bs = biases;
        long b = (long) row * groups * Float.BYTES;
        // four chains, group g into chain g mod 4 (QuantizedVector#prologue): one chain of dependent multiply-adds
        // per call was latency-bound (13 % of the kernels' CPU samples in a 4-bit decode profile; 10 % now)
        FloatVector z0 = FloatVector.zero(F4);
        FloatVector z1 = FloatVector.zero(F4);
        FloatVector z2 = FloatVector.zero(F4);
        FloatVector z3 = FloatVector.zero(F4);
        int g = 0;
        for (; g + 3 < groups; g += 4) {
            long at = b + 16L * g;
            z0 = FloatVector.fromMemorySegment(F4, bs, at, LE).fma(FloatVector.broadcast(F4, xsum[xsOff + g]), z0);
            z1 = FloatVector.fromMemorySegment(F4, bs, at + 16, LE).fma(FloatVector.broadcast(F4, xsum[xsOff + g + 1]), z1);
            z2 = FloatVector.fromMemorySegment(F4, bs, at + 32, LE).fma(FloatVector.broadcast(F4, xsum[xsOff + g + 2]), z2);
            z3 = FloatVector.fromMemorySegment(F4, bs, at + 48, LE).fma(FloatVector.broadcast(F4, xsum[xsOff + g + 3]), z3);
        }
        if (g < groups) {
            z0 = FloatVector.fromMemorySegment(F4, bs, b + 16L * g, LE).fma(FloatVector.broadcast(F4, xsum[xsOff + g]), z0);
        }
        if (g + 1 < groups) {
            z1 = FloatVector.fromMemorySegment(F4, bs, b + 16L * (g + 1), LE)
                    .fma(FloatVector.broadcast(F4, xsum[xsOff + g + 1]), z1);
        }
        if (g + 2 < groups) {
            z2 = FloatVector.fromMemorySegment(F4, bs, b + 16L * (g + 2), LE)
                    .fma(FloatVector.broadcast(F4, xsum[xsOff + g + 2]), z2);
        }
        // typed as F4's vector class before the store (QuantizedLoops' class comment)
        ((FloatVector) F4.vectorType().cast(z0.add(z1).add(z2.add(z3)))).intoArray(sb, 4 * groups);
        return groups;
    }
}
