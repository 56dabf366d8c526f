package io.tqserve.backend.mlx;

import io.tqserve.backend.DeviceTurboSpec;
import io.tqserve.backend.AbstractSequenceKv;
import io.tqserve.backend.mlx.ffm.Mlx;
import io.tqserve.backend.mlx.ffm.MlxArray;
import io.tqserve.backend.mlx.ffm.MlxDtype;
import io.tqserve.backend.mlx.ffm.MlxScope;
import io.tqserve.backend.mlx.ffm.MlxStore;
import java.lang.foreign.MemorySegment;

/**
 * The TurboQuant KV cache of one sequence on the MLX device. Per layer the five sections of the entry format
 * ({@code docs/kv-format.md}) are five arrays of shape (1, numKvHeads, capacity, section width): K codes and V codes
 * as packed uint8 bitstreams, K scales, K zeros and V scales as float16, so the device holds exactly the entry's
 * bytes per token and head, and an export is the Java {@code TurboQuantKvCache}'s bytes. New rows are encoded on
 * the device ({@link MlxTurboCodec}) and written with {@code slice_update}; capacity grows by {@link #STEP} tokens
 * inside the step's graph. The first quantizedKvStart tokens stay bf16, (1, numKvHeads, quantizedKvStart, headDim)
 * per layer for K and V; in the export format they are written as entries encoded from those bf16 values, and an
 * import stores such entries decoded and rounded to bf16, as the Java cache does. Attention: {@link MlxTurboAttention}.
 */
final class MlxTurboKvCache extends AbstractSequenceKv implements MlxSequenceKv {
    /** Quantized tokens added per growth. */
    static final int STEP = 256;

    private final MlxBackend backend;
    private final Mlx mlx;
    private final DeviceTurboSpec spec;
    private final MlxTurboCodec codec;
    private final MlxTurboAttention attention;
    private final MlxStore store;
    private final int prefixTokens;   // min(quantizedKvStart, maxTokens)
    private final int quantizedMax;   // most quantized tokens
    private final MlxArray[][] sections; // [section][layer]: K codes, K scales, K zeros, V codes, V scales
    private final MlxArray[] prefixK;  // per layer (1, numKvHeads, prefixTokens, headDim) bf16
    private final MlxArray[] prefixV;
    private final int[] widths;        // per section: bytes (codes) or fp16 elements (scales, zeros)
    private final MlxDtype[] dtypes;
    private boolean prefixAllocated;
    private int capacity;

    MlxTurboKvCache(MlxBackend backend, DeviceTurboSpec spec) {
        super(spec.maxTokens(), (long) spec.numKvHeads() * spec.entryBytes());
        this.backend = backend;
        this.mlx = backend.mlx();
        this.spec = spec;
        this.codec = new MlxTurboCodec(spec.headDim(), spec.kBits(), spec.kSigned(), spec.vBits(), spec.signs(),
                spec.centroids(), spec.boundaries());
        this.attention = new MlxTurboAttention(spec, backend.turboKernels());
        this.store = mlx.newStore();
        this.prefixTokens = Math.min(spec.quantizedKvStart(), spec.maxTokens());
        this.quantizedMax = spec.maxTokens() - prefixTokens;
        int g = spec.groups();
        this.widths = new int[] {spec.keyCodeBytes(), g, g, spec.valueCodeBytes(), g};
        this.dtypes = new MlxDtype[] {MlxDtype.UINT8, MlxDtype.FLOAT16, MlxDtype.FLOAT16, MlxDtype.UINT8,
                MlxDtype.FLOAT16};
        this.sections = new MlxArray[5][spec.layers()];
        this.prefixK = new MlxArray[spec.layers()];
        this.prefixV = new MlxArray[spec.layers()];
        for (int l = 0; l < spec.layers(); l++) {
            for (MlxArray[] sec : sections) {
                sec[l] = store.empty();
            }
            prefixK[l] = store.empty();
            prefixV[l] = store.empty();
        }
    }

    @Override
    public MlxBackend backend() {
        return backend;
    }

