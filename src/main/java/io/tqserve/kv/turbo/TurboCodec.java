package io.tqserve.kv.turbo;

import io.tqserve.kv.KvCodec;
import io.tqserve.kv.KvScheme;
import java.lang.foreign.MemorySegment;

/**
 * The TurboQuant KV codec for one (key quant, value bits, head_dim): encodes one token of one KV head — K and V —
 * into exactly {@link TurboLayout#bytes()} bytes of a caller-provided buffer and decodes it back, without
 * allocating. Byte-exact with vllm-metal's {@code tq_encode} (the golden vectors), except for the documented
 * degenerate-input rules in {@link KeyCodec} and {@link ValueCodec}, which keep finite input finite.
 *
 * <p>Besides whole-entry encode/decode it exposes what fused attention needs: the key codes, scales and zeros, the
 * value codes, scales and codebook, the rotated-domain value decode and the inverse rotation.
 *
 * <p>Instances are immutable and thread-safe; encode uses a per-thread scratch row allocated on first use.
 */
public final class TurboCodec implements KvCodec {
    private static final ThreadLocal<float[]> SCRATCH = ThreadLocal.withInitial(() -> new float[512]);

    private final TurboLayout layout;
    private final float[] centroids;
    private final TurboKernels kernels;

    /** A codec on the {@linkplain TurboKernels#preferred() preferred} kernels. */
    public TurboCodec(TurboLayout layout) {
        this(layout, TurboKernels.preferred());
    }

    /** A codec on the given kernels (the parity tests run both implementations). */
    TurboCodec(TurboLayout layout, TurboKernels kernels) {
        this.layout = layout;
        this.centroids = TurboConstants.centroidsShared(layout.vBits());
        this.kernels = kernels;
    }

    public static TurboCodec of(KvScheme.Turbo scheme, int headDim) {
        return new TurboCodec(TurboLayout.of(scheme, headDim));
    }

    public TurboLayout layout() {
        return layout;
    }

    /** Bytes of one entry (one token, one KV head, K and V). */
    @Override
    public int entryBytes() {
        return layout.bytes();
    }

    @Override
    public int headDim() {
        return layout.headDim();
    }

    // ---------------------------------------------------------------- whole entry

    /**
     * Encodes k[kOff, kOff+headDim) and v[vOff, vOff+headDim) (float32) into dst[off, off+entryBytes()).
     */
    @Override
    public void encode(float[] k, int kOff, float[] v, int vOff, MemorySegment dst, long off) {
        checkEntry(dst, off);
        encodeKey(k, kOff, dst, off);
        encodeValue(v, vOff, dst, off);
    }

    /**
     * {@link #encode(float[], int, float[], int, MemorySegment, long)} into a heap array (wraps it in a heap
     * segment per call; hot loops should wrap once and use the segment form).
     */
    public void encode(float[] k, int kOff, float[] v, int vOff, byte[] dst, int off) {
        encode(k, kOff, v, vOff, MemorySegment.ofArray(dst), off);
    }

    /** Decodes the entry at src[off] into k[kOff, +headDim) and v[vOff, +headDim), original domain. */
    @Override
    public void decode(MemorySegment src, long off, float[] k, int kOff, float[] v, int vOff) {
        decodeKey(src, off, k, kOff);
        decodeValue(src, off, v, vOff);
    }

    /** {@link #decode(MemorySegment, long, float[], int, float[], int)} from a heap array (wraps it per call). */
    public void decode(byte[] src, int off, float[] k, int kOff, float[] v, int vOff) {
        decode(MemorySegment.ofArray(src), off, k, kOff, v, vOff);
    }

    // ---------------------------------------------------------------- keys

    /** Encodes only the key sections (K codes, K scales, K zeros) of the entry at dst[off]. */
    public void encodeKey(float[] k, int kOff, MemorySegment dst, long off) {
        checkEntry(dst, off);
        KeyCodec.encode(layout, k, kOff, dst, off, SCRATCH.get());
    }

