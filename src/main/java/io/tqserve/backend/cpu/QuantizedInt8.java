package io.tqserve.backend.cpu;

import static io.tqserve.backend.cpu.VectorKernels.LE;

import io.tqserve.backend.DType;
import io.tqserve.backend.GroupQuant;
import io.tqserve.backend.Matrix;
import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Integer dot products for 4- and 8-bit group-affine weights on 256-bit vectors: the activations are quantized to
 * int8 per block of 64 columns ({@link #quantize}: {@code d = max|x| / 127}, {@code xq = round(x / d)}), and the codes
 * are multiplied by them in 16-bit lanes ({@code ShortVector}: a multiply is {@code vpmullw}), the products summed
 * exactly in 16 bits (4-bit: four products of at most 15 · 127; 8-bit, centred to [-128, 127]: two products of at most
 * 128 · 127) and then in 32 bits (widened by shifts), converted to float once per block and scaled by
 * {@code scale · d}. Per 64 weights of a row that is about 20 vector operations where the float kernels of
 * {@link QuantizedLoops} issue about 34. Measured on an AMD EPYC Zen 3 core (one kernel thread, a 2048×2048 matrix
 * from cache, through {@link CpuBackend#matmul}, G weights/s): 4-bit 16.5–17.2 against 12.3–12.9 for the float kernels,
 * 8-bit 11.0–11.5 against 11.8–12.7 (no gain: its 16-bit products must be widened apart, and the loop alone ran at 13).
 * The Vector API has no {@code vpmaddubsw}/{@code vpmaddwd} (llama.cpp's instructions for this), hence the 16-bit
 * products and the widening by shifts. With int8 activations ({@link QuantActivations#INT8}, opt-in) these loops run
 * for 4- and 8-bit weights; by default ({@link QuantActivations#AUTO}) 4-bit weights run {@link QuantizedWide4}'s
 * loops on activations quantized to a wider range with the same layout, prologue and scalar twin.
 *
 * <p>The result differs from the dense product by the rounding of the activations only: the bias terms use the
 * float sums of x per group as before, and 8-bit codes are centred ({@code q - 128}) with the bias raised by
 * {@code 128 · scale}, so a row computes
 * {@code Σ_g [ s_g · d_t · Σ (q - z)·xq ] + Σ_g (b_g + z · s_g) · Σ x} with z = 0 (4-bit) or 128 (8-bit). The
 * scalar twin is {@link #dot}; {@code QuantizedInt8Test} checks both against a NumPy reference on stored values.
 *
 * <p>Activation order: within each 32-byte chunk of a row (16 little-endian shorts, P = 16/bits codes each: 64
 * columns at 4 bits, 32 at 8 bits), column {@code P·j + c} (code c of short j) sits at position {@code c·16 + j}, so
 * code c of all 16 shorts multiplies one contiguous load of activations. The loops hold two rows (as
 * {@link QuantizedLoops}, for AVX2's 16 registers) and come in a mapped and a repacked copy for the range-check reason
 * given at {@link QuantizedLoops#loop2Q4Packed}.
 */
final class QuantizedInt8 {
    static final VectorSpecies<Short> S = ShortVector.SPECIES_256;
    static final VectorSpecies<Float> F = FloatVector.SPECIES_256;
    /** Columns per activation block of 4-bit weights (one int8 scale each; 8-bit: {@link #block}). */
    static final int BLOCK = 64;
    private QuantizedInt8() {
    }

    /**
     * Columns per activation block (one int8 scale each): one 32-byte chunk of codes, 64 columns at 4 bits, 32 at
     * 8 bits.
     */
    static int block(int bits) {
        return bits == 4 ? 64 : 32;
    }

    /** Whether these kernels take such weights: 4 or 8 bits, groups of whole blocks, 256-bit vectors. */
    static boolean supported(int bits, int groupSize) {
        return QuantizedVector.L == 8 && (bits == 4 || bits == 8) && groupSize % block(bits) == 0;
    }

    /** The centre subtracted from the codes: 128 for 8-bit, 0 for 4-bit. */
    static float zero(int bits) {
        return bits == 8 ? 128f : 0f;
    }

    /**
     * x[xOff..xOff+n) (n a multiple of the block) quantized per {@link #block} to {@code |xq| <= range} (127, or
     * {@link QuantizedWide4#RANGE} for 4-bit weights): xd[dOff + t] = max|x| / range of block t, and xq in the
     * kernels' order for {@code bits} = round(x · (range / max|x|)) (Math.round: half up), 0 for a block of zeros.
     */
    static void quantize(int bits, int range, float[] x, int xOff, int n, short[] xq, int qOff, float[] xd, int dOff) {
        int per = 16 / bits;
        int blk = block(bits);
        for (int t = 0; t < n / blk; t++) {
            int c0 = xOff + t * blk;
            float amax = 0;
            for (int i = 0; i < blk; i++) {
                amax = Math.max(amax, Math.abs(x[c0 + i]));
            }
            float id = amax == 0 ? 0 : range / amax;
            xd[dOff + t] = amax / range;
            int q0 = qOff + t * blk;
            for (int c = 0; c < per; c++) {
                for (int j = 0; j < 16; j++) {
                    xq[q0 + c * 16 + j] = (short) Math.round(x[c0 + per * j + c] * id);
                }
            }
        }
    }

    /**
     * The scalar twin: row r of w against activations quantized by {@link #quantize} (xq in the kernels' order), with
     * xsum the float sums of x per group. Blocks in column order, one float multiply-add per block, then the bias
     * terms in group order.
     */
    static float dot(Matrix w, int r, short[] xq, int qOff, float[] xd, int dOff, float[] xsum, int sOff) {
        GroupQuant q = w.quant();
        int n = w.cols();
        int bits = q.bits();
        int per = 16 / bits;
        int groups = n / q.groupSize();
        int z = (int) zero(bits);
        long rb = q.rowBytes(n);
        MemorySegment seg = w.data();
        int blk = block(bits);
        float acc = 0;
        for (int t = 0; t < n / blk; t++) {
            int isum = 0;
            for (int j = 0; j < 16; j++) {
                int s = seg.get(io.tqserve.backend.Layouts.SHORT_LE, r * rb + t * 32L + 2L * j) & 0xFFFF;
                for (int c = 0; c < per; c++) {
                    int code = (s >>> (c * bits)) & ((1 << bits) - 1);
                    isum += (code - z) * xq[qOff + t * blk + c * 16 + j];
                }
            }
            float scale = q.scale(r, t * blk / q.groupSize(), groups);
            acc = Math.fma(isum, scale * xd[dOff + t], acc);
        }
        for (int g = 0; g < groups; g++) {
            acc = Math.fma(bias(q.bias(r, g, groups), q.scale(r, g, groups), bits), xsum[sOff + g], acc);
        }
        return acc;
    }

    /** A group's bias as these kernels use it: {@code b + z · s}. */
    static float bias(float b, float s, int bits) {
        return bits == 8 ? b + 128f * s : b;
    }

    /**
     * The prologue of a call on rows row..row+3 (beyond count: the last row's again): their scales to
     * {@code sb[q·groups + g]}, the bias terms {@code Σ_g bias(b, s) · xsum[g]} to {@code sb[4·groups + q]} (group
     * order), then the scales repeated per block where a group holds several ({@link QuantizedVector#scales}, whose
     * base it returns: the loops read block t's scale of call row q at {@code sb[base + q·blocks + t]}).
     */
    static int prologue(Matrix w, int row, int count, float[] xsum, int sOff, float[] sb) {
        GroupQuant q = w.quant();
        int groups = w.cols() / q.groupSize();
        DType t = q.scaleType();
        int bits = q.bits();
        for (int r = 0; r < 4; r++) {
            long i = (long) (row + Math.min(r, count - 1)) * groups;
            for (int g = 0; g < groups; g++) {
                sb[r * groups + g] = t.read(q.scales(), i + g);
            }
            // four chains, group g into chain g mod 4, summed as (z0 + z1) + (z2 + z3): the order of the pack's
            // prologue (QuantizedPack#prologue), so both layouts give the same bits
            float z0 = 0;
            float z1 = 0;
            float z2 = 0;
            float z3 = 0;
            for (int g = 0; g < groups; g++) {
                float z = Math.fma(bias(t.read(q.biases(), i + g), sb[r * groups + g], bits), xsum[sOff + g],
                        switch (g & 3) {
                            case 0 -> z0;
                            case 1 -> z1;
                            case 2 -> z2;
                            default -> z3;
                        });
                switch (g & 3) {
                    case 0 -> z0 = z;
                    case 1 -> z1 = z;
                    case 2 -> z2 = z;
                    default -> z3 = z;
                }
            }
            sb[4 * groups + r] = (z0 + z1) + (z2 + z3);
        }
        return QuantizedVector.scales(sb, groups, w.cols() / block(q.bits()));
    }

    /**
     * {@link #prologue} for four rows of a pack: {@link QuantizedPack#prologue} (the scales copied, the bias terms
     * from the pack's biases, which already hold {@link #bias}; its chains sum in another order than the mapped
     * prologue's, so the two layouts agree to rounding, not to the bit), then the scales per block.
     */
    static int prologue(QuantizedPack p, int bits, int row, int n, float[] xsum, int sOff, float[] sb) {
        int groups = p.prologue(row, n, xsum, sOff, sb);
        return QuantizedVector.scales(sb, groups, n / block(bits));
    }

    /**
     * Up to four rows of w (mapped layout) times the activations quantized to {@code |xq| <= range}
     * ({@link #quantize}); rows beyond count are not written.
     */
    static void matvec(Matrix w, int range, int row, int count, short[] xq, int qOff, float[] xd, int dOff, float[] xsum,
            int sOff, float[] sb, float[] out, int outOff) {
        int n = w.cols();
        long rb = w.quant().rowBytes(n);
        int groups = n / w.quant().groupSize();
        int base = prologue(w, row, count, xsum, sOff, sb);
        long b0 = rb * row;
        long d1 = rb * (row + Math.min(1, count - 1)) - b0;
        long b2 = rb * (row + Math.min(2, count - 1));
        long d3 = rb * (row + Math.min(3, count - 1)) - b2;
        if (w.quant().bits() == 4 && range > 127) {
            QuantizedWide4.loop2(w.data(), b0, d1, n, xq, qOff, xd, dOff, sb, base, groups, 0, count, out, outOff);
            if (count > 2) {
                QuantizedWide4.loop2(w.data(), b2, d3, n, xq, qOff, xd, dOff, sb, base, groups, 2, count, out, outOff);
            }
        } else if (w.quant().bits() == 4) {
            loop2Q4(w.data(), b0, d1, n, xq, qOff, xd, dOff, sb, base, groups, 0, count, out, outOff);
            if (count > 2) {
                loop2Q4(w.data(), b2, d3, n, xq, qOff, xd, dOff, sb, base, groups, 2, count, out, outOff);
            }
        } else {
            loop2Q8(w.data(), b0, d1, n, xq, qOff, xd, dOff, sb, base, groups, 0, count, out, outOff);
            if (count > 2) {
                loop2Q8(w.data(), b2, d3, n, xq, qOff, xd, dOff, sb, base, groups, 2, count, out, outOff);
            }
        }
    }

    /** Four rows (row a multiple of 4) of a pack: the same arithmetic as {@link #matvec}, so the same bits. */
    static void matvecPacked(QuantizedPack p, int bits, int range, int row, int n, short[] xq, int qOff, float[] xd, int dOff,
            float[] xsum, int sOff, float[] sb, float[] out, int outOff) {
        int groups = n / p.groupSize();
        int base = prologue(p, bits, row, n, xsum, sOff, sb);
        long pairA = row * p.rowBytes();
        long pairB = pairA + 2 * p.rowBytes();
        if (bits == 4 && range > 127) {
            QuantizedWide4.loop2Packed(p.codes(), pairA, n, xq, qOff, xd, dOff, sb, base, groups, 0, out, outOff);
            QuantizedWide4.loop2Packed(p.codes(), pairB, n, xq, qOff, xd, dOff, sb, base, groups, 2, out, outOff);
        } else if (bits == 4) {
            loop2Q4Packed(p.codes(), pairA, n, xq, qOff, xd, dOff, sb, base, groups, 0, out, outOff);
            loop2Q4Packed(p.codes(), pairB, n, xq, qOff, xd, dOff, sb, base, groups, 2, out, outOff);
        } else {
            loop2Q8Packed(p.codes(), pairA, n, xq, qOff, xd, dOff, sb, base, groups, 0, out, outOff);
            loop2Q8Packed(p.codes(), pairB, n, xq, qOff, xd, dOff, sb, base, groups, 2, out, outOff);
        }
    }

    /** Two rows at b0 and b0 + d1, 4-bit: per 64-column block one load of 16 shorts per row. */
    static void loop2Q4(MemorySegment seg, long b0, long d1, int n, short[] xq, int qOff, float[] xd, int dOff, float[] sb, int base,
            int groups, int q0, int count, float[] out, int outOff) {
        int blocks = n / BLOCK;
        long b1 = b0 + d1;
        int s0 = base + q0 * blocks;
        int s1 = s0 + blocks;
        FloatVector c0 = FloatVector.zero(F);
        FloatVector c1 = FloatVector.zero(F);
        // the block index is the loop's counter, so every read is linear in it and its range check leaves the loop
        for (int t = 0; t < blocks; t++) {
            int k = qOff + t * BLOCK;
            long off = t * 32L;
            ShortVector v0 = ShortVector.fromMemorySegment(S, seg, b0 + off, LE);
            ShortVector v1 = ShortVector.fromMemorySegment(S, seg, b1 + off, LE);
            ShortVector x = ShortVector.fromArray(S, xq, k);
            ShortVector p0 = v0.and((short) 0xF).mul(x);
            ShortVector p1 = v1.and((short) 0xF).mul(x);
            x = ShortVector.fromArray(S, xq, k + 16);
            p0 = v0.lanewise(VectorOperators.LSHR, 4).and((short) 0xF).mul(x).add(p0);
            p1 = v1.lanewise(VectorOperators.LSHR, 4).and((short) 0xF).mul(x).add(p1);
            x = ShortVector.fromArray(S, xq, k + 32);
            p0 = v0.lanewise(VectorOperators.LSHR, 8).and((short) 0xF).mul(x).add(p0);
            p1 = v1.lanewise(VectorOperators.LSHR, 8).and((short) 0xF).mul(x).add(p1);
            x = ShortVector.fromArray(S, xq, k + 48);
            p0 = v0.lanewise(VectorOperators.LSHR, 12).mul(x).add(p0);
            p1 = v1.lanewise(VectorOperators.LSHR, 12).mul(x).add(p1);
            // the two 16-bit sums of each int lane, added in its high half ((i + (i << 16)) >> 16): exact, as the two
            // sums together stay below 2^15 (8 products of at most 15 · 127)
            IntVector i0 = p0.reinterpretAsInts();
            IntVector i1 = p1.reinterpretAsInts();
            i0 = i0.add(i0.lanewise(VectorOperators.LSHL, 16)).lanewise(VectorOperators.ASHR, 16);
            i1 = i1.add(i1.lanewise(VectorOperators.LSHL, 16)).lanewise(VectorOperators.ASHR, 16);
            c0 = ((FloatVector) i0.convert(VectorOperators.I2F, 0)).fma(FloatVector.broadcast(F, sb[s0 + t] * xd[dOff + t]), c0);
            c1 = ((FloatVector) i1.convert(VectorOperators.I2F, 0)).fma(FloatVector.broadcast(F, sb[s1 + t] * xd[dOff + t]), c1);
        }
        float[] lanes = VectorKernels.LANES.get();
        // typed as F's vector class first, written out here rather than in a helper: QuantizedLoops' class comment
        ((FloatVector) F.vectorType().cast(c0)).intoArray(lanes, 0);
        ((FloatVector) F.vectorType().cast(c1)).intoArray(lanes, 8);
        QuantizedLoops.finish2(lanes, sb, groups, q0, count, out, outOff);
    }

    /** {@link #loop2Q4} on a pair of rows repacked at load ({@link QuantizedPack}): row 1's chunk follows row 0's. */
    static void loop2Q4Packed(MemorySegment seg, long b0, int n, short[] xq, int qOff, float[] xd, int dOff, float[] sb, int base,
            int groups, int q0, float[] out, int outOff) {
        int blocks = n / BLOCK;
        long b1 = b0 + 32;
        int s0 = base + q0 * blocks;
        int s1 = s0 + blocks;
        FloatVector c0 = FloatVector.zero(F);
        FloatVector c1 = FloatVector.zero(F);
        for (int t = 0; t < blocks; t++) {
            int k = qOff + t * BLOCK;
            long off = t * 64L;
            ShortVector v0 = ShortVector.fromMemorySegment(S, seg, b0 + off, LE);
            ShortVector v1 = ShortVector.fromMemorySegment(S, seg, b1 + off, LE);
            ShortVector x = ShortVector.fromArray(S, xq, k);
            ShortVector p0 = v0.and((short) 0xF).mul(x);
            ShortVector p1 = v1.and((short) 0xF).mul(x);
            x = ShortVector.fromArray(S, xq, k + 16);
            p0 = v0.lanewise(VectorOperators.LSHR, 4).and((short) 0xF).mul(x).add(p0);
            p1 = v1.lanewise(VectorOperators.LSHR, 4).and((short) 0xF).mul(x).add(p1);
            x = ShortVector.fromArray(S, xq, k + 32);
            p0 = v0.lanewise(VectorOperators.LSHR, 8).and((short) 0xF).mul(x).add(p0);
            p1 = v1.lanewise(VectorOperators.LSHR, 8).and((short) 0xF).mul(x).add(p1);
            x = ShortVector.fromArray(S, xq, k + 48);
            p0 = v0.lanewise(VectorOperators.LSHR, 12).mul(x).add(p0);
            p1 = v1.lanewise(VectorOperators.LSHR, 12).mul(x).add(p1);
            IntVector i0 = p0.reinterpretAsInts();
            IntVector i1 = p1.reinterpretAsInts();
            i0 = i0.add(i0.lanewise(VectorOperators.LSHL, 16)).lanewise(VectorOperators.ASHR, 16);
            i1 = i1.add(i1.lanewise(VectorOperators.LSHL, 16)).lanewise(VectorOperators.ASHR, 16);
            c0 = ((FloatVector) i0.convert(VectorOperators.I2F, 0)).fma(FloatVector.broadcast(F, sb[s0 + t] * xd[dOff + t]), c0);
            c1 = ((FloatVector) i1.convert(VectorOperators.I2F, 0)).fma(FloatVector.broadcast(F, sb[s1 + t] * xd[dOff + t]), c1);
        }
        float[] lanes = VectorKernels.LANES.get();
        // typed as F's vector class first, written out here rather than in a helper: QuantizedLoops' class comment
        ((FloatVector) F.vectorType().cast(c0)).intoArray(lanes, 0);
        ((FloatVector) F.vectorType().cast(c1)).intoArray(lanes, 8);
        QuantizedLoops.finish2(lanes, sb, groups, q0, 4, out, outOff);
    }

    /**
     * Two rows at b0 and b0 + d1, 8-bit: per 32-column block one load of 16 shorts per row, each short's bytes
     * centred by an XOR with 0x80 (the pack stores them centred: {@link #loop2Q8Packed}) and split by shifts
     * ({@code (v << 8) >> 8}, {@code v >> 8}).
     */
    static void loop2Q8(MemorySegment seg, long b0, long d1, int n, short[] xq, int qOff, float[] xd, int dOff,
            float[] sb, int base, int groups, int q0, int count, float[] out, int outOff) {
        int blocks = n / 32;
        long b1 = b0 + d1;
        int s0 = base + q0 * blocks;
        int s1 = s0 + blocks;
        FloatVector c0 = FloatVector.zero(F);
        FloatVector c1 = FloatVector.zero(F);
        for (int t = 0; t < blocks; t++) {
            int k = qOff + t * 32;
            long off = t * 32L;
            ShortVector v0 = ShortVector.fromMemorySegment(S, seg, b0 + off, LE).lanewise(VectorOperators.XOR, (short) 0x8080);
            ShortVector v1 = ShortVector.fromMemorySegment(S, seg, b1 + off, LE).lanewise(VectorOperators.XOR, (short) 0x8080);
            ShortVector x = ShortVector.fromArray(S, xq, k);
            ShortVector y = ShortVector.fromArray(S, xq, k + 16);
            ShortVector p0 = v0.lanewise(VectorOperators.LSHL, 8).lanewise(VectorOperators.ASHR, 8).mul(x)
                    .add(v0.lanewise(VectorOperators.ASHR, 8).mul(y));
            ShortVector p1 = v1.lanewise(VectorOperators.LSHL, 8).lanewise(VectorOperators.ASHR, 8).mul(x)
                    .add(v1.lanewise(VectorOperators.ASHR, 8).mul(y));
            IntVector i0 = p0.reinterpretAsInts();
            IntVector i1 = p1.reinterpretAsInts();
            // each 16-bit sum may be near ±2^15, so the halves are widened apart: (i << 16 >> 16) + (i >> 16)
            i0 = i0.lanewise(VectorOperators.LSHL, 16).lanewise(VectorOperators.ASHR, 16).add(i0.lanewise(VectorOperators.ASHR, 16));
            i1 = i1.lanewise(VectorOperators.LSHL, 16).lanewise(VectorOperators.ASHR, 16).add(i1.lanewise(VectorOperators.ASHR, 16));
            c0 = ((FloatVector) i0.convert(VectorOperators.I2F, 0)).fma(FloatVector.broadcast(F, sb[s0 + t] * xd[dOff + t]), c0);
            c1 = ((FloatVector) i1.convert(VectorOperators.I2F, 0)).fma(FloatVector.broadcast(F, sb[s1 + t] * xd[dOff + t]), c1);
        }
        float[] lanes = VectorKernels.LANES.get();
        // typed as F's vector class first, written out here rather than in a helper: QuantizedLoops' class comment
        ((FloatVector) F.vectorType().cast(c0)).intoArray(lanes, 0);
        ((FloatVector) F.vectorType().cast(c1)).intoArray(lanes, 8);
        QuantizedLoops.finish2(lanes, sb, groups, q0, count, out, outOff);
    }

    /**
     * {@link #loop2Q8} on a pair of rows repacked at load, whose codes the pack stores centred ({@link QuantizedPack}:
     * no XOR here): chunks alternate row 0, row 1 (32 bytes each).
     */
    static void loop2Q8Packed(MemorySegment seg, long b0, int n, short[] xq, int qOff, float[] xd, int dOff,
            float[] sb, int base, int groups, int q0, float[] out, int outOff) {
        int blocks = n / 32;
        long b1 = b0 + 32;
        int s0 = base + q0 * blocks;
        int s1 = s0 + blocks;
        FloatVector c0 = FloatVector.zero(F);
        FloatVector c1 = FloatVector.zero(F);
        for (int t = 0; t < blocks; t++) {
            int k = qOff + t * 32;
            long off = t * 64L;
            ShortVector v0 = ShortVector.fromMemorySegment(S, seg, b0 + off, LE);
            ShortVector v1 = ShortVector.fromMemorySegment(S, seg, b1 + off, LE);
            ShortVector x = ShortVector.fromArray(S, xq, k);
            ShortVector y = ShortVector.fromArray(S, xq, k + 16);
            ShortVector p0 = v0.lanewise(VectorOperators.LSHL, 8).lanewise(VectorOperators.ASHR, 8).mul(x)
                    .add(v0.lanewise(VectorOperators.ASHR, 8).mul(y));
            ShortVector p1 = v1.lanewise(VectorOperators.LSHL, 8).lanewise(VectorOperators.ASHR, 8).mul(x)
                    .add(v1.lanewise(VectorOperators.ASHR, 8).mul(y));
            IntVector i0 = p0.reinterpretAsInts();
            IntVector i1 = p1.reinterpretAsInts();
            // each 16-bit sum may be near ±2^15, so the halves are widened apart: (i << 16 >> 16) + (i >> 16)
            i0 = i0.lanewise(VectorOperators.LSHL, 16).lanewise(VectorOperators.ASHR, 16).add(i0.lanewise(VectorOperators.ASHR, 16));
            i1 = i1.lanewise(VectorOperators.LSHL, 16).lanewise(VectorOperators.ASHR, 16).add(i1.lanewise(VectorOperators.ASHR, 16));
            c0 = ((FloatVector) i0.convert(VectorOperators.I2F, 0)).fma(FloatVector.broadcast(F, sb[s0 + t] * xd[dOff + t]), c0);
            c1 = ((FloatVector) i1.convert(VectorOperators.I2F, 0)).fma(FloatVector.broadcast(F, sb[s1 + t] * xd[dOff + t]), c1);
        }
        float[] lanes = VectorKernels.LANES.get();
        // typed as F's vector class first, written out here rather than in a helper: QuantizedLoops' class comment
        ((FloatVector) F.vectorType().cast(c0)).intoArray(lanes, 0);
        ((FloatVector) F.vectorType().cast(c1)).intoArray(lanes, 8);
        QuantizedLoops.finish2(lanes, sb, groups, q0, 4, out, outOff);
    }
}
