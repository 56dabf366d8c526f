package io.tqserve.kv;

import java.lang.foreign.MemorySegment;

/**
 * Per-token per-KV-head codec of a KV scheme: encodes one token's K and V rows (float32, headDim each) into exactly
 * {@link #entryBytes()} bytes of a caller-provided buffer — {@link KvLayout#bytesPerTokenPerHead} of its scheme —
 * and decodes them back. Implementations do not allocate per call and are thread-safe.
 */
public interface KvCodec {
    /** Head dimension of the K and V rows. */
    int headDim();

    /** Bytes one entry (one token, one KV head, K and V) occupies. */
    int entryBytes();

    /** Encodes k[kOff, +headDim) and v[vOff, +headDim) into dst[off, off+entryBytes()). */
    void encode(float[] k, int kOff, float[] v, int vOff, MemorySegment dst, long off);

    /** Decodes the keys of the entry at src[off] into out[outOff, +headDim). */
    void decodeKey(MemorySegment src, long off, float[] out, int outOff);

    /** Decodes the values of the entry at src[off] into out[outOff, +headDim). */
    void decodeValue(MemorySegment src, long off, float[] out, int outOff);

    /** Decodes keys and values of the entry at src[off]. */
    default void decode(MemorySegment src, long off, float[] k, int kOff, float[] v, int vOff) {
        decodeKey(src, off, k, kOff);
        decodeValue(src, off, v, vOff);
    }

    /** Throws unless [off, off+bytes) lies inside seg. */
    static void checkEntry(MemorySegment seg, long off, int bytes) {
        if (off < 0 || off + bytes > seg.byteSize()) {
            throw new IndexOutOfBoundsException("entry [" + off + ", " + (off + bytes) + ") outside segment of "
                    + seg.byteSize() + " bytes");
        }
    }
}
