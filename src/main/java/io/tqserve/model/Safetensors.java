package io.tqserve.model;

import io.tqserve.backend.DType;
import io.tqserve.backend.Layouts;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeSet;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Memory-mapped safetensors weights, single file or sharded through {@code model.safetensors.index.json}. Files
 * are mapped read-only with {@link FileChannel#map(FileChannel.MapMode, long, long, Arena)}; tensors are slices of
 * the mapping, never copied onto the heap. Written by hand because the format is a 8-byte length, a JSON header
 * and raw bytes, and no maintained Java library maps it off-heap without pulling a native runtime.
 */
public final class Safetensors implements AutoCloseable {

    /** One tensor: its dtype, shape and bytes (a slice of a mapped file). */
    public record Tensor(String name, DType dtype, long[] shape, MemorySegment data) {
        public long elements() {
            long n = 1;
            for (long d : shape) {
                n *= d;
            }
            return n;
        }

        /** Copies the tensor to a float array (for small tensors: norms, biases). */
        public float[] toFloats() {
            long n = elements();
            if (n > Integer.MAX_VALUE) {
                throw new IllegalStateException(name + " is too large to copy");
            }
            float[] out = new float[(int) n];
            if (dtype == DType.U32) {
                throw new IllegalArgumentException(name + " holds packed quantized codes (U32), not floats");
            }
            for (int i = 0; i < out.length; i++) {
                out[i] = dtype.read(data, i);
            }
            return out;
        }
    }

    private final Arena arena;
    private final Map<String, Tensor> tensors;
    private final Map<String, String> headerDigestParts;

    private Safetensors(Arena arena, Map<String, Tensor> tensors, Map<String, String> headerDigestParts) {
        this.arena = arena;
        this.tensors = tensors;
        this.headerDigestParts = headerDigestParts;
    }

    /** Opens every safetensors file of a model folder (via the index when sharded). */
    public static Safetensors open(Path modelDir) throws IOException {
        Path index = modelDir.resolve("model.safetensors.index.json");
        TreeSet<String> files = new TreeSet<>();
        if (Files.exists(index)) {
            JsonNode map = JsonMapper.shared().readTree(Files.readString(index)).path("weight_map");
            map.forEach(f -> files.add(f.asString()));
            if (files.isEmpty()) {
                throw new IOException(index + " has no weight_map entries");
            }
        } else if (Files.exists(modelDir.resolve("model.safetensors"))) {
            files.add("model.safetensors");
        } else {
            throw new IOException("no model.safetensors or model.safetensors.index.json in " + modelDir.toAbsolutePath());
        }
        Arena arena = Arena.ofShared();
        try {
            Map<String, Tensor> all = new LinkedHashMap<>();
            Map<String, String> headers = new LinkedHashMap<>();
            for (String f : files) {
                headers.put(f, mapFile(modelDir.resolve(f), arena, all));
            }
            return new Safetensors(arena, all, headers);
        } catch (IOException | RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    private static String mapFile(Path file, Arena arena, Map<String, Tensor> out) throws IOException {
        if (!Files.exists(file)) {
            throw new IOException("missing weight file " + file.toAbsolutePath());
        }
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            long size = ch.size();
            if (size < 8) {
                throw new IOException(file + " is too short to be a safetensors file");
            }
            MemorySegment seg = ch.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
            long headerLen = seg.get(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED
                    .withOrder(java.nio.ByteOrder.LITTLE_ENDIAN), 0);
            if (headerLen <= 0 || 8 + headerLen > size || headerLen > 100_000_000) {
                throw new IOException(file + ": invalid safetensors header length " + headerLen);
            }
            byte[] hb = seg.asSlice(8, headerLen).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
            String header = new String(hb, StandardCharsets.UTF_8);
            JsonNode root = JsonMapper.shared().readTree(header);
            long dataStart = 8 + headerLen;
            for (var e : root.properties()) {
                String name = e.getKey();
                if (name.equals("__metadata__")) {
                    continue;
                }
                JsonNode t = e.getValue();
                DType dtype = DType.fromSafetensors(t.path("dtype").asString());
                JsonNode shapeNode = t.path("shape");
                long[] shape = new long[shapeNode.size()];
                for (int i = 0; i < shape.length; i++) {
                    shape[i] = shapeNode.get(i).asLong();
                }
                long begin = t.path("data_offsets").get(0).asLong();
                long end = t.path("data_offsets").get(1).asLong();
                long elems = 1;
                for (long d : shape) {
                    elems *= d;
                }
                if (end - begin != elems * dtype.bytes() || dataStart + end > size || begin < 0) {
                    throw new IOException(file + ": tensor " + name + " has inconsistent offsets " + begin + ".." + end);
                }
                out.put(name, new Tensor(name, dtype, shape, seg.asSlice(dataStart + begin, end - begin)));
            }
            return header;
        }
    }

    public boolean has(String name) {
        return tensors.containsKey(name);
    }

    public Tensor get(String name) {
        Tensor t = tensors.get(name);
        if (t == null) {
            throw new IllegalArgumentException("weights lack tensor '" + name + "'");
        }
        return t;
    }

    public Map<String, Tensor> tensors() {
        return tensors;
    }

    /** The JSON headers of every file (file name to header), for a model fingerprint. */
    public Map<String, String> headers() {
        return headerDigestParts;
    }

    /** Total mapped tensor bytes. */
    public long byteSize() {
        return tensors.values().stream().mapToLong(t -> t.data().byteSize()).sum();
    }

    @Override
    public void close() {
        arena.close();
    }
}
