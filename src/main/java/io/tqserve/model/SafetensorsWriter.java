package io.tqserve.model;

import io.tqserve.backend.DType;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Writes a safetensors file of random tensors: synthetic models for benchmarks and tests (e.g. the ~0.5B
 * decode benchmark model, a head_dim-96 model for startup validation). Streams tensor data, never holding a
 * whole tensor on the heap.
 */
public final class SafetensorsWriter {
    /** A tensor to write: name, dtype, shape, and the std of its N(0, std²)-ish uniform fill (0 = ones). */
    public record Spec(String name, DType dtype, long[] shape, float std) {
        long bytes() {
            long n = dtype.bytes();
            for (long d : shape) {
                n *= d;
            }
            return n;
        }
    }

    private SafetensorsWriter() {
    }

    public static void write(Path file, Iterable<Spec> specs, long seed) throws IOException {
        StringBuilder header = new StringBuilder("{");
        long offset = 0;
        Map<Spec, Long> offsets = new LinkedHashMap<>();
        for (Spec s : specs) {
            if (header.length() > 1) {
                header.append(',');
            }
            header.append('"').append(s.name()).append("\":{\"dtype\":\"").append(s.dtype().name())
                    .append("\",\"shape\":").append(java.util.Arrays.toString(s.shape()).replace(" ", ""))
                    .append(",\"data_offsets\":[").append(offset).append(',').append(offset + s.bytes()).append("]}");
            offsets.put(s, offset);
            offset += s.bytes();
        }
        header.append('}');
        while ((header.length() + 8) % 8 != 0) {
            header.append(' ');
        }
        byte[] hb = header.toString().getBytes(StandardCharsets.UTF_8);
        SplittableRandom random = new SplittableRandom(seed);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            ByteBuffer len = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(hb.length).flip();
            ch.write(len);
            ch.write(ByteBuffer.wrap(hb));
            ByteBuffer buf = ByteBuffer.allocate(1 << 20).order(ByteOrder.LITTLE_ENDIAN);
            for (Spec s : offsets.keySet()) {
                long n = s.bytes() / s.dtype().bytes();
                float a = s.std() * 1.7320508f; // uniform(-a, a) has std a/√3
                for (long i = 0; i < n; i++) {
                    float v = s.std() == 0 ? 1f : (float) ((random.nextDouble() * 2 - 1) * a);
                    if (buf.remaining() < 4) {
                        ch.write(buf.flip());
                        buf.clear();
                    }
                    switch (s.dtype()) {
                        case BF16 -> buf.putShort((short) (Float.floatToRawIntBits(v) >>> 16));
                        case F16 -> buf.putShort(Float.floatToFloat16(v));
                        case F32 -> buf.putFloat(v);
                    }
                }
            }
            ch.write(buf.flip());
        }
    }

    /**
     * Writes a random-weight Llama model folder (config.json + model.safetensors, bf16). The tokenizer files
     * are copied from {@code tokenizerFrom} when given.
     */
    public static void writeLlama(Path dir, int dim, int hiddenDim, int layers, int numHeads, int numKvHeads,
            int headDim, int vocab, int maxPositions, Path tokenizerFrom, long seed) throws IOException {
        Files.createDirectories(dir);
        String config = """
                {"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_act":"silu","hidden_size":%d,"intermediate_size":%d,
                 "num_hidden_layers":%d,"num_attention_heads":%d,"num_key_value_heads":%d,"head_dim":%d,
                 "vocab_size":%d,"max_position_embeddings":%d,"rms_norm_eps":1e-5,"rope_theta":10000.0,
                 "tie_word_embeddings":true,"torch_dtype":"bfloat16","bos_token_id":0,"eos_token_id":0}
                """.formatted(dim, hiddenDim, layers, numHeads, numKvHeads, headDim, vocab, maxPositions);
        Files.writeString(dir.resolve("config.json"), config);
        java.util.List<Spec> specs = new java.util.ArrayList<>();
        float std = 0.02f;
        specs.add(new Spec("model.embed_tokens.weight", DType.BF16, new long[] {vocab, dim}, std));
        for (int l = 0; l < layers; l++) {
            String p = "model.layers." + l + ".";
            specs.add(new Spec(p + "input_layernorm.weight", DType.BF16, new long[] {dim}, 0));
            specs.add(new Spec(p + "self_attn.q_proj.weight", DType.BF16, new long[] {(long) numHeads * headDim, dim}, std));
            specs.add(new Spec(p + "self_attn.k_proj.weight", DType.BF16, new long[] {(long) numKvHeads * headDim, dim}, std));
            specs.add(new Spec(p + "self_attn.v_proj.weight", DType.BF16, new long[] {(long) numKvHeads * headDim, dim}, std));
            specs.add(new Spec(p + "self_attn.o_proj.weight", DType.BF16, new long[] {dim, (long) numHeads * headDim}, std));
            specs.add(new Spec(p + "post_attention_layernorm.weight", DType.BF16, new long[] {dim}, 0));
            specs.add(new Spec(p + "mlp.gate_proj.weight", DType.BF16, new long[] {hiddenDim, dim}, std));
            specs.add(new Spec(p + "mlp.up_proj.weight", DType.BF16, new long[] {hiddenDim, dim}, std));
            specs.add(new Spec(p + "mlp.down_proj.weight", DType.BF16, new long[] {dim, hiddenDim}, std));
        }
        specs.add(new Spec("model.norm.weight", DType.BF16, new long[] {dim}, 0));
        write(dir.resolve("model.safetensors"), specs, seed);
        if (tokenizerFrom != null) {
            for (String f : new String[] {"tokenizer.json", "tokenizer_config.json"}) {
                if (Files.exists(tokenizerFrom.resolve(f))) {
                    Files.copy(tokenizerFrom.resolve(f), dir.resolve(f), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
    }
}