    /** Device bytes held: the quantized capacity at the entry's size plus the bf16 prefix. */
    @Override
    public long bytesAllocated() {
        long quantized = (long) capacity * spec.layers() * spec.numKvHeads() * spec.entryBytes();
        long prefix = prefixAllocated
                ? (long) prefixTokens * spec.layers() * 2 * spec.numKvHeads() * spec.headDim() * 2 : 0;
        return quantized + prefix;
    }

    // ---------------------------------------------------------------- what MlxTurboAttention reads

    int prefixTokens() {
        return prefixTokens;
    }

    MlxArray keyCodes(int layer) {
        return sections[0][layer];
    }

    MlxArray keyScales(int layer) {
        return sections[1][layer];
    }

    MlxArray keyZeros(int layer) {
        return sections[2][layer];
    }

    MlxArray valueCodes(int layer) {
        return sections[3][layer];
    }

    MlxArray valueScales(int layer) {
        return sections[4][layer];
    }

    MlxArray prefixKeys(int layer) {
        return prefixK[layer];
    }

    MlxArray prefixValues(int layer) {
        return prefixV[layer];
    }

    /** Quantized tokens [b, e) of a (1, numKvHeads, capacity, w) section as (numKvHeads·(e−b), w), head-major. */
    MlxArray rows(MlxScope s, MlxArray section, int b, int e) {
        int w = section.shape()[3];
        MlxArray sl = s.slice(section, new int[] {0, 0, b, 0}, new int[] {1, spec.numKvHeads(), e, w});
        return s.reshape(sl, spec.numKvHeads() * (e - b), w);
    }

    /** The first n prefix tokens of a bf16 prefix array as (numKvHeads, n, headDim) float32. */
    MlxArray prefixRows(MlxScope s, MlxArray prefix, int n) {
        MlxArray sl = s.slice(prefix, new int[4], new int[] {1, spec.numKvHeads(), n, spec.headDim()});
        return s.reshape(s.astype(sl, MlxDtype.FLOAT32), spec.numKvHeads(), n, spec.headDim());
    }

    // ---------------------------------------------------------------- the step

    @Override
    public MlxArray attention(MlxScope s, int layer, MlxArray q, MlxArray k, MlxArray v, int rows, MlxDtype dtype) {
        beginPass(rows);
        int length = length();
        store(s, layer, k, v, length, rows);
        if (length == 0) { // a fresh prefill attends over its own K/V in full precision, as the Java caches do
            return s.attention(s.astype(q, dtype), s.astype(k, dtype), s.astype(v, dtype),
                    (float) (1.0 / Math.sqrt(spec.headDim())), rows > 1);
        }
        return s.astype(attention.attend(s, this, layer, q, length, rows), dtype);
    }

    /** Encodes k, v (1, numKvHeads, rows, headDim) into positions length .. length+rows-1 of layer. */
    private void store(MlxScope s, int layer, MlxArray k, MlxArray v, int length, int rows) {
        int p = Math.min(rows, Math.max(0, prefixTokens - length));
        int kvHeads = spec.numKvHeads();
        int d = spec.headDim();
        if (p > 0) {
            ensurePrefix(s);
            int[] start = {0, 0, length, 0};
            int[] stop = {1, kvHeads, length + p, d};
            prefixK[layer].set(s.sliceUpdate(prefixK[layer], s.astype(tokens(s, k, 0, p), MlxDtype.BFLOAT16), start,
                    stop));
            prefixV[layer].set(s.sliceUpdate(prefixV[layer], s.astype(tokens(s, v, 0, p), MlxDtype.BFLOAT16), start,
                    stop));
        }
        int n = rows - p;
        if (n == 0) {
            return;
        }
        int ti = length + p - prefixTokens;
        ensureCapacity(s, ti + n);
        // float32 rows, as the Java codec encodes (native mode's bf16 rows widen exactly)
        MlxArray[] enc = encode(s, s.reshape(s.astype(tokens(s, k, p, rows), MlxDtype.FLOAT32), kvHeads * n, d),
                s.reshape(s.astype(tokens(s, v, p, rows), MlxDtype.FLOAT32), kvHeads * n, d));
        for (int i = 0; i < sections.length; i++) {
            write(s, i, layer, s.reshape(enc[i], 1, kvHeads, n, widths[i]), ti);
        }
    }

