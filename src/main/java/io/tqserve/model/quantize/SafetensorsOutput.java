package io.tqserve.model.quantize;

import io.tqserve.backend.DType;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * Streams tensors into {@code model.safetensors} plus the {@code model.safetensors.index.json} mlx-lm writes beside
 * it: the header is laid out first from the declared shapes, then each tensor's producer writes its bytes in order,
 * so no tensor needs to be whole on the heap (the producers decide how much they hold).
 */
public final class SafetensorsOutput {
    /** Writes a tensor's bytes, little-endian, in row-major order. */
    @FunctionalInterface
    public interface Producer {
        void write(Sink sink) throws IOException;
    }

    /** A declared tensor. */
    public record Entry(String name, DType dtype, long[] shape, Producer producer) {
        long bytes() {
            long n = dtype.bytes();
            for (long d : shape) {
                n *= d;
            }
            return n;
        }
    }

    /** Buffered writes to the file; {@link #float32} etc. encode one value. */
    public static final class Sink {
        private final FileChannel ch;
        private final ByteBuffer buf = ByteBuffer.allocate(1 << 20).order(ByteOrder.LITTLE_ENDIAN);
        private long written;

        Sink(FileChannel ch) {
            this.ch = ch;
        }

        private void room(int n) throws IOException {
            if (buf.remaining() < n) {
                flush();
            }
        }

        public void bytes(byte[] b, int off, int len) throws IOException {
            while (len > 0) {
                room(1);
                int n = Math.min(len, buf.remaining());
                buf.put(b, off, n);
                off += n;
                len -= n;
                written += n;
            }
        }

        /** One float in {@code dtype} (BF16 rounded to nearest even, F16, F32). */
        public void value(DType dtype, float v) throws IOException {
            room(4);
            switch (dtype) {
                case BF16 -> buf.putShort(AffineQuantizer.toBf16(v));
                case F16 -> buf.putShort(Float.floatToFloat16(v));
                case F32 -> buf.putFloat(v);
                case U32 -> throw new IllegalArgumentException("U32 data is written as packed bytes");
            }
            written += dtype.bytes();
        }

        void flush() throws IOException {
            buf.flip();
            while (buf.hasRemaining()) {
                ch.write(buf);
            }
            buf.clear();
        }
    }

    private SafetensorsOutput() {
    }

    /** Writes dir/model.safetensors and dir/model.safetensors.index.json. */
    public static void write(Path dir, List<Entry> entries) throws IOException {
        StringBuilder header = new StringBuilder("{\"__metadata__\":{\"format\":\"mlx\"}");
        long offset = 0;
        List<Long> ends = new ArrayList<>();
        for (Entry e : entries) {
            header.append(",\"").append(e.name()).append("\":{\"dtype\":\"").append(e.dtype().name())
                    .append("\",\"shape\":").append(java.util.Arrays.toString(e.shape()).replace(" ", ""))
                    .append(",\"data_offsets\":[").append(offset).append(',').append(offset + e.bytes()).append("]}");
            offset += e.bytes();
            ends.add(offset);
        }
        header.append('}');
        while ((header.length() + 8) % 8 != 0) {
            header.append(' ');
        }
        byte[] hb = header.toString().getBytes(StandardCharsets.UTF_8);
        Path file = dir.resolve("model.safetensors");
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            Sink sink = new Sink(ch);
            ByteBuffer len = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(hb.length);
            sink.bytes(len.array(), 0, 8);
            sink.bytes(hb, 0, hb.length);
            long start = sink.written;
            for (int i = 0; i < entries.size(); i++) {
                entries.get(i).producer().write(sink);
                if (sink.written - start != ends.get(i)) {
                    throw new IllegalStateException("tensor " + entries.get(i).name() + " wrote "
                            + (sink.written - start - (i == 0 ? 0 : ends.get(i - 1))) + " bytes, declared "
                            + entries.get(i).bytes());
                }
            }
            sink.flush();
        }
        ObjectNode index = JsonMapper.shared().createObjectNode();
        index.putObject("metadata").put("total_size", offset);
        ObjectNode map = index.putObject("weight_map");
        entries.stream().map(Entry::name).sorted().forEach(n -> map.put(n, "model.safetensors"));
        Files.writeString(dir.resolve("model.safetensors.index.json"),
                JsonMapper.shared().writerWithDefaultPrettyPrinter().writeValueAsString(index));
    }
}
