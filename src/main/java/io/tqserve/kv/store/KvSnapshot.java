package io.tqserve.kv.store;

import io.tqserve.kv.AttentionShape;
import io.tqserve.kv.KvCache;
import io.tqserve.kv.KvScheme;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.HexFormat;
import java.util.zip.CRC32C;

/**
 * The on-disk KV snapshot (docs/kv-format.md): a fixed little-endian header (magic, version, cache kind, scheme
 * parameters, shape, token count, vocabulary size, model fingerprint, tokenizer hash) with its own CRC32C, then
 * sections — token ids, next-token logits, one payload per layer in {@link KvCache#exportLayer} format — each
 * followed by its CRC32C. Writes are atomic (temp file, fsync, rename); reads validate everything before a single
 * byte reaches a cache.
 *
 * @param scheme       the cache's scheme
 * @param shape        layers, heads, KV heads, head_dim
 * @param tokens       the token ids the cache holds
 * @param logits       next-token logits after the last token (vocab floats), so a restore continues exactly
 * @param layers       per-layer payloads, each (tokens, numKvHeads, entry bytes)
 * @param fingerprint  hex SHA-256 of the model config and weight headers
 * @param tokenizerHash hex SHA-256 of tokenizer.json
 */
public record KvSnapshot(KvScheme scheme, AttentionShape shape, int[] tokens, float[] logits, MemorySegment[] layers,
        String fingerprint, String tokenizerHash) {

    static final int MAGIC = 0x564B5154; // "TQKV" little-endian
    static final short VERSION = 1;
    static final int HEADER_BYTES = 4 + 2 + 1 + 1 + 1 + 1 + 2 + 2 + 2 + 2 + 2 + 4 + 4 + 32 + 32 + 4;

    /** Captures the first {@code tokens.length} tokens of a cache (which must hold at least that many). */
    public static KvSnapshot capture(KvCache cache, int[] tokens, float[] logits, String fingerprint,
            String tokenizerHash, Arena arena) {
        AttentionShape s = cache.shape();
        MemorySegment[] layers = new MemorySegment[s.layers()];
        long perLayer = (long) tokens.length * s.numKvHeads() * cache.layout().bytesPerTokenPerHead();
        for (int l = 0; l < s.layers(); l++) {
            layers[l] = arena.allocate(Math.max(1, perLayer), 64).asSlice(0, perLayer);
            cache.exportLayer(l, 0, tokens.length, layers[l]);
        }
        return new KvSnapshot(cache.scheme(), s, tokens.clone(), logits.clone(), layers, fingerprint, tokenizerHash);
    }

    /** Like {@link #capture} but into heap memory, for a snapshot handed to another thread and written to disk. */
    public static KvSnapshot captureOnHeap(KvCache cache, int[] tokens, float[] logits, String fingerprint,
            String tokenizerHash) {
        AttentionShape s = cache.shape();
        MemorySegment[] layers = new MemorySegment[s.layers()];
        long perLayer = (long) tokens.length * s.numKvHeads() * cache.layout().bytesPerTokenPerHead();
        for (int l = 0; l < s.layers(); l++) {
            layers[l] = MemorySegment.ofArray(new byte[Math.toIntExact(perLayer)]);
            cache.exportLayer(l, 0, tokens.length, layers[l]);
        }
        return new KvSnapshot(cache.scheme(), s, tokens.clone(), logits.clone(), layers, fingerprint, tokenizerHash);
    }

    /** Imports the snapshot into an empty cache of the same scheme and shape, and commits its tokens. */
    public void restoreInto(KvCache cache) throws SnapshotException {
        if (!cache.scheme().equals(scheme) || !cache.shape().equals(shape)) {
            throw new SnapshotException(SnapshotException.Reason.WRONG_SCHEME, "snapshot holds a " + scheme.id() + " cache of "
                    + shape + "; the target is " + cache.scheme().id() + " " + cache.shape());
        }
        if (cache.length() != 0) {
            throw new IllegalStateException("restore needs an empty cache");
        }
        for (int l = 0; l < shape.layers(); l++) {
            cache.importLayer(l, tokens.length, layers[l]);
        }
        cache.advance(tokens.length);
    }

    /** Bytes of KV payload (all layers). */
    public long payloadBytes() {
        long n = 0;
        for (MemorySegment m : layers) {
            n += m.byteSize();
        }
        return n;
    }

    /** Writes the snapshot atomically: a temp file beside {@code file}, fsync, then rename over it. */
    public void write(Path file) throws SnapshotException {
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp-" + ProcessHandle.current().pid() + "-"
                + Thread.currentThread().threadId());
        try {
            Files.createDirectories(file.toAbsolutePath().getParent());
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                    StandardOpenOption.TRUNCATE_EXISTING)) {
                ch.write(header());
                ByteBuffer ids = ByteBuffer.allocate(tokens.length * 4).order(ByteOrder.LITTLE_ENDIAN);
                for (int t : tokens) {
                    ids.putInt(t);
                }
                writeSection(ch, ids.flip());
                ByteBuffer lg = ByteBuffer.allocate(logits.length * 4).order(ByteOrder.LITTLE_ENDIAN);
                for (float f : logits) {
                    lg.putFloat(f);
                }
                writeSection(ch, lg.flip());
                for (MemorySegment layer : layers) {
                    writeSection(ch, layer.asByteBuffer());
                }
                ch.force(true);
            }
            try {
                Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING);
            }
        } catch (IOException e) {
            try {
                Files.deleteIfExists(tmp);
            } catch (IOException ignored) {
                // the temp file is never read: only completed renames are snapshots
            }
            throw new SnapshotException(SnapshotException.Reason.IO, "cannot write snapshot " + file + ": " + e.getMessage(), e);
        }
    }

    private static void writeSection(FileChannel ch, ByteBuffer data) throws IOException {
        CRC32C crc = new CRC32C();
        crc.update(data.duplicate());
        while (data.hasRemaining()) {
            ch.write(data);
        }
        ch.write(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt((int) crc.getValue()).flip());
    }

    private ByteBuffer header() {
        ByteBuffer b = ByteBuffer.allocate(HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(MAGIC).putShort(VERSION).put(kind(scheme));
        switch (scheme) {
            case KvScheme.Turbo t -> b.put((byte) t.kBits()).put((byte) t.vBits()).put((byte) 0).putShort((short) 32);
            case KvScheme.Uniform u -> b.put((byte) u.bits()).put((byte) u.bits()).put((byte) 0)
                    .putShort((short) KvScheme.Uniform.GROUP);
            case KvScheme.Bf16 x -> b.put((byte) 16).put((byte) 16).put((byte) 0).putShort((short) 0);
        }
        b.putShort((short) shape.headDim()).putShort((short) shape.layers()).putShort((short) shape.numHeads())
                .putShort((short) shape.numKvHeads()).putInt(tokens.length).putInt(logits.length);
        b.put(HexFormat.of().parseHex(fingerprint)).put(HexFormat.of().parseHex(tokenizerHash));
        CRC32C crc = new CRC32C();
        crc.update(b.array(), 0, HEADER_BYTES - 4);
        b.putInt((int) crc.getValue());
        return b.flip();
    }

    static byte kind(KvScheme s) {
        return switch (s) {
            case KvScheme.Bf16 b -> 0;
            case KvScheme.Turbo t -> 1;
            case KvScheme.Uniform u -> (byte) (u.bits() == 8 ? 2 : 3);
        };
    }

    /**
     * Reads and validates a snapshot written for {@code expectedScheme} (null accepts any scheme),
     * {@code fingerprint} and {@code tokenizerHash}; every refusal names its reason.
     */
    public static KvSnapshot read(Path file, KvScheme expectedScheme, String fingerprint, String tokenizerHash,
            Arena arena) throws SnapshotException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            long size = ch.size();
            if (size < HEADER_BYTES) {
                throw new SnapshotException(SnapshotException.Reason.TRUNCATED, file + " is " + size
                        + " bytes, shorter than a snapshot header");
            }
            MemorySegment all = ch.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
            ByteBuffer h = all.asSlice(0, HEADER_BYTES).asByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
            if (h.getInt() != MAGIC) {
                throw new SnapshotException(SnapshotException.Reason.NOT_A_SNAPSHOT, file + " is not a tqserve KV snapshot");
            }
            short version = h.getShort();
            if (version != VERSION) {
                throw new SnapshotException(SnapshotException.Reason.UNSUPPORTED_VERSION,
                        file + " has snapshot format version " + version + "; this build reads version " + VERSION);
            }
            CRC32C hc = new CRC32C();
            hc.update(all.asSlice(0, HEADER_BYTES - 4).asByteBuffer());
            if ((int) hc.getValue() != all.get(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), HEADER_BYTES - 4)) {
                throw new SnapshotException(SnapshotException.Reason.CHECKSUM, file + ": header checksum mismatch");
            }
            byte kind = h.get();
            int kBits = h.get();
            int vBits = h.get();
            h.get();
            h.getShort();
            KvScheme scheme = switch (kind) {
                case 0 -> KvScheme.BF16;
                case 1 -> new KvScheme.Turbo(kBits, vBits);
                case 2 -> new KvScheme.Uniform(8);
                case 3 -> new KvScheme.Uniform(4);
                default -> throw new SnapshotException(SnapshotException.Reason.NOT_A_SNAPSHOT, file + ": unknown cache kind " + kind);
            };
            int headDim = h.getShort();
            int nLayers = h.getShort();
            int numHeads = h.getShort();
            int numKvHeads = h.getShort();
            AttentionShape shape = new AttentionShape(nLayers, numHeads, numKvHeads, headDim);
            int nTokens = h.getInt();
            int vocab = h.getInt();
            byte[] fp = new byte[32];
            byte[] th = new byte[32];
            h.get(fp).get(th);
            if (expectedScheme != null && !scheme.equals(expectedScheme)) {
                throw new SnapshotException(SnapshotException.Reason.WRONG_SCHEME, file + " holds a " + scheme.id()
                        + " cache; this lane uses " + expectedScheme.id());
            }
            if (!HexFormat.of().formatHex(fp).equals(fingerprint)) {
                throw new SnapshotException(SnapshotException.Reason.WRONG_MODEL, file + " was written for another model "
                        + "(fingerprint " + HexFormat.of().formatHex(fp).substring(0, 12) + "…, serving "
                        + fingerprint.substring(0, 12) + "…)");
            }
            if (!HexFormat.of().formatHex(th).equals(tokenizerHash)) {
                throw new SnapshotException(SnapshotException.Reason.WRONG_TOKENIZER, file + " was written with another tokenizer");
            }
            long entry = io.tqserve.kv.KvLayout.bytesPerTokenPerHead(scheme, shape.headDim());
            long perLayer = (long) nTokens * shape.numKvHeads() * entry;
            long expected = HEADER_BYTES + (4L * nTokens + 4) + (4L * vocab + 4) + shape.layers() * (perLayer + 4);
            if (size < expected) {
                throw new SnapshotException(SnapshotException.Reason.TRUNCATED, file + " is " + size + " bytes; its header "
                        + "declares " + expected);
            }
            if (size > expected) {
                throw new SnapshotException(SnapshotException.Reason.CHECKSUM, file + " has " + (size - expected)
                        + " unexpected trailing bytes");
            }
            long off = HEADER_BYTES;
            MemorySegment ids = section(all, off, 4L * nTokens, file, "token ids");
            off += 4L * nTokens + 4;
            MemorySegment lg = section(all, off, 4L * vocab, file, "logits");
            off += 4L * vocab + 4;
            int[] tokens = ids.toArray(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN));
            float[] logits = lg.toArray(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN));
            MemorySegment[] layers = new MemorySegment[shape.layers()];
            for (int l = 0; l < layers.length; l++) {
                layers[l] = section(all, off, perLayer, file, "layer " + l);
                off += perLayer + 4;
            }
            return new KvSnapshot(scheme, shape, tokens, logits, layers, fingerprint, tokenizerHash);
        } catch (IOException e) {
            throw new SnapshotException(SnapshotException.Reason.IO, "cannot read snapshot " + file + ": " + e.getMessage(), e);
        } catch (IllegalArgumentException e) {
            throw new SnapshotException(SnapshotException.Reason.NOT_A_SNAPSHOT, file + ": invalid header: " + e.getMessage());
        }
    }

    private static MemorySegment section(MemorySegment all, long off, long len, Path file, String what)
            throws SnapshotException {
        MemorySegment data = all.asSlice(off, len);
        CRC32C crc = new CRC32C();
        crc.update(data.asByteBuffer());
        int stored = all.get(ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), off + len);
        if ((int) crc.getValue() != stored) {
            throw new SnapshotException(SnapshotException.Reason.CHECKSUM, file + ": checksum mismatch in the " + what
                    + " section");
        }
        return data;
    }
}
