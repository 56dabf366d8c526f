package io.tqserve.backend.cpu;

import io.tqserve.backend.ComputeBackend;
import io.tqserve.backend.Kernels;
import io.tqserve.backend.Matrix;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Collections;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.function.IntConsumer;

/** The pure-Java CPU backend: Vector API kernels (or their scalar twins) on a dedicated kernel pool. */
public final class CpuBackend implements ComputeBackend {
    /** System property that switches the Vector API off ({@code -Dtqserve.vector=false}). */
    public static final String VECTOR_PROPERTY = "tqserve.vector";
    /** System property that keeps the decode kernel on the mapped layout ({@code -Dtqserve.cpu.repack=false}). */
    public static final String REPACK_PROPERTY = "tqserve.cpu.repack";
    /** System property: pieces each of a matmul's last blocks is cut into (default 4; 1 keeps equal blocks). */
    public static final String TAIL_SPLIT_PROPERTY = "tqserve.cpu.tail-split";


    /**
     * Activation rows one pass of {@link PackedGemm} takes ({@code -Dtqserve.cpu.gemm-row-block}); more rows are more
     * passes over each thread's block of weights. With 512-bit vectors (default 32 at 2048 columns, scaled down for
     * wider matrices: 16 at 5632, never fewer than 8) the pass's activations stay in a core's L2 (32 rows of 2048
     * floats are 256 KB) while every weight group of the block runs over them. With AVX2 (default 64, not scaled)
     * every pass walks whole rows ({@link PackedGemm#UNBLOCKED_ROWS}), where a 4×2 tile streams two activation rows
     * and one group from L2 whatever the pass's size, so the row block only sets how often the weights come from
     * memory: on a Zen 3 core 64 rows of a 2048×5632 matrix ran at 0.81 of the FMA peak in one pass against 0.73 in
     * the 16-row passes of the scaled block, and 2048-column matrices were the same at 32 and 64.
     */
    static final int GEMM_ROW_BLOCK = Integer.getInteger("tqserve.cpu.gemm-row-block",
            VectorKernels.WIDE_TILES ? 32 : 64);

    /** {@link #GEMM_ROW_BLOCK} for n columns: scaled to n with 512-bit vectors (a multiple of 4, at least 8). */
    static int gemmRowBlock(int n) {
        if (!VectorKernels.WIDE_TILES) {
            return Math.max(1, GEMM_ROW_BLOCK);
        }
        return Math.max(Math.min(8, GEMM_ROW_BLOCK), Math.min(GEMM_ROW_BLOCK, GEMM_ROW_BLOCK * 3072 / n / 4 * 4));
    }

    private final Kernels kernels;
    private final KernelPool pool;
    private final String why;
    private final ThreadLocal<float[]> rowScratch = new ThreadLocal<>();
    private final QuantizedMatmul quantized;
    /** Interleaved copies of dense bf16 matrices for the decode kernel ({@link #prepare}), dropped with the matrix. */
    private final Map<Matrix, MemorySegment> packed = Collections.synchronizedMap(new WeakHashMap<>());
    /** The same for quantized matrices the Vector API kernels read ({@link QuantizedPack}). */
    private final Map<Matrix, QuantizedPack> qpacked = Collections.synchronizedMap(new WeakHashMap<>());
    /** The one-row kernel on packed matrices ({@link MatvecChoice}); null with the scalar kernels. */
    private final MatvecChoice matvecs;
    /** Pieces each of a matmul group's last blocks is cut into ({@link #blocks}, {@value #TAIL_SPLIT_PROPERTY}). */
    private final int tailSplit = Math.max(1, Integer.getInteger(TAIL_SPLIT_PROPERTY, 4));

    public CpuBackend(Kernels kernels, int threads, String why) {
        this(kernels, threads, why, QuantActivations.configured());
    }