    /** out[outOff+i] = fl32(fl32(code_i + zero_g)·scale_g), i < headDim. */
    @Override
    public void decodeKey(MemorySegment src, long off, float[] out, int outOff) {
        checkEntry(src, off);
        kernels.decodeKey(layout, src, off, out, outOff);
    }

    /** The key codes of the entry as ints (−127…127 for signed 8-bit keys, else 0…2^kBits−1). */
    public void keyCodes(MemorySegment src, long off, int[] codes, int from) {
        checkEntry(src, off);
        KeyQuant q = layout.keyQuant();
        CodePacking.unpack(src, off + layout.keyCodesOffset(), q.bits(), q.signed(), codes, from, layout.headDim());
    }

    /** Key scale of group g (elements 32g … 32g+31). */
    public float keyScale(MemorySegment src, long off, int g) {
        return CodePacking.readFp16(src, off + layout.keyScalesOffset() + 2L * g);
    }

    /** Key zero point of group g. */
    public float keyZero(MemorySegment src, long off, int g) {
        return CodePacking.readFp16(src, off + layout.keyZerosOffset() + 2L * g);
    }

    /** Raw fp16 bits (0…0xFFFF) of the key scale of group g. */
    public int keyScaleBits(MemorySegment src, long off, int g) {
        return CodePacking.readFp16Bits(src, off + layout.keyScalesOffset() + 2L * g) & 0xFFFF;
    }

    /** Raw fp16 bits (0…0xFFFF) of the key zero of group g. */
    public int keyZeroBits(MemorySegment src, long off, int g) {
        return CodePacking.readFp16Bits(src, off + layout.keyZerosOffset() + 2L * g) & 0xFFFF;
    }

    // ---------------------------------------------------------------- values

    /** Encodes only the value sections (V codes, V scales) of the entry at dst[off]. */
    public void encodeValue(float[] v, int vOff, MemorySegment dst, long off) {
        checkEntry(dst, off);
        float[] scratch = SCRATCH.get();
        ValueCodec.encode(kernels, layout, v, vOff, dst, off, scratch);
    }

    /** Original-domain value decode: out = (H·y) ⊙ σ with y the rotated-domain values. */
    @Override
    public void decodeValue(MemorySegment src, long off, float[] out, int outOff) {
        decodeValueRotated(src, off, out, outOff);
        kernels.unrotate(out, outOff, layout.headDim());
    }

    /** Rotated-domain value decode: out[outOff+i] = fl32(c[code_i]·scale_g), no inverse transform. */
    public void decodeValueRotated(MemorySegment src, long off, float[] out, int outOff) {
        checkEntry(src, off);
        kernels.decodeValueRotated(layout, centroids, src, off, out, outOff);
    }

    /** The value codes (codebook indices, 0…2^vBits−1) of the entry. */
    public void valueCodes(MemorySegment src, long off, int[] codes, int from) {
        checkEntry(src, off);
        CodePacking.unpack(src, off + layout.valueCodesOffset(), layout.vBits(), false, codes, from, layout.headDim());
    }

    /** Value scale of group g. */
    public float valueScale(MemorySegment src, long off, int g) {
        return CodePacking.readFp16(src, off + layout.valueScalesOffset() + 2L * g);
    }

    /** Raw fp16 bits (0…0xFFFF) of the value scale of group g. */
    public int valueScaleBits(MemorySegment src, long off, int g) {
        return CodePacking.readFp16Bits(src, off + layout.valueScalesOffset() + 2L * g) & 0xFFFF;
    }

    /** A copy of the value codebook (2^vBits float32 centroids, ascending). */
    public float[] centroids() {
        return centroids.clone();
    }

    /**
     * Inverse rotation in place, x ← (H·x) ⊙ σ: turns an accumulated rotated-domain vector Σ w_t·y_t into the
     * original domain (equal to Σ w_t·decodeValue_t up to float rounding).
     */
    public void unrotate(float[] x, int off) {
        kernels.unrotate(x, off, layout.headDim());
    }

    private void checkEntry(MemorySegment seg, long off) {
        KvCodec.checkEntry(seg, off, layout.bytes());
    }
}