    /** The five sections (in entry order) of (count, headDim) K and V rows, each (count, width). */
    private MlxArray[] encode(MlxScope s, MlxArray k, MlxArray v) {
        MlxTurboCodec.Keys ek = codec.encodeKeys(s, k);
        MlxTurboCodec.Values ev = codec.encodeValues(s, v);
        return new MlxArray[] {codec.pack(s, ek.indices(), spec.kBits()), ek.scale(), ek.zero(),
                codec.pack(s, ev.indices(), spec.vBits()), ev.scale()};
    }

    private void write(MlxScope s, int section, int layer, MlxArray update, int ti) {
        int[] shape = update.shape();
        int[] start = {0, 0, ti, 0};
        int[] stop = {1, shape[1], ti + shape[2], shape[3]};
        MlxArray target = sections[section][layer];
        target.set(s.sliceUpdate(target, update, start, stop));
    }

    /** Tokens [from, to) of a (1, heads, rows, headDim) array. */
    private static MlxArray tokens(MlxScope s, MlxArray a, int from, int to) {
        int[] shape = a.shape();
        return s.slice(a, new int[] {0, 0, from, 0}, new int[] {shape[0], shape[1], to, shape[3]});
    }

    private void ensurePrefix(MlxScope s) {
        if (prefixAllocated) {
            return;
        }
        for (int l = 0; l < spec.layers(); l++) {
            prefixK[l].set(s.zeros(MlxDtype.BFLOAT16, 1, spec.numKvHeads(), prefixTokens, spec.headDim()));
            prefixV[l].set(s.zeros(MlxDtype.BFLOAT16, 1, spec.numKvHeads(), prefixTokens, spec.headDim()));
        }
        prefixAllocated = true;
    }

    private void ensureCapacity(MlxScope s, int quantized) {
        if (quantized <= capacity) {
            return;
        }
        int grown = Math.min(quantizedMax, (quantized + STEP - 1) / STEP * STEP);
        for (int i = 0; i < sections.length; i++) {
            for (int l = 0; l < spec.layers(); l++) {
                MlxArray tail = s.zeros(dtypes[i], 1, spec.numKvHeads(), grown - capacity, widths[i]);
                sections[i][l].set(capacity == 0 ? tail : s.concatenate(2, sections[i][l], tail));
            }
        }
        // not evaluated here: the growth joins the graph of the step that needs it (every layer's arrays are
        // among a forward's outputs), so a step that grows the cache is still one evaluation
        capacity = grown;
    }

    /** Every array a layer's step writes (all sections; the prefix while it is filled). */
    @Override
    public MlxArray[] arrays(int layer) {
        MlxArray[] out = new MlxArray[prefixAllocated ? 7 : 5];
        for (int i = 0; i < sections.length; i++) {
            out[i] = sections[i][layer];
        }
        if (prefixAllocated) {
            out[5] = prefixK[layer];
            out[6] = prefixV[layer];
        }
        return out;
    }

    MlxArray[] allArrays() {
        MlxArray[] all = new MlxArray[0];
        for (int l = 0; l < spec.layers(); l++) {
            MlxArray[] a = arrays(l);
            int n = all.length;
            all = java.util.Arrays.copyOf(all, n + a.length);
            System.arraycopy(a, 0, all, n, a.length);
        }
        return all;
    }

    // ---------------------------------------------------------------- SPI: Java forward, export, import

    @Override
    public void attend(int layer, int rowOffset, int rows, float[] q, float[] k, float[] v, float[] out) {
        MlxSequenceKvs.attend(this, spec.numHeads(), spec.numKvHeads(), spec.headDim(), layer, rowOffset, rows, q, k,
                v, out, this::allArrays);
    }

    @Override
    public void exportLayer(int layer, int from, int count, MemorySegment dst) {
        MemorySegment exact = checkExport(from, count, dst);
        if (count == 0) {
            return;
        }
        backend.device().run(s -> {
            MlxTurboEntries.write(s, spec, exportSections(s, layer, from, count), count, exact);
        });
    }