    /**
     * @param activations what 4- and 8-bit weights (groups of whole blocks, 256-bit vectors) multiply: float or
     *     integer-quantized activations ({@link QuantActivations}); {@code -Dtqserve.cpu.quant-activations} sets it
     *     for {@link #create}
     */
    public CpuBackend(Kernels kernels, int threads, String why, QuantActivations activations) {
        this.kernels = kernels;
        this.pool = new KernelPool(threads);
        this.why = why + (kernels instanceof VectorKernels && QuantizedVector.L == 8
                ? switch (activations) {
                    case AUTO -> ", integer dot products for 4-bit weights (activations to +-" + QuantizedWide4.RANGE
                            + " per 64 columns), float for 8-bit";
                    case INT8 -> ", int8 activations for 4- and 8-bit weights";
                    case FLOAT -> ", float activations for 4- and 8-bit weights";
                } + " (-D" + QuantActivations.PROPERTY + "=" + activations.name().toLowerCase(java.util.Locale.ROOT)
                        + ")"
                : "")
                + (kernels instanceof VectorKernels ? "; multi-row bf16: " + PackedGemm.describe() : "");
        this.quantized = new QuantizedMatmul(kernels, activations);
        this.matvecs = kernels instanceof VectorKernels ? MatvecChoice.fromSystemProperty() : null;
    }

    /**
     * Chooses the kernels once: the Vector API unless {@code -Dtqserve.vector=false} or the module is missing.
     *
     * @param threads worker threads; 0 = the physical cores
     */
    public static CpuBackend create(int threads) {
        int n = threads > 0 ? threads : PhysicalCores.count();
        boolean off = "false".equalsIgnoreCase(System.getProperty(VECTOR_PROPERTY, "true"));
        if (off) {
            return new CpuBackend(new ScalarKernels(), n, "scalar kernels (-D" + VECTOR_PROPERTY + "=false), " + n
                    + " threads");
        }
        if (!vectorApiPresent()) {
            return new CpuBackend(new ScalarKernels(), n,
                    "scalar kernels (module jdk.incubator.vector not in the boot layer: run with --add-modules "
                            + "jdk.incubator.vector), " + n + " threads");
        }
        return new CpuBackend(new VectorKernels(), n, "Vector API " + VectorKernels.F.vectorBitSize() + "-bit ("
                + VectorKernels.lanes() + " floats), " + n + " threads");
    }

    /** True when jdk.incubator.vector is resolved in the boot layer (--add-modules jdk.incubator.vector). */
    public static boolean vectorApiPresent() {
        return ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent();
    }

    @Override
    public String name() {
        return "cpu";
    }

    @Override
    public String describe() {
        return "cpu: " + why;
    }

    @Override
    public Kernels kernels() {
        return kernels;
    }

    @Override
    public int threads() {
        return pool.threads();
    }

    @Override
    public void matmul(Matrix w, float[] x, int rows, float[] out) {
        matmuls(new Matrix[] {w}, x, rows, new float[][] {out});
    }

    /**
     * The matrices' blocks of rows, dense and quantized, all go to the pool in one {@code parallelFor} (the quantized
     * kernels' activations prepared before it, once for matrices of the same code width and groups). A block's
     * outputs are computed exactly as a lone {@link #matmul} computes them. The blocks are {@link #blocks}: which
     * thread computes which rows never changes a result.
     */
    @Override
    public void matmuls(Matrix[] ws, float[] x, int rows, float[][] outs) {
        int m = ws.length;
        MemorySegment[] packs = new MemorySegment[m];
        QuantizedPack[] qpacks = new QuantizedPack[m];
        QuantizedMatmul.Input[] inputs = new QuantizedMatmul.Input[m];
        int slots = 0;
        for (int k = 0; k < m; k++) {
            if (!ws[k].quantized()) {
                packs[k] = packed.get(ws[k]);
                continue;
            }
            qpacks[k] = qpacked.get(ws[k]);
            for (int e = 0; e < k && inputs[k] == null; e++) {
                if (inputs[e] != null && QuantizedMatmul.sameInput(ws[e], ws[k])) {
                    inputs[k] = inputs[e];
                }
            }
            if (inputs[k] == null) {
                inputs[k] = quantized.input(ws[k], x, rows, slots++);
            }
        }
        int[] rowCounts = new int[m];
        for (int k = 0; k < m; k++) {
            rowCounts[k] = ws[k].rows();
        }
        int[] bounds = blocks(rowCounts, pool.threads(), tailSplit);
        pool.parallelFor(bounds.length / 3, b -> {
            int k = bounds[3 * b];
            int from = bounds[3 * b + 1];
            int to = bounds[3 * b + 2];
            if (inputs[k] != null) {
                quantized.block(ws[k], qpacks[k], inputs[k], rows, outs[k], from, to);
            } else {
                block(ws[k], packs[k], x, rows, outs[k], from, to);
            }
        });
    }

