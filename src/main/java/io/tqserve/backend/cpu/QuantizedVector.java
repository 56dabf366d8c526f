package io.tqserve.backend.cpu;

import static io.tqserve.backend.cpu.VectorKernels.F;
import static io.tqserve.backend.cpu.VectorKernels.I;
import static io.tqserve.backend.cpu.VectorKernels.L;
import static io.tqserve.backend.cpu.VectorKernels.LANES;
import static io.tqserve.backend.cpu.VectorKernels.LE;
import static io.tqserve.backend.cpu.VectorKernels.sumLanes;

import io.tqserve.backend.DType;
import io.tqserve.backend.GroupQuant;
import io.tqserve.backend.Layouts;
import io.tqserve.backend.Matrix;
import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShuffle;

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
 * {@link VectorKernels}.
 */
final class QuantizedVector {
    /**
     * For each p (a power of two up to L), the p shuffles that spread L values to p·L, each repeated p times:
     * lane i of shuffle j takes lane j·L/p + i/p.
     */
    @SuppressWarnings("unchecked")
    private static final VectorShuffle<Float>[][] SPREAD = new VectorShuffle[L + 1][];

    static {
        for (int p = 2; p <= L; p *= 2) {
            SPREAD[p] = new VectorShuffle[p];
            for (int j = 0; j < p; j++) {
                int first = j * L / p;
                int times = p;
                SPREAD[p][j] = VectorShuffle.fromOp(F, i -> first + i / times);
            }
        }
    }

    /** The kernels need 256-bit or wider vectors (their blocks of P·L columns fit the group sizes then). */
    static final boolean WIDE = F.vectorBitSize() >= 256;

    private QuantizedVector() {
    }

    /**
     * Columns per block of the kernels' order: one load of L ints, 8L codes at 4 bits, 4L at 8 bits. A group must
     * hold whole blocks (4 bits on 256-bit vectors: groups of 64 or 128; narrower groups take the scalar path).
     */
    static int block(int bits) {
        return bits == 4 ? 8 * L : 4 * L;
    }