    /** Sections of tokens [from, from+count), each (count·numKvHeads, width), token-major. */
    private MlxArray[] exportSections(MlxScope s, int layer, int from, int count) {
        int kvHeads = spec.numKvHeads();
        int np = Math.max(0, Math.min(from + count, prefixTokens) - from);
        int nq = count - np;
        MlxArray[] prefixEnc = null;
        if (np > 0) { // encoded from the bf16 values, as the Java prefix exports
            int[] start = {0, 0, from, 0};
            int[] stop = {1, kvHeads, from + np, spec.headDim()};
            MlxArray kp = s.reshape(s.transpose(s.slice(prefixK[layer], start, stop), 0, 2, 1, 3), np * kvHeads,
                    spec.headDim());
            MlxArray vp = s.reshape(s.transpose(s.slice(prefixV[layer], start, stop), 0, 2, 1, 3), np * kvHeads,
                    spec.headDim());
            prefixEnc = encode(s, kp, vp);
        }
        MlxArray[] out = new MlxArray[sections.length];
        int ti = Math.max(from, prefixTokens) - prefixTokens;
        for (int i = 0; i < sections.length; i++) {
            MlxArray q = null;
            if (nq > 0) {
                MlxArray sl = s.slice(sections[i][layer], new int[] {0, 0, ti, 0}, new int[] {1, kvHeads, ti + nq,
                        widths[i]});
                q = s.reshape(s.transpose(sl, 0, 2, 1, 3), nq * kvHeads, widths[i]);
            }
            out[i] = prefixEnc == null ? q : q == null ? prefixEnc[i] : s.concatenate(0, prefixEnc[i], q);
        }
        return out;
    }

    @Override
    public void importLayer(int layer, int count, MemorySegment src) {
        MemorySegment exact = beginImport(count, src);
        int length = length();
        if (count == 0) {
            return;
        }
        int kvHeads = spec.numKvHeads();
        backend.device().run(s -> {
            MlxArray[] sec = MlxTurboEntries.read(s, spec, exact, count); // each (count·numKvHeads, width)
            int np = Math.max(0, Math.min(length + count, prefixTokens) - length);
            int nq = count - np;
            if (np > 0) { // decoded and rounded to bf16, as the Java prefix imports
                ensurePrefix(s);
                MlxArray[] head = new MlxArray[sec.length];
                for (int i = 0; i < sec.length; i++) {
                    head[i] = s.slice(sec[i], new int[2], new int[] {np * kvHeads, widths[i]});
                }
                MlxArray kd = codec.decodeKeys(s, new MlxTurboCodec.Keys(
                        MlxTurboBits.unpack(s, head[0], spec.kBits(), spec.kSigned()), head[1], head[2]));
                MlxArray vd = codec.decodeValues(s, new MlxTurboCodec.Values(
                        MlxTurboBits.unpack(s, head[3], spec.vBits(), false), head[4]));
                int[] start = {0, 0, length, 0};
                int[] stop = {1, kvHeads, length + np, spec.headDim()};
                prefixK[layer].set(s.sliceUpdate(prefixK[layer], toHeads(s, s.astype(kd, MlxDtype.BFLOAT16), np), start,
                        stop));
                prefixV[layer].set(s.sliceUpdate(prefixV[layer], toHeads(s, s.astype(vd, MlxDtype.BFLOAT16), np), start,
                        stop));
            }
            if (nq > 0) {
                int ti = length + np - prefixTokens;
                ensureCapacity(s, ti + nq);
                for (int i = 0; i < sec.length; i++) {
                    MlxArray tail = s.slice(sec[i], new int[] {np * kvHeads, 0}, new int[] {count * kvHeads,
                            widths[i]});
                    write(s, i, layer, toHeads(s, tail, nq), ti);
                }
            }
            s.eval(allArrays()); // every layer: a growth above left each one pending
        });
    }

    /** (n·numKvHeads, w) token-major → (1, numKvHeads, n, w). */
    private MlxArray toHeads(MlxScope s, MlxArray a, int n) {
        int w = a.shape()[1];
        return s.transpose(s.reshape(a, 1, n, spec.numKvHeads(), w), 0, 2, 1, 3);
    }

    @Override
    protected void free() {
        backend.device().heldRun(store::close);
    }
}
