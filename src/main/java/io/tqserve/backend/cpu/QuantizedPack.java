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
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * A quantized matrix repacked at load for the kernels of {@link QuantizedVector} ({@link #pack}, made by
 * {@link CpuBackend#prepare}): per pair of rows, the two rows' loads of L ints side by side ({@code 8·L} bytes per
 * step), the pairs in row order, so the kernels read one contiguous stream per thread (as the bf16 decode kernel
 * does) instead of four streams a row apart; the scales in row order ({@code scales[r·groups + g]}) and the biases
 * with the four rows of a block side by side per group ({@code biases[(r/4)·4·groups + 4g + r%4]}); for
 * {@link QuantizedInt8}'s 8-bit kernels the codes centred, {@code q - 128} as signed bytes, and the biases
 * {@code b + 128·s} ({@code centred}). Scales and biases stored in bf16 stay bf16 ({@code bf16}: a decode step then
 * reads as many bytes as the stored layout holds; widening bf16 to float is exact, and the 8-bit bias terms are
 * formed in the prologue by the same float operations as at load before); f16 and f32 ones are widened to floats
 * here (f16 has no vector widening), the 8-bit bias terms formed once.
 */
record QuantizedPack(MemorySegment codes, MemorySegment scales, MemorySegment biases, long rowBytes, int groupSize,
        boolean bf16, boolean centred) {
    /** Four floats: the bias terms of a block of four rows, one lane per row. */
    private static final VectorSpecies<Float> F4 = FloatVector.SPECIES_128;
    /** Four bf16 values and their widening. */
    private static final VectorSpecies<Short> S4 = ShortVector.SPECIES_64;
    private static final VectorSpecies<Integer> I4 = IntVector.SPECIES_128;

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
                    long biasAt = 4 * j * groups + 4L * g + r;
                    if (dst.bf16()) {
                        // the stored bits as they are (the prologue widens them, exactly)
                        dst.scales().setAtIndex(Layouts.SHORT_LE, row * groups + g,
                                q.scales().getAtIndex(Layouts.SHORT_LE, row * groups + g));
                        dst.biases().setAtIndex(Layouts.SHORT_LE, biasAt,
                                q.biases().getAtIndex(Layouts.SHORT_LE, row * groups + g));
                        continue;
                    }
                    float s = t.read(q.scales(), row * groups + g);
                    float b = t.read(q.biases(), row * groups + g);
                    dst.scales().setAtIndex(Layouts.FLOAT_LE, row * groups + g, s);
                    // the int8 kernels' 8-bit codes are centred: their bias carries 128 * scale (QuantizedInt8#bias)
                    dst.biases().setAtIndex(Layouts.FLOAT_LE, biasAt, dst.centred() ? QuantizedInt8.bias(b, s, 8) : b);
                }
            }
        }
    }

    /**
     * Memory for the pack of w (filled by {@link #pack}); {@code int8}: for {@link QuantizedInt8}'s kernels (whose
     * 8-bit biases carry {@code 128·s}).
     */
    static QuantizedPack allocate(Matrix w, Arena arena, boolean int8) {
        GroupQuant q = w.quant();
        long rb = q.rowBytes(w.cols());
        boolean bf16 = q.scaleType() == DType.BF16;
        long scales = (long) w.rows() * (w.cols() / q.groupSize()) * (bf16 ? Short.BYTES : Float.BYTES);
        return new QuantizedPack(arena.allocate(rb * w.rows(), 64), arena.allocate(scales, 64),
                arena.allocate(scales, 64), rb, q.groupSize(), bf16, int8 && q.bits() == 8);
    }

    /**
     * {@link QuantizedVector#prologue} for rows row..row+3 of this pack: the same values in sb (scales copied, the
     * bias terms by the same multiply-adds in the same order, four rows in the lanes of one 128-bit vector). Returns
     * the groups.
     */
    int prologue(int row, int n, float[] xsum, int xsOff, float[] sb) {
        int groups = n / groupSize;
        if (bf16) {
            return prologueBf16(row, groups, xsum, xsOff, sb);
        }
        MemorySegment.copy(scales, Layouts.FLOAT_LE, (long) row * groups * Float.BYTES, sb, 0, 4 * groups);
        biasTerms(row, groups, xsum, xsOff, sb, sb, 4 * groups);
        return groups;
    }

    /**
     * The bias terms of {@link #prologue} alone: for rows row..row+3 against one activation row's group sums
     * ({@code xsum[xsOff..]}), {@code Σ_g bias(r, g)·xsum[g]} to {@code dst[at + r]}, by the prologue's operations
     * (it calls this); {@code sb} holds the rows' scales as the prologue leaves them (read for centred bf16 codes).
     * The multi-row passes ({@link QuantizedTiles}) take the scales once per weight row and this per activation row.
     */
    void biasTerms(int row, int groups, float[] xsum, int xsOff, float[] sb, float[] dst, int at) {
        if (bf16) {
            biasTermsBf16(row, groups, xsum, xsOff, sb, dst, at);
            return;
        }
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
            long at4 = b + 16L * g;
            z0 = FloatVector.fromMemorySegment(F4, bs, at4, LE).fma(FloatVector.broadcast(F4, xsum[xsOff + g]), z0);
            z1 = FloatVector.fromMemorySegment(F4, bs, at4 + 16, LE).fma(FloatVector.broadcast(F4, xsum[xsOff + g + 1]), z1);
            z2 = FloatVector.fromMemorySegment(F4, bs, at4 + 32, LE).fma(FloatVector.broadcast(F4, xsum[xsOff + g + 2]), z2);
            z3 = FloatVector.fromMemorySegment(F4, bs, at4 + 48, LE).fma(FloatVector.broadcast(F4, xsum[xsOff + g + 3]), z3);
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
        ((FloatVector) F4.vectorType().cast(z0.add(z1).add(z2.add(z3)))).intoArray(dst, at);
    }

    /**
     * {@link #prologue} on bf16 scales and biases: the scales widened into sb (a shift per lane, exact), then the same
     * four chains of 4-lane multiply-adds on the widened biases ({@code b + 128·s} for centred 8-bit codes, the
     * operations {@link QuantizedInt8#bias} does), so the same bits as the float pack.
     */
    private int prologueBf16(int row, int groups, float[] xsum, int xsOff, float[] sb) {
        int count = 4 * groups;
        long s0 = (long) row * groups * Short.BYTES;
        int i = 0;
        for (int step = VectorKernels.S.length(); i + step <= count; i += step) {
            ((IntVector) ShortVector.fromMemorySegment(VectorKernels.S, scales, s0 + 2L * i, LE)
                    .convertShape(VectorOperators.S2I, VectorKernels.I, 0)).lanewise(VectorOperators.LSHL, 16)
                    .reinterpretAsFloats().intoArray(sb, i);
        }
        for (; i < count; i++) {
            sb[i] = DType.BF16.read(scales, row * (long) groups + i);
        }
        biasTermsBf16(row, groups, xsum, xsOff, sb, sb, count);
        return groups;
    }

    /** {@link #biasTerms} on bf16 biases. */
    private void biasTermsBf16(int row, int groups, float[] xsum, int xsOff, float[] sb, float[] dst, int at) {
        long b = (long) row * groups * Short.BYTES;
        // the lanes' scales for centred codes: row r's scale of group g is sb[r·groups + g]
        int[] rows = centred ? new int[] {0, groups, 2 * groups, 3 * groups} : null;
        FloatVector z0 = FloatVector.zero(F4);
        FloatVector z1 = FloatVector.zero(F4);
        FloatVector z2 = FloatVector.zero(F4);
        FloatVector z3 = FloatVector.zero(F4);
        int g = 0;
        for (; g + 3 < groups; g += 4) {
            z0 = bias4(b, g, sb, rows).fma(FloatVector.broadcast(F4, xsum[xsOff + g]), z0);
            z1 = bias4(b, g + 1, sb, rows).fma(FloatVector.broadcast(F4, xsum[xsOff + g + 1]), z1);
            z2 = bias4(b, g + 2, sb, rows).fma(FloatVector.broadcast(F4, xsum[xsOff + g + 2]), z2);
            z3 = bias4(b, g + 3, sb, rows).fma(FloatVector.broadcast(F4, xsum[xsOff + g + 3]), z3);
        }
        if (g < groups) {
            z0 = bias4(b, g, sb, rows).fma(FloatVector.broadcast(F4, xsum[xsOff + g]), z0);
        }
        if (g + 1 < groups) {
            z1 = bias4(b, g + 1, sb, rows).fma(FloatVector.broadcast(F4, xsum[xsOff + g + 1]), z1);
        }
        if (g + 2 < groups) {
            z2 = bias4(b, g + 2, sb, rows).fma(FloatVector.broadcast(F4, xsum[xsOff + g + 2]), z2);
        }
        // typed as F4's vector class before the store (QuantizedLoops' class comment)
        ((FloatVector) F4.vectorType().cast(z0.add(z1).add(z2.add(z3)))).intoArray(dst, at);
    }

    /**
     * The four rows' bias of group g, widened from bf16 at byte offset b of the block; with rows (centred 8-bit
     * codes) {@code b + 128f·s} per lane, the operations of {@link QuantizedInt8#bias}, the scales from sb.
     */
    private FloatVector bias4(long b, int g, float[] sb, int[] rows) {
        FloatVector bias = ((IntVector) ShortVector.fromMemorySegment(S4, biases, b + 8L * g, LE)
                .convertShape(VectorOperators.S2I, I4, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
        return rows == null ? bias : bias.add(FloatVector.fromArray(F4, sb, g, rows, 0).mul(128f));
    }
}
