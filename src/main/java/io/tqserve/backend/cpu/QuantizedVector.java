package io.tqserve.backend.cpu;


import io.tqserve.backend.DType;
import io.tqserve.backend.GroupQuant;
import io.tqserve.backend.Layouts;
import io.tqserve.backend.Matrix;
import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * Vector API kernels for group-affine 4-bit and 8-bit weights ({@link GroupQuant}): the codes are widened in
 * registers straight from the packed bytes, so a decode step streams each packed byte once and no dense copy of the
 * matrix ever exists. The scalar twin is {@link QuantizedScalar}; {@link QuantizedMatmul} chooses between them.
 *
 * <p>The affine form is factored per group: {@code Σ (s·q + b)·x = s·Σ q·x + b·Σ x}, so the inner loop is one
 * multiply-add per weight on the integer codes, the scale is applied once per group (a vector multiply-add into the
 * row's accumulator) and the bias once per row against the groups' sums of x, computed once per activation row
 * ({@link #groupSums}).
 *
 * <p>A load takes L little-endian ints, each holding P = 32/bits codes (code k of int j is column j·P + k of the
 * block); rather than interleave the codes again, the kernels work in their load order: within each block of P·L
 * columns, column j·P + k sits at position k·L + j. Code k is not shifted down to bit 0 but masked in place (one
 * AND), so its int is q·2^(k·bits), which converts to float exactly; the activations, permuted into the kernels'
 * order once per matmul ({@link #permute}), are scaled by 2^-(k·bits) to match, which is exact too (a power of two),
 * so the product, and every rounding after it, is the same as for q·x. Only the last code, which holds the int's
 * sign bit, is shifted down. Per weight that is an AND, a conversion and a multiply-add, against the bf16 kernel's
 * widening load, shift and multiply-add.
 *
 * <p>The scales of the four rows are read once per call into a float scratch and the bias terms computed before the
 * loop: a call per group in the loop (to read a bf16 scale) made C2 spill every vector register around it and cost
 * more than the multiply-adds. A batch of activation rows runs the same kernel per row against each block of four
 * weight rows (which then stays in the L1 cache), so every output has the same arithmetic whatever the batch and
 * batching never changes a result (as with the bf16 kernels). Straight-line code for the reason given in
 * {@link VectorKernels}; the loops are in {@link QuantizedLoops}.
 */
final class QuantizedVector {
    /**
     * The kernels' float species: the machine's preferred width capped at 256 bits. A block is one load of L ints
     * (8L codes at 4 bits), and a group must hold whole blocks: with 512-bit vectors a 4-bit block is 128 columns, so
     * groups of 64 (mlx-community's default) would fall to the scalar path, about 20 times slower in decode. On AMD
     * Zen 4, whose 512-bit operations issue as two 256-bit halves, 512-bit versions of these loops measured no faster
     * (docs/benchmarks-journal.md, quantized weights on the AVX-512 machine, 2026-12-01).
     */
    static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED.vectorBitSize() > 256
            ? FloatVector.SPECIES_256 : FloatVector.SPECIES_PREFERRED;
    /** Ints of the width of {@link #F}. */
    static final VectorSpecies<Integer> I = F.vectorBitSize() == 256 ? IntVector.SPECIES_256 : IntVector.SPECIES_128;
    /** Lanes of {@link #F}: 8 (AVX2, AVX-512) or 4 (128-bit vectors: NEON, SSE). */
    static final int L = F.length();
    /** The kernels need 128-bit or wider vectors ({@link #handles} adds the group sizes they take). */
    static final boolean WIDE = F.vectorBitSize() >= 128;

    private QuantizedVector() {
    }

    /**
     * Columns per block of the kernels' order: one load of L ints, 8L codes at 4 bits, 4L at 8 bits. A group must
     * hold whole blocks (4 bits on 256-bit vectors: groups of 64 or 128; narrower groups take the scalar path).
     */
    static int block(int bits) {
        return bits == 4 ? 8 * L : 4 * L;
    }

    /**
     * Whether a 4-bit block holds two groups (256-bit vectors: blocks of 64 columns, groups of 32); lanes [0, L/2) of
     * a block then hold the first group's codes and [L/2, L) the second's ({@link QuantizedLoops#loop2Q4Span2}).
     */
    static boolean span2(int bits, int groupSize) {
        return bits == 4 && block(4) == 2 * groupSize;
    }

    /**
     * Whether these kernels handle w: 4 or 8 bits, vectors of 128 bits or more, groups of whole blocks (or, at 4 bits,
     * blocks of two whole groups: {@link #span2}).
     */
    static boolean handles(Matrix w) {
        GroupQuant q = w.quant();
        return WIDE && q != null && (q.bits() == 4 || q.bits() == 8)
                && (q.groupSize() % block(q.bits()) == 0 || span2(q.bits(), q.groupSize()) && w.cols() % block(4) == 0);
    }

    /**
     * dst[dOff..dOff+n) = x[xOff..xOff+n) in the kernels' order for {@code bits}: within each block, column
     * {@code j·P + k} (code k of int j, P = 32/bits codes per int) moves to {@code k·L + j}, scaled by
     * {@code 2^-(k·bits)} for every k but the last (the codes the kernels mask in place).
     */
    static void permute(int bits, float[] x, int xOff, int n, float[] dst, int dOff) {
        int per = 32 / bits;
        int blk = block(bits);
        for (int b = 0; b < n; b += blk) {
            for (int k = 0; k < per; k++) {
                float unit = k == per - 1 ? 1f : Math.scalb(1f, -k * bits);
                for (int j = 0; j < L; j++) {
                    dst[dOff + b + k * L + j] = x[xOff + b + j * per + k] * unit;
                }
            }
        }
    }

    /** Per group of x[xOff..xOff+n) (column order), its sum in column order, into xsum[xsOff..]. */
    static void groupSums(float[] x, int xOff, int n, int groupSize, float[] xsum, int xsOff) {
        for (int g = 0; g < n / groupSize; g++) {
            float sum = 0;
            for (int i = xOff + g * groupSize, end = i + groupSize; i < end; i++) {
                sum += x[i];
            }
            xsum[xsOff + g] = sum;
        }
    }

    /**
     * The prologue of a call on rows row..row+3 (beyond count: the last row's again): their scales to
     * {@code sb[q·groups + g]} and their bias terms {@code Σ_g bias(r, g) · xsum[g]} to
     * {@code sb[4·groups + q]}, each as four multiply-add chains (group g into chain g mod 4) summed at the end.
     */
    static void prologue(Matrix w, int row, int count, float[] xsum, int xsOff, float[] sb) {
        GroupQuant q = w.quant();
        int groups = w.cols() / q.groupSize();
        MemorySegment ss = q.scales();
        MemorySegment bs = q.biases();
        DType t = q.scaleType();
        for (int r = 0; r < 4; r++) {
            long i = (long) (row + Math.min(r, count - 1)) * groups;
            // four chains, group g into chain g mod 4, summed as (z0 + z1) + (z2 + z3): the order of the repacked
            // rows' prologue (QuantizedPack#prologue), whose single chain per call was latency-bound
            float z0 = 0;
            float z1 = 0;
            float z2 = 0;
            float z3 = 0;
            if (t == DType.BF16) {
                for (int g = 0; g < groups; g++) {
                    sb[r * groups + g] = bf16(ss, i + g);
                }
                int g = 0;
                for (; g + 3 < groups; g += 4) {
                    z0 = Math.fma(bf16(bs, i + g), xsum[xsOff + g], z0);
                    z1 = Math.fma(bf16(bs, i + g + 1), xsum[xsOff + g + 1], z1);
                    z2 = Math.fma(bf16(bs, i + g + 2), xsum[xsOff + g + 2], z2);
                    z3 = Math.fma(bf16(bs, i + g + 3), xsum[xsOff + g + 3], z3);
                }
                z0 = g < groups ? Math.fma(bf16(bs, i + g), xsum[xsOff + g], z0) : z0;
                z1 = g + 1 < groups ? Math.fma(bf16(bs, i + g + 1), xsum[xsOff + g + 1], z1) : z1;
                z2 = g + 2 < groups ? Math.fma(bf16(bs, i + g + 2), xsum[xsOff + g + 2], z2) : z2;
            } else {
                for (int g = 0; g < groups; g++) {
                    sb[r * groups + g] = t.read(ss, i + g);
                }
                int g = 0;
                for (; g + 3 < groups; g += 4) {
                    z0 = Math.fma(t.read(bs, i + g), xsum[xsOff + g], z0);
                    z1 = Math.fma(t.read(bs, i + g + 1), xsum[xsOff + g + 1], z1);
                    z2 = Math.fma(t.read(bs, i + g + 2), xsum[xsOff + g + 2], z2);
                    z3 = Math.fma(t.read(bs, i + g + 3), xsum[xsOff + g + 3], z3);
                }
                z0 = g < groups ? Math.fma(t.read(bs, i + g), xsum[xsOff + g], z0) : z0;
                z1 = g + 1 < groups ? Math.fma(t.read(bs, i + g + 1), xsum[xsOff + g + 1], z1) : z1;
                z2 = g + 2 < groups ? Math.fma(t.read(bs, i + g + 2), xsum[xsOff + g + 2], z2) : z2;
            }
            sb[4 * groups + r] = (z0 + z1) + (z2 + z3);
        }
    }

    private static float bf16(MemorySegment m, long i) {
        return Float.intBitsToFloat((m.getAtIndex(Layouts.SHORT_LE, i) & 0xFFFF) << 16);
    }

    /**
     * Where the loops read the scales of block t of call row q: {@code sb[base + q·blocks + t]}. With one block per
     * group that is the prologue's layout (base 0), and with two groups per block ({@link #span2}) too (the loop reads
     * {@code sb[base + q·groups + 2t]} and the next); with more blocks than groups, the scales are first repeated per
     * block after the bias terms (base 4·groups + 4; sb must hold 4·groups + 4 + 4·blocks floats:
     * {@link #scratchSize}).
     */
    static int scales(float[] sb, int groups, int blocks) {
        if (blocks <= groups) {
            return 0;
        }
        int base = 4 * groups + 4;
        int per = blocks / groups;
        // straight-line stores per group for the usual widths: the form with an integer division per block took
        // about as long as the multiply-adds of an 8-bit call with groups of 64
        int at = base;
        for (int q = 0; q < 4; q++) {
            int from = q * groups;
            int to = from + groups;
            if (per == 2) {
                for (int g = from; g < to; g++, at += 2) {
                    float scale = sb[g];
                    sb[at] = scale;
                    sb[at + 1] = scale;
                }
            } else if (per == 4) {
                for (int g = from; g < to; g++, at += 4) {
                    float scale = sb[g];
                    sb[at] = scale;
                    sb[at + 1] = scale;
                    sb[at + 2] = scale;
                    sb[at + 3] = scale;
                }
            } else {
                for (int g = from; g < to; g++) {
                    for (int p = 0; p < per; p++) {
                        sb[at++] = sb[g];
                    }
                }
            }
        }
        return base;
    }

    /** Floats of scratch a call needs for an n-column matrix of these code bits and groups. */
    static int scratchSize(int bits, int n, int groupSize) {
        return 4 * (n / groupSize) + 4 + 4 * (n / block(bits));
    }

    /**
     * Up to four 4- or 8-bit rows of w (row .. row+count-1) times x (in the kernels' order: {@link #permute}):
     * out[outOff+q] = row (row+q) · x, with {@code xsum[xsOff + g]} the sum of x over group g and {@code sb} room
     * for {@link #scratchSize} floats (the rows' scales and bias terms: {@link #prologue}). See the class comment for
     * the arithmetic. Rows beyond count are computed on a copy of the last one and not written.
     */
    static void matvec(Matrix w, int row, int count, float[] x, int xOff, float[] xsum, int xsOff, float[] sb,
            float[] out, int outOff) {
        int n = w.cols();
        GroupQuant q = w.quant();
        long rb = q.rowBytes(n);
        int groups = n / q.groupSize();
        prologue(w, row, count, xsum, xsOff, sb);
        // the group loops read the prologue's scales as they are; the others need them repeated per block
        int base = QuantizedGroup8.applies(q.bits(), q.groupSize()) ? 0 : scales(sb, groups, n / block(q.bits()));
        long b0 = rb * row;
        long d1 = rb * (row + Math.min(1, count - 1)) - b0;
        long b2 = rb * (row + Math.min(2, count - 1));
        long d3 = rb * (row + Math.min(3, count - 1)) - b2;
        if (span2(q.bits(), q.groupSize())) {
            QuantizedLoops.loop2Q4Span2(w.data(), b0, d1, n, groups, base, x, xOff, sb, 0, count, out, outOff);
            if (count > 2) {
                QuantizedLoops.loop2Q4Span2(w.data(), b2, d3, n, groups, base, x, xOff, sb, 2, count, out, outOff);
            }
        } else if (QuantizedGroup8.applies(q.bits(), q.groupSize())) {
            QuantizedGroup8.loop2(w.data(), b0, d1, groups, x, xOff, sb, 0, count, out, outOff);
            if (count > 2) {
                QuantizedGroup8.loop2(w.data(), b2, d3, groups, x, xOff, sb, 2, count, out, outOff);
            }
        } else if (q.bits() == 4) {
            QuantizedLoops.loop2Q4(w.data(), b0, d1, n, groups, base, x, xOff, sb, 0, count, out, outOff);
            if (count > 2) {
                QuantizedLoops.loop2Q4(w.data(), b2, d3, n, groups, base, x, xOff, sb, 2, count, out, outOff);
            }
        } else {
            QuantizedLoops.loop2Q8(w.data(), b0, d1, n, groups, base, x, xOff, sb, 0, count, out, outOff);
            if (count > 2) {
                QuantizedLoops.loop2Q8(w.data(), b2, d3, n, groups, base, x, xOff, sb, 2, count, out, outOff);
            }
        }
    }

    /**
     * As {@link #matvec}, on four rows (row a multiple of 4) of a matrix of {@code bits} repacked at load
     * ({@link QuantizedPack#pack}). Same arithmetic, so the same bits.
     */
    static void matvecPacked(QuantizedPack p, int bits, int row, int n, float[] x, int xOff, float[] xsum,
            int xsOff, float[] sb, float[] out, int outOff) {
        int groups = p.prologue(row, n, xsum, xsOff, sb);
        int base = QuantizedGroup8.applies(bits, p.groupSize()) ? 0 : scales(sb, groups, n / block(bits));
        long pairA = row * p.rowBytes();
        long pairB = pairA + 2 * p.rowBytes();
        if (span2(bits, p.groupSize())) {
            QuantizedLoops.loop2Q4Span2Packed(p.codes(), pairA, n, groups, base, x, xOff, sb, 0, 4, out, outOff);
            QuantizedLoops.loop2Q4Span2Packed(p.codes(), pairB, n, groups, base, x, xOff, sb, 2, 4, out, outOff);
        } else if (QuantizedGroup8.applies(bits, p.groupSize())) {
            QuantizedGroup8.loop2Packed(p.codes(), pairA, groups, x, xOff, sb, 0, out, outOff);
            QuantizedGroup8.loop2Packed(p.codes(), pairB, groups, x, xOff, sb, 2, out, outOff);
        } else if (bits == 4) {
            QuantizedLoops.loop2Q4Packed(p.codes(), pairA, n, groups, base, x, xOff, sb, 0, 4, out, outOff);
            QuantizedLoops.loop2Q4Packed(p.codes(), pairB, n, groups, base, x, xOff, sb, 2, 4, out, outOff);
        } else {
            QuantizedLoops.loop2Q8Packed(p.codes(), pairA, n, groups, base, x, xOff, sb, 0, 4, out, outOff);
            QuantizedLoops.loop2Q8Packed(p.codes(), pairB, n, groups, base, x, xOff, sb, 2, 4, out, outOff);
        }
    }

}