    /** Whether these kernels handle w: 4 or 8 bits, vectors of 256 bits or more, groups of whole blocks. */
    static boolean handles(Matrix w) {
        GroupQuant q = w.quant();
        return WIDE && q != null && (q.bits() == 4 || q.bits() == 8) && q.groupSize() % block(q.bits()) == 0;
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
     * {@code sb[q·groups + g]} and their bias terms {@code Σ_g bias(r, g) · xsum[g]} (multiply-adds in group order) to
     * {@code sb[4·groups + q]}. The four rows run interleaved (four independent chains), bf16 read inline.
     */
    static void prologue(Matrix w, int row, int count, float[] xsum, int xsOff, float[] sb) {
        GroupQuant q = w.quant();
        int groups = w.cols() / q.groupSize();
        MemorySegment ss = q.scales();
        MemorySegment bs = q.biases();
        DType t = q.scaleType();
        long i0 = (long) row * groups;
        long i1 = (long) (row + Math.min(1, count - 1)) * groups;
        long i2 = (long) (row + Math.min(2, count - 1)) * groups;
        long i3 = (long) (row + Math.min(3, count - 1)) * groups;
        float z0 = 0;
        float z1 = 0;
        float z2 = 0;
        float z3 = 0;
        if (t == DType.BF16) {
            for (int g = 0; g < groups; g++) {
                float xs = xsum[xsOff + g];
                sb[g] = bf16(ss, i0 + g);
                sb[groups + g] = bf16(ss, i1 + g);
                sb[2 * groups + g] = bf16(ss, i2 + g);
                sb[3 * groups + g] = bf16(ss, i3 + g);
                z0 = Math.fma(bf16(bs, i0 + g), xs, z0);
                z1 = Math.fma(bf16(bs, i1 + g), xs, z1);
                z2 = Math.fma(bf16(bs, i2 + g), xs, z2);
                z3 = Math.fma(bf16(bs, i3 + g), xs, z3);
            }
        } else {
            for (int g = 0; g < groups; g++) {
                float xs = xsum[xsOff + g];
                sb[g] = t.read(ss, i0 + g);
                sb[groups + g] = t.read(ss, i1 + g);
                sb[2 * groups + g] = t.read(ss, i2 + g);
                sb[3 * groups + g] = t.read(ss, i3 + g);
                z0 = Math.fma(t.read(bs, i0 + g), xs, z0);
                z1 = Math.fma(t.read(bs, i1 + g), xs, z1);
                z2 = Math.fma(t.read(bs, i2 + g), xs, z2);
                z3 = Math.fma(t.read(bs, i3 + g), xs, z3);
            }
        }
        sb[4 * groups] = z0;
        sb[4 * groups + 1] = z1;
        sb[4 * groups + 2] = z2;
        sb[4 * groups + 3] = z3;
    }

    private static float bf16(MemorySegment m, long i) {
        return Float.intBitsToFloat((m.getAtIndex(Layouts.SHORT_LE, i) & 0xFFFF) << 16);
    }

    /**
     * Where the loops read the scales of block t of call row q: {@code sb[base + q·blocks + t]}. With one block per
     * group that is the prologue's layout (base 0); with more, the scales are first repeated per block after the bias
     * terms (base 4·groups + 4; sb must hold 4·groups + 4 + 4·blocks floats: {@link #scratchSize}).
     */
    static int scales(float[] sb, int groups, int blocks) {
        if (blocks == groups) {
            return 0;
        }
        int base = 4 * groups + 4;
        int per = blocks / groups;
        // vector loads of L group scales, each spread to per vectors by a lane shuffle: the scalar form of this
        // (a division per block) took about as long as the multiply-adds of an 8-bit call with groups of 64
        VectorShuffle<Float>[] spread = per < SPREAD.length ? SPREAD[per] : null;
        for (int q = 0, at = base; q < 4; q++) {
            int g = 0;
            if (spread != null) {
                for (; g + L <= groups; g += L) {
                    FloatVector v = FloatVector.fromArray(F, sb, q * groups + g);
                    for (VectorShuffle<Float> sh : spread) {
                        v.rearrange(sh).intoArray(sb, at);
                        at += L;
                    }
                }
            }
            for (; g < groups; g++) {
                float scale = sb[q * groups + g];
                for (int p = 0; p < per; p++) {
                    sb[at++] = scale;
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
     * the arithmetic.
     */
    static void matvec(Matrix w, int row, int count, float[] x, int xOff, float[] xsum, int xsOff, float[] sb,
            float[] out, int outOff) {
        int n = w.cols();
        GroupQuant q = w.quant();
        long rb = q.rowBytes(n);
        int groups = n / q.groupSize();
        prologue(w, row, count, xsum, xsOff, sb);
        int blocks = n / block(q.bits());
        int base = scales(sb, groups, blocks);
        for (int r = 0; r < count; r++) {
            out[outOff + r] = row(q.bits(), w.data(), rb * (row + r), n, x, xOff, sb, base + r * blocks)
                    + sb[4 * groups + r];
        }
    }

    /**
     * As {@link #matvec}, on four rows (row a multiple of 4) of a matrix of {@code bits} copied at load
     * ({@link QuantizedPack#pack}). Same arithmetic, so the same bits.
     */
    static void matvecPacked(QuantizedPack p, int bits, int row, int n, float[] x, int xOff, float[] xsum,
            int xsOff, float[] sb, float[] out, int outOff) {
        int groups = p.prologue(row, n, xsum, xsOff, sb);
        int blocks = n / block(bits);
        int base = scales(sb, groups, blocks);
        long b = row * p.rowBytes();
        for (int r = 0; r < 4; r++) {
            out[outOff + r] = row(bits, p.codes(), b + r * p.rowBytes(), n, x, xOff, sb, base + r * blocks)
                    + sb[4 * groups + r];
        }
    }

    /** One row at byte offset b of seg: the fixed-order lane sum of {@link #rowQ4} or {@link #rowQ8}. */
    private static float row(int bits, MemorySegment seg, long b, int n, float[] x, int xOff, float[] sb, int s) {
        float[] lanes = LANES.get();
        if (bits == 4) {
            rowQ4(seg, b, n, x, xOff, sb, s, lanes);
        } else {
            rowQ8(seg, b, n, x, xOff, sb, s, lanes);
        }
        return sumLanes(lanes, 0);
    }

    /**
     * The 4-bit loop over one row at byte offset b of seg (blocks of 8·L columns, L ints each; scale of block t at
     * {@code sb[s + t]}: {@link #scales}); the accumulator's lanes to {@code lanes[0..L)}. Per block a chain of
     * multiply-adds over its eight masked codes, then one multiply-add of that chain by the block's scale into the
     * row's accumulator, blocks in order.
     *
     * <p>Two blocks per step, one row per loop: the two blocks' chains are independent, so the core overlaps them;
     * a loop over one block of two rows waits on each chain's multiply-add latency and runs at about half the rate
     * (a harness with the codes in cache: 11 against 23 G weights/s per thread). A row's arithmetic is that of one
     * block per step (the same chains, added to the accumulator in block order), and a trailing odd block runs alone.
     * The block index is the loop counter, so every read is linear in it and its range check leaves the loop (a check
     * left inside made the JIT box the accumulators on every step); the codes of a block share an inner loop the JIT
     * unrolls, which keeps the method small enough for every vector operation to be intrinsified.
     */
    private static void rowQ4(MemorySegment seg, long b, int n, float[] x, int xOff, float[] sb, int s,
            float[] lanes) {
        int blocks = n / (8 * L);
        int main = blocks & ~1;
        FloatVector c = FloatVector.zero(F);
        for (int t = 0; t < main; t += 2) {
            int k = xOff + t * (8 * L);
            long off = b + t * (4L * L);
            IntVector v0 = IntVector.fromMemorySegment(I, seg, off, LE);
            IntVector v1 = IntVector.fromMemorySegment(I, seg, off + 4L * L, LE);
            FloatVector e0 = FloatVector.zero(F);
            FloatVector e1 = FloatVector.zero(F);
            for (int q = 0, mask = 0xF; q < 7; q++, mask <<= 4) {
                e0 = code(v0, mask).fma(FloatVector.fromArray(F, x, k + q * L), e0);
                e1 = code(v1, mask).fma(FloatVector.fromArray(F, x, k + (8 + q) * L), e1);
            }
            e0 = top(v0, 28).fma(FloatVector.fromArray(F, x, k + 7 * L), e0);
            e1 = top(v1, 28).fma(FloatVector.fromArray(F, x, k + 15 * L), e1);
            c = e0.fma(FloatVector.broadcast(F, sb[s + t]), c);
            c = e1.fma(FloatVector.broadcast(F, sb[s + t + 1]), c);
        }
        for (int t = main; t < blocks; t++) {
            int k = xOff + t * (8 * L);
            IntVector v0 = IntVector.fromMemorySegment(I, seg, b + t * (4L * L), LE);
            FloatVector e0 = FloatVector.zero(F);
            for (int q = 0, mask = 0xF; q < 7; q++, mask <<= 4) {
                e0 = code(v0, mask).fma(FloatVector.fromArray(F, x, k + q * L), e0);
            }
            e0 = top(v0, 28).fma(FloatVector.fromArray(F, x, k + 7 * L), e0);
            c = e0.fma(FloatVector.broadcast(F, sb[s + t]), c);
        }
        c.intoArray(lanes, 0);
    }

    /**
     * The 8-bit loop over one row, as {@link #rowQ4} with blocks of 4·L columns (four codes per int) and four blocks
     * per step (harness, codes in cache: 15–21 against 9–15 G weights/s per thread for a loop over one block of two
     * rows).
     */
    private static void rowQ8(MemorySegment seg, long b, int n, float[] x, int xOff, float[] sb, int s,
            float[] lanes) {
        int blocks = n / (4 * L);
        int main = blocks & ~3;
        FloatVector c = FloatVector.zero(F);
        for (int t = 0; t < main; t += 4) {
            int k = xOff + t * (4 * L);
            long off = b + t * (4L * L);
            IntVector v0 = IntVector.fromMemorySegment(I, seg, off, LE);
            IntVector v1 = IntVector.fromMemorySegment(I, seg, off + 4L * L, LE);
            IntVector v2 = IntVector.fromMemorySegment(I, seg, off + 8L * L, LE);
            IntVector v3 = IntVector.fromMemorySegment(I, seg, off + 12L * L, LE);
            FloatVector e0 = FloatVector.zero(F);
            FloatVector e1 = FloatVector.zero(F);
            FloatVector e2 = FloatVector.zero(F);
            FloatVector e3 = FloatVector.zero(F);
            for (int q = 0, mask = 0xFF; q < 3; q++, mask <<= 8) {
                e0 = code(v0, mask).fma(FloatVector.fromArray(F, x, k + q * L), e0);
                e1 = code(v1, mask).fma(FloatVector.fromArray(F, x, k + (4 + q) * L), e1);
                e2 = code(v2, mask).fma(FloatVector.fromArray(F, x, k + (8 + q) * L), e2);
                e3 = code(v3, mask).fma(FloatVector.fromArray(F, x, k + (12 + q) * L), e3);
            }
            e0 = top(v0, 24).fma(FloatVector.fromArray(F, x, k + 3 * L), e0);
            e1 = top(v1, 24).fma(FloatVector.fromArray(F, x, k + 7 * L), e1);
            e2 = top(v2, 24).fma(FloatVector.fromArray(F, x, k + 11 * L), e2);
            e3 = top(v3, 24).fma(FloatVector.fromArray(F, x, k + 15 * L), e3);
            c = e0.fma(FloatVector.broadcast(F, sb[s + t]), c);
            c = e1.fma(FloatVector.broadcast(F, sb[s + t + 1]), c);
            c = e2.fma(FloatVector.broadcast(F, sb[s + t + 2]), c);
            c = e3.fma(FloatVector.broadcast(F, sb[s + t + 3]), c);
        }
        for (int t = main; t < blocks; t++) {
            int k = xOff + t * (4 * L);
            IntVector v0 = IntVector.fromMemorySegment(I, seg, b + t * (4L * L), LE);
            FloatVector e0 = FloatVector.zero(F);
            for (int q = 0, mask = 0xFF; q < 3; q++, mask <<= 8) {
                e0 = code(v0, mask).fma(FloatVector.fromArray(F, x, k + q * L), e0);
            }
            e0 = top(v0, 24).fma(FloatVector.fromArray(F, x, k + 3 * L), e0);
            c = e0.fma(FloatVector.broadcast(F, sb[s + t]), c);
        }
        c.intoArray(lanes, 0);
    }

    /** The codes under mask, in place, as floats (exact: at most 8 significant bits). */
    private static FloatVector code(IntVector v, int mask) {
        return (FloatVector) v.lanewise(VectorOperators.AND, mask).convert(VectorOperators.I2F, 0);
    }

    /** The top code of each int (the one holding the sign bit), shifted down, as floats. */
    private static FloatVector top(IntVector v, int shift) {
        return (FloatVector) v.lanewise(VectorOperators.LSHR, shift).convert(VectorOperators.I2F, 0);
    }
}
