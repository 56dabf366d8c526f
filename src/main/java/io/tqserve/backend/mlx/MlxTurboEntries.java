package io.tqserve.backend.mlx;

import io.tqserve.backend.DeviceTurboSpec;
import io.tqserve.backend.mlx.ffm.MlxArray;
import io.tqserve.backend.mlx.ffm.MlxDtype;
import io.tqserve.backend.mlx.ffm.MlxScope;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Conversion between the five device sections of a {@link MlxTurboKvCache} and the export format of
 * {@code docs/kv-format.md} (entries token-major, per entry K codes, K scales, K zeros, V codes, V scales,
 * fp16 little-endian).
 */
final class MlxTurboEntries {
    private static final ValueLayout.OfShort FP16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private MlxTurboEntries() {
    }

    /** Writes count·numKvHeads entries from sections, each (count·numKvHeads, width), token-major, into dst. */
    static void write(MlxScope s, DeviceTurboSpec spec, MlxArray[] sections, int count, MemorySegment dst) {
        MlxArray[] c = new MlxArray[sections.length];
        for (int i = 0; i < c.length; i++) {
            c[i] = s.contiguous(sections[i]);
        }
        s.eval(c);
        byte[] kCodes = s.toBytes(c[0]);
        short[] kScales = s.toBits16(c[1]);
        short[] kZeros = s.toBits16(c[2]);
        byte[] vCodes = s.toBytes(c[3]);
        short[] vScales = s.toBits16(c[4]);
        int g = spec.groups();
        int kb = spec.keyCodeBytes();
        int vb = spec.valueCodeBytes();
        int entries = count * spec.numKvHeads();
        for (int e = 0; e < entries; e++) {
            long off = (long) e * spec.entryBytes();
            MemorySegment.copy(kCodes, e * kb, dst, ValueLayout.JAVA_BYTE, off, kb);
            off += kb;
            MemorySegment.copy(kScales, e * g, dst, FP16, off, g);
            off += 2L * g;
            MemorySegment.copy(kZeros, e * g, dst, FP16, off, g);
            off += 2L * g;
            MemorySegment.copy(vCodes, e * vb, dst, ValueLayout.JAVA_BYTE, off, vb);
            off += vb;
            MemorySegment.copy(vScales, e * g, dst, FP16, off, g);
        }
    }

    /** The five sections of count·numKvHeads entries at src, each (count·numKvHeads, width), token-major. */
    static MlxArray[] read(MlxScope s, DeviceTurboSpec spec, MemorySegment src, int count) {
        int g = spec.groups();
        int kb = spec.keyCodeBytes();
        int vb = spec.valueCodeBytes();
        int entries = count * spec.numKvHeads();
        try (Arena arena = Arena.ofConfined()) { // mlx_array_new_data copies; native memory for the downcall
            MemorySegment kCodes = arena.allocate((long) entries * kb);
            MemorySegment kScales = arena.allocate(2L * entries * g);
            MemorySegment kZeros = arena.allocate(2L * entries * g);
            MemorySegment vCodes = arena.allocate((long) entries * vb);
            MemorySegment vScales = arena.allocate(2L * entries * g);
            for (int e = 0; e < entries; e++) {
                long off = (long) e * spec.entryBytes();
                MemorySegment.copy(src, off, kCodes, (long) e * kb, kb);
                off += kb;
                MemorySegment.copy(src, off, kScales, 2L * e * g, 2L * g);
                off += 2L * g;
                MemorySegment.copy(src, off, kZeros, 2L * e * g, 2L * g);
                off += 2L * g;
                MemorySegment.copy(src, off, vCodes, (long) e * vb, vb);
                off += vb;
                MemorySegment.copy(src, off, vScales, 2L * e * g, 2L * g);
            }
            // fp16 bytes are little-endian in the format and in MLX's memory (every platform MLX runs on)
            return new MlxArray[] {s.fromSegment(kCodes, MlxDtype.UINT8, entries, kb),
                    s.fromSegment(kScales, MlxDtype.FLOAT16, entries, g),
                    s.fromSegment(kZeros, MlxDtype.FLOAT16, entries, g),
                    s.fromSegment(vCodes, MlxDtype.UINT8, entries, vb),
                    s.fromSegment(vScales, MlxDtype.FLOAT16, entries, g)};
        }
    }
}
