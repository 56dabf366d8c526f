package io.tqserve.backend.cpu;

import io.tqserve.backend.Kernels;
import io.tqserve.backend.Matrix;

/**
 * The matmul of a group-affine quantized matrix ({@link io.tqserve.backend.GroupQuant}) on the CPU backend's pool,
 * split into 4-row blocks as the dense matmul of {@link CpuBackend} (and run in the same pass as the dense matrices of
 * a fused call). 4- and 8-bit matrices on 128-bit or wider vectors run {@link QuantizedVector}'s kernels, which read
 * the packed codes in registers, for each activation row against each block of four weight rows (the block stays in
 * cache across the rows, so each weight byte comes from memory once per call), on the rows repacked at load
 * ({@link QuantizedPack}) when the backend has them; there, activation rows in fours run {@link QuantizedRows},
 * which widens each weight row's codes once per four activation rows with the same arithmetic per output. Other code widths, groups narrower than a block and the scalar kernels
 * decode four weight rows at a time to floats with {@link QuantizedScalar} (never more: no dense copy of the matrix)
 * and run the float tiles. Either way an output gets the same arithmetic whatever the batch, so batching never
 * changes a sequence's numbers.
 */
final class QuantizedMatmul {
    private final Kernels kernels;
    private final boolean vector;
    private final ThreadLocal<float[]> rowScratch = new ThreadLocal<>();
    private final ThreadLocal<float[]> scaleScratch = new ThreadLocal<>();
    /** The four activation rows' scales and bias terms of {@link QuantizedRows#block4}. */
    /** Bytes of codes per span of weight rows run against all the activation rows in fours (well inside L2). */
    private static final long WEIGHT_SPAN = 64 * 1024;
    private final ThreadLocal<float[][]> quadScratch = ThreadLocal.withInitial(() -> new float[4][]);
    /** The calling thread's activation arrays per {@link #input} slot (permuted x, group sums): two per slot. */
    private final ThreadLocal<float[][]> inputScratch = ThreadLocal.withInitial(() -> new float[0][]);
    /** The same for the int8 activations of {@link QuantizedInt8}: one per slot. */
    private final ThreadLocal<short[][]> int8Scratch = ThreadLocal.withInitial(() -> new short[0][]);

    /**
     * The activations as one matrix's kernels read them: permuted per code width, with their group sums; for
     * {@link QuantizedInt8}'s kernels x is the caller's and {@code xq}/{@code xd} the int8 activations and their
     * per-block scales (null otherwise).
     */
    record Input(float[] x, float[] sums, short[] xq, float[] xd) {
    }

    private final QuantActivations activations;

    /** {@code activations}: run {@link QuantizedInt8}'s integer kernels where the setting takes them ({@link #integer}). */
    QuantizedMatmul(Kernels kernels, QuantActivations activations) {
        this.kernels = kernels;
        this.vector = kernels instanceof VectorKernels;
        this.activations = activations;
    }

    /**
     * Whether w runs {@link QuantizedInt8}'s integer kernels (quantized activations; the pack then holds their form).
     */
    boolean integer(Matrix w) {
        return fast(w) && activations.integer(w);
    }

    /** Whether w runs the Vector API kernels (which read {@link #input}'s permuted activations). */
    boolean fast(Matrix w) {
        return vector && QuantizedVector.handles(w);
    }

    /**
     * The activations for w: for the fast kernels x permuted into their order ({@link QuantizedVector#permute}) and
     * the sums of x per group, otherwise x itself. The arrays are the calling thread's scratch for {@code slot}
     * (a fused call gives each distinct input its own slot); they stay valid until that thread's next call for the
     * same slot, i.e. for the matmul they are made for.
     */
    Input input(Matrix w, float[] x, int rows, int slot) {
        if (!fast(w)) {
            return new Input(x, null, null, null);
        }
        int inDim = w.cols();
        int groups = inDim / w.quant().groupSize();
        float[] sums = slot(2 * slot + 1, rows * groups);
        if (integer(w)) {
            int blocks = inDim / QuantizedInt8.block(w.quant().bits());
            short[] xq = int8Slot(slot, rows * inDim);
            float[] xd = slot(2 * slot, rows * blocks);
            int range = activations.range(w);
            for (int r = 0; r < rows; r++) {
                QuantizedInt8.quantize(w.quant().bits(), range, x, r * inDim, inDim, xq, r * inDim, xd, r * blocks);
                QuantizedVector.groupSums(x, r * inDim, inDim, w.quant().groupSize(), sums, r * groups);
            }
            return new Input(x, sums, xq, xd);
        }
        float[] xs = slot(2 * slot, rows * inDim);
        for (int r = 0; r < rows; r++) {
            QuantizedVector.permute(w.quant().bits(), x, r * inDim, inDim, xs, r * inDim);
            QuantizedVector.groupSums(x, r * inDim, inDim, w.quant().groupSize(), sums, r * groups);
        }
        return new Input(xs, sums, null, null);
    }