    /**
     * The blocks of the matrices' rows (row counts {@code rows}) the pool's threads take in turn, as (matrix, from, to) triples in the order they are taken:
     * each matrix in up to {@code threads * 8} equal blocks of whole groups of four rows (a thread streams each block's
     * weights as one run), then the group's last {@code threads} blocks each cut into {@code tailSplit} pieces. A
     * thread that finds no block left waits at the barrier for the others' last blocks; with equal blocks that wait
     * was up to one block of the group's widest matrix (a 1.4 MB block of an MLP projection of a 0.5B model, about
     * 90 us at 15 GB/s per thread, in each of two of a layer's six hand-offs), with the tail cut in four it is a
     * quarter of that, while the blocks before the tail keep their long runs. {@code tailSplit} 1 keeps the equal
     * blocks ({@value #TAIL_SPLIT_PROPERTY}).
     */
    static int[] blocks(int[] rows, int threads, int tailSplit) {
        int m = rows.length;
        int[] per = new int[m];
        int[] count = new int[m];
        int total = 0;
        for (int k = 0; k < m; k++) {
            int outDim = rows[k];
            int blocks = Math.max(1, Math.min(outDim / 8, threads * 8));
            per[k] = ((outDim + blocks - 1) / blocks + 3) / 4 * 4; // whole 4-row blocks for matvec and tiles
            count[k] = (outDim + per[k] - 1) / per[k];
            total += count[k];
        }
        int last = m - 1;
        int tail = tailSplit > 1 && threads > 1 ? Math.min(threads, count[last] - 1) : 0;
        int piece = tail > 0 ? Math.max(4, (per[last] / tailSplit + 3) / 4 * 4) : per[last];
        int[] out = new int[3 * (total + tail * (tailSplit - 1) + 1)];
        int n = 0;
        for (int k = 0; k < m; k++) {
            int outDim = rows[k];
            int split = k == last ? count[k] - tail : count[k]; // blocks before the tail
            for (int b = 0; b < count[k]; b++) {
                int from = b * per[k];
                int to = Math.min(outDim, from + per[k]);
                int step = b < split ? per[k] : piece;
                for (int f = from; f < to; f += step) {
                    out[n++] = k;
                    out[n++] = f;
                    out[n++] = Math.min(to, f + step);
                }
            }
        }
        return java.util.Arrays.copyOf(out, n);
    }

    /** Output rows [from, to) of a dense matmul; {@code pack} is the matrix repacked by {@link #prepare}, or null. */
    private void block(Matrix w, MemorySegment pack, float[] x, int rows, float[] out, int from, int to) {
        int outDim = w.rows();
        int inDim = w.cols();
        if (rows == 1) {
            if (pack != null) { // whole groups of four rows: prepare packs only matrices whose rows come in fours
                matvecs.run(pack, inDim, x, out, from, to);
                return;
            }
            // matrix-vector: four weight rows at a time, read straight from their bytes
            for (int j = from; j < to; j += 4) {
                kernels.matvec(w, j, Math.min(4, to - j), x, 0, out, j);
            }
            return;
        }
        if (pack != null) {
            // matrix-matrix on the packed copy: one pass over the block's weights per block of activation rows
            // (PackedGemm); the blocks keep a prefill's activations in L2 while a group's tiles run over them
            int rowBlock = gemmRowBlock(inDim);
            for (int r0 = 0; r0 < rows; r0 += rowBlock) {
                int rb = Math.min(rowBlock, rows - r0);
                for (int j = from; j < to; ) {
                    if (to - j >= 8 && PackedGemm.twoGroups(rb, inDim)) {
                        PackedGemm.groups2(pack, 2L * j * inDim, inDim, x, r0 * inDim, rb, out, r0 * outDim + j,
                                outDim);
                        j += 8;
                    } else {
                        PackedGemm.group(pack, 2L * j * inDim, inDim, x, r0 * inDim, rb, out, r0 * outDim + j,
                                outDim);
                        j += 4;
                    }
                }
            }
            return;
        }
        // matrix-matrix: four weight rows decoded once, then tiles against the activation rows
        float[] wRows = scratch(4 * inDim);
        for (int j = from; j < to; j += 4) {
            int count = Math.min(4, to - j);
            for (int q = 0; q < count; q++) {
                kernels.decodeRow(w, j + q, wRows, q * inDim);
            }
            for (int r = 0; r < rows; r += 4) {
                kernels.tile(wRows, 0, count, x, r * inDim, Math.min(4, rows - r), inDim, out, r * outDim + j,
                        outDim);
            }
        }
    }