    private short[] int8Slot(int i, int n) {
        short[][] held = int8Scratch.get();
        if (held.length <= i) {
            held = java.util.Arrays.copyOf(held, i + 1);
            int8Scratch.set(held);
        }
        if (held[i] == null || held[i].length < n) {
            held[i] = new short[n];
        }
        return held[i];
    }

    private float[] slot(int i, int n) {
        float[][] held = inputScratch.get();
        if (held.length <= i) {
            held = java.util.Arrays.copyOf(held, i + 1);
            inputScratch.set(held);
        }
        if (held[i] == null || held[i].length < n) {
            held[i] = new float[n];
        }
        return held[i];
    }

    /** Whether an {@link Input} made for a can serve b (the same permutation and groups). */
    static boolean sameInput(Matrix a, Matrix b) {
        return a.cols() == b.cols() && a.quant().bits() == b.quant().bits()
                && a.quant().groupSize() == b.quant().groupSize();
    }

    /**
     * Output rows [from, to) (from a multiple of 4) of w times the activations of {@link #input}, with {@code pack}
     * the rows repacked at load, or null.
     */
    void block(Matrix w, QuantizedPack pack, Input in, int rows, float[] out, int from, int to) {
        int outDim = w.rows();
        int inDim = w.cols();
        float[] xin = in.x();
        if (in.xq() != null) {
            int groups = inDim / w.quant().groupSize();
            int blocks = inDim / QuantizedInt8.block(w.quant().bits());
            float[] sb = scratch(scaleScratch, 4 * groups + 4 + 4 * blocks);
            int bits = w.quant().bits();
            int range = activations.range(w);
            for (int j = from; j < to; j += 4) {
                int count = Math.min(4, to - j);
                for (int r = 0; r < rows; r++) {
                    if (pack != null && count == 4) {
                        QuantizedInt8.matvecPacked(pack, bits, range, j, inDim, in.xq(), r * inDim, in.xd(), r * blocks,
                                in.sums(), r * groups, sb, out, r * outDim + j);
                    } else {
                        QuantizedInt8.matvec(w, range, j, count, in.xq(), r * inDim, in.xd(), r * blocks, in.sums(),
                                r * groups, sb, out, r * outDim + j);
                    }
                }
            }
            return;
        }
        if (in.sums() != null) {
            int groups = inDim / w.quant().groupSize();
            int size = QuantizedVector.scratchSize(w.quant().bits(), inDim, w.quant().groupSize());
            float[] sb = scratch(scaleScratch, size);
            int bits = w.quant().bits();
            // activation rows in fours (the weight rows' codes widened once per four: QuantizedRows), the rest one
            // at a time; the block's weight rows in spans of about WEIGHT_SPAN bytes, each span against every four
            // activation rows while it stays in the L2 cache, so each weight byte still comes from memory once
            int quads = pack != null ? rows / 4 * 4 : 0;
            if (quads > 0 && QuantizedTiles.applies(bits, w.quant().groupSize())) {
                // 8-bit groups of 64: register tiles of two weight rows by four activation rows (QuantizedTiles)
                QuantizedTiles.group8(pack, from, to, inDim, xin, in.sums(), quads, out, outDim);
            } else if (quads > 0) {
                float[][] sbs = quadScratch(size);
                int span = (int) Math.max(4, WEIGHT_SPAN / pack.rowBytes() / 4 * 4);
                for (int s = from; s < to; s += span) {
                    int end = Math.min(to, s + span);
                    for (int a = 0; a < quads; a += 4) {
                        for (int j = s; j + 3 < end; j += 4) {
                            QuantizedRows.block4(pack, bits, j, inDim, xin, in.sums(), a, sbs, out, outDim);
                        }
                    }
                }
            }
            for (int j = from; j < to; j += 4) {
                int count = Math.min(4, to - j);
                for (int r = count == 4 ? quads : 0; r < rows; r++) {
                    if (pack != null && count == 4) {
                        QuantizedVector.matvecPacked(pack, bits, j, inDim, xin, r * inDim, in.sums(), r * groups, sb,
                                out, r * outDim + j);
                    } else {
                        QuantizedVector.matvec(w, j, count, xin, r * inDim, in.sums(), r * groups, sb, out,
                                r * outDim + j);
                    }
                }
            }
            return;
        }
        float[] wRows = scratch(rowScratch, 4 * inDim);
        for (int j = from; j < to; j += 4) {
            int count = Math.min(4, to - j);
            QuantizedScalar.decodeRows(w, j, count, wRows);
            for (int r = 0; r < rows; r += 4) {
                kernels.tile(wRows, 0, count, xin, r * inDim, Math.min(4, rows - r), inDim, out, r * outDim + j,
                        outDim);
            }
        }
    }

    private float[][] quadScratch(int n) {
        float[][] s = quadScratch.get();
        if (s[0] == null || s[0].length < n) {
            for (int i = 0; i < 4; i++) {
                s[i] = new float[n];
            }
        }
        return s;
    }

    private static float[] scratch(ThreadLocal<float[]> holder, int n) {
        float[] s = holder.get();
        if (s == null || s.length < n) {
            s = new float[n];
            holder.set(s);
        }
        return s;
    }
}