    /**
     * With the Vector API kernels (and unless {@code -Dtqserve.cpu.repack=false}), keeps a copy of each dense bf16
     * matrix whose rows come in fours and whose width is a multiple of the vector length, its rows interleaved four
     * at a time ({@link VectorMatmul#pack4}): the decode kernel then reads one contiguous stream per thread rather
     * than four streams a row apart, which the hardware prefetchers follow better. Quantized matrices the Vector API
     * kernels read (4 and 8 bits, rows in fours) get the same treatment, their scales and biases beside them (bf16 as
     * stored, f16 and f32 as floats: {@link QuantizedPack}); their kernels read the copy for every batch size. The copy lives
     * off-heap beside the memory-mapped file (prefill and embedding lookups still read the file) and is freed with
     * the matrix.
     */
    @Override
    public void prepare(java.util.Collection<Matrix> weights) {
        if (!(kernels instanceof VectorKernels)
                || "false".equalsIgnoreCase(System.getProperty(REPACK_PROPERTY, "true"))) {
            return;
        }
        for (Matrix m : weights) {
            int n = m.cols();
            if (m.rows() % 4 != 0 || packed.containsKey(m) || qpacked.containsKey(m)) {
                continue;
            }
            int groups = m.rows() / 4;
            int parts = Math.min(groups, pool.threads() * 4);
            if (m.quantized()) {
                if (!quantized.fast(m)) {
                    continue;
                }
                boolean int8 = quantized.integer(m);
                QuantizedPack dst = QuantizedPack.allocate(m, Arena.ofAuto(), int8);
                pool.parallelFor(parts, p -> QuantizedPack.pack(m, dst, (int) ((long) groups * p / parts),
                        (int) ((long) groups * (p + 1) / parts), int8));
                qpacked.put(m, dst);
                continue;
            }
            if (m.dtype() != io.tqserve.backend.DType.BF16 || n % VectorKernels.L != 0) {
                continue;
            }
            MemorySegment dst = Arena.ofAuto().allocate(m.data().byteSize(), 64);
            pool.parallelFor(parts, p -> {
                for (long g = (long) groups * p / parts, end = (long) groups * (p + 1) / parts; g < end; g++) {
                    VectorMatmul.pack4(m.data(), g * 8L * n, dst, g * 8L * n, n);
                }
            });
            packed.put(m, dst);
        }
    }

    /** The multi-row bf16 kernel's tiles and blocking ({@link PackedGemm}), or null with the scalar kernels. */
    public String gemmKernel() {
        return kernels instanceof VectorKernels ? PackedGemm.describe() : null;
    }

    /** The one-row packed kernel in use and why ({@link MatvecChoice}), or null while it calibrates or without one. */
    public String matvecKernel() {
        return matvecs == null ? null : matvecs.outcome();
    }

    /**
     * Weight bytes the one-row packed kernel has streamed and thread-nanoseconds spent inside its blocks (summed over
     * threads), since the backend started; zeros without the Vector API kernels. The difference of two readings over
     * a decode gives the kernel's own streaming rate, apart from the hand-offs and waits around it.
     */
    public KernelTime matvecBlockTime() {
        if (matvecs == null) {
            return new KernelTime(0, 0);
        }
        long[] t = matvecs.blockTime();
        return new KernelTime(t[0], t[1]);
    }

    /** Bytes streamed and thread-nanoseconds spent inside kernel blocks ({@link #matvecBlockTime}). */
    public record KernelTime(long bytes, long threadNanos) {
        /** This reading minus an earlier one. */
        public KernelTime since(KernelTime earlier) {
            return new KernelTime(bytes - earlier.bytes, threadNanos - earlier.threadNanos);
        }
    }

    /** Whether {@link #prepare} keeps a repacked copy of m (for tests). */
    boolean repacked(Matrix m) {
        return packed.containsKey(m) || qpacked.containsKey(m);
    }

    private float[] scratch(int n) {
        float[] s = rowScratch.get();
        if (s == null || s.length < n) {
            s = new float[n];
            rowScratch.set(s);
        }
        return s;
    }

    @Override
    public void parallelFor(int n, IntConsumer body) {
        pool.parallelFor(n, body);
    }

    @Override
    public void close() {
        pool.close();
    }
}
