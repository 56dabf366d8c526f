package io.tqserve.model.quantize;

import io.tqserve.backend.DType;
import io.tqserve.backend.Matrix;
import io.tqserve.model.ModelConfig;
import io.tqserve.model.QuantizationConfig;
import io.tqserve.model.Safetensors;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.regex.Pattern;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * Writes an mlx-community-style quantized copy of a dense model folder: every Linear and Embedding weight whose
 * width is a multiple of the group size (the q/k/v/o and MLP projections, the embedding, an untied LM head), unless
 * its module matches {@code keep}, becomes {@code weight} (U32 packed codes) + {@code scales} + {@code biases} in
 * the source dtype ({@link AffineQuantizer}, MLX's rounding); other tensors are copied; config.json gains the
 * {@code quantization} block and its {@code quantization_config} twin; tokenizer and template files are copied.
 *
 * <p>With {@code rotate}, the weights are first rotated the QuaRot way, which changes no output in exact arithmetic:
 * each RMSNorm scale is folded into the projections that read its output (q/k/v, gate/up, the LM head) and set to
 * ones; then the residual stream is rotated by a seeded randomized Hadamard matrix R ({@link Hadamard}): embedding
 * rows and the rows of every projection reading the stream become R·row, the projections writing it (o_proj,
 * down_proj) become R·W. RMSNorm without its scale commutes with an orthogonal R, so logits are unchanged, while
 * outlier channels are spread over all columns before quantization. A tied LM head is written untied (the final
 * norm is folded into it but not into the embedding).
 *
 * @see Options
 */
public final class WeightQuantizer {
    /**
     * @param bits      code width (2, 3, 4, 5, 6, 8), or 0 to keep the matrices dense (e.g. rotation alone)
     * @param groupSize 32, 64 or 128
     * @param keep      modules (e.g. {@code lm_head}) matching this are left dense; null = none
     * @param rotate    fold norms and rotate the residual stream first
     * @param seed      the rotation's seed
     * @param denseType dtype of the tensors left dense, or null for their source dtype
     * @param layerBits per-module code widths (module regex to bits, first match wins), written as mlx-lm's
     *                  per-module entries of the quantization block; empty = none
     */
    public record Options(int bits, int groupSize, Pattern keep, boolean rotate, long seed, DType denseType,
            java.util.Map<Pattern, Integer> layerBits) {
        public Options {
            layerBits = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(layerBits));
            if (bits != 0) {
                new QuantizationConfig.Params(bits, groupSize, "affine").validateFor("--bits/--group-size");
            }
            for (var e : layerBits.entrySet()) {
                new QuantizationConfig.Params(e.getValue(), groupSize, "affine").validateFor(e.getKey().pattern());
            }
        }

        public Options(int bits, int groupSize, Pattern keep, boolean rotate, long seed, DType denseType) {
            this(bits, groupSize, keep, rotate, seed, denseType, java.util.Map.of());
        }

        /** The code width of a module: its override, else the default. */
        int bitsFor(String module) {
            for (var e : layerBits.entrySet()) {
                if (e.getKey().matcher(module).find()) {
                    return e.getValue();
                }
            }
            return bits;
        }
    }

    /** Progress: fraction of source weight bytes processed, and the tensor just written. */
    @FunctionalInterface
    public interface Progress {
        void update(double fraction, String tensor);
    }

    private final Safetensors st;
    private final ModelConfig config;
    private final Options options;
    private final Hadamard rotation;
    private final long totalBytes;
    private long doneBytes;
    /** Modules written with a width other than the default (module to bits). */
    private final java.util.Map<String, Integer> overridden = new java.util.TreeMap<>();

    private WeightQuantizer(Safetensors st, ModelConfig config, Options options) {
        this.st = st;
        this.config = config;
        this.options = options;
        this.rotation = options.rotate() ? new Hadamard(config.dim(), options.seed()) : null;
        this.totalBytes = Math.max(1, st.byteSize());
    }

    /** Quantizes (and optionally rotates) {@code src} into the new folder {@code out}. */
    public static void run(Path src, Path out, Options options, Progress progress) throws IOException {
        JsonNode root = JsonMapper.shared().readTree(Files.readString(src.resolve("config.json")));
        if (QuantizationConfig.parse(root).quantized()) {
            throw new IllegalArgumentException(src + " is quantized already; quantize a dense (bf16/f16/f32) model");
        }
        ModelConfig config = ModelConfig.parse(root);
        Files.createDirectories(out);
        java.util.Map<String, Integer> overridden;
        try (Safetensors st = Safetensors.open(src)) {
            WeightQuantizer q = new WeightQuantizer(st, config, options);
            SafetensorsOutput.write(out, q.entries(progress));
            overridden = q.overridden;
        }
        ObjectNode cfg = (ObjectNode) root.deepCopy();
        if (options.bits() > 0) {
            ObjectNode block = JsonMapper.shared().createObjectNode();
            block.put("group_size", options.groupSize()).put("bits", options.bits()).put("mode", "affine");
            overridden.forEach((module, bits) -> block.putObject(module).put("group_size", options.groupSize())
                    .put("bits", bits).put("mode", "affine"));
            cfg.set("quantization", block);
            cfg.set("quantization_config", block.deepCopy());
        }
        if (options.rotate()) {
            cfg.put("tie_word_embeddings", false);
            cfg.putObject("tqserve_rotation").put("kind", "randomized-hadamard").put("seed", options.seed());
        }
        Files.writeString(out.resolve("config.json"),
                JsonMapper.shared().writerWithDefaultPrettyPrinter().writeValueAsString(cfg));
        copySideFiles(src, out);
    }

    /** Tokenizer, chat-template and generation files (what mlx-lm copies beside the weights). */
    private static void copySideFiles(Path src, Path out) throws IOException {
        try (var files = Files.list(src)) {
            for (Path f : files.toList()) {
                String n = f.getFileName().toString();
                boolean side = n.startsWith("tokenizer") || n.startsWith("chat_template") || n.startsWith("vocab.")
                        || n.equals("special_tokens_map.json") || n.equals("added_tokens.json")
                        || n.equals("generation_config.json") || n.equals("merges.txt") || n.endsWith(".tiktoken");
                if (Files.isRegularFile(f) && side) {
                    Files.copy(f, out.resolve(n), StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
    }

    private List<SafetensorsOutput.Entry> entries(Progress progress) {
        TreeSet<String> names = new TreeSet<>(st.tensors().keySet());
        boolean deriveHead = options.rotate() && (config.tieEmbeddings() || !names.contains("lm_head.weight"));
        if (deriveHead) {
            names.add("lm_head.weight");
        }
        List<SafetensorsOutput.Entry> out = new ArrayList<>();
        for (String name : names) {
            String source = deriveHead && name.equals("lm_head.weight") ? "model.embed_tokens.weight" : name;
            Safetensors.Tensor t = st.get(source);
            if (t.dtype() == DType.U32) {
                throw new IllegalArgumentException("tensor " + name + " is packed (U32) already");
            }
            if (t.shape().length != 2) {
                DType dt = options.denseType() != null ? options.denseType() : t.dtype();
                boolean ones = options.rotate() && name.endsWith("layernorm.weight") || options.rotate()
                        && name.equals("model.norm.weight");
                out.add(new SafetensorsOutput.Entry(name, dt, t.shape(), sink -> {
                    float[] v = t.toFloats();
                    for (float x : v) {
                        sink.value(dt, ones ? 1f : x);
                    }
                    advance(t.data().byteSize(), name, progress);
                }));
                continue;
            }
            String module = name.substring(0, name.length() - ".weight".length());
            int rows = (int) t.shape()[0];
            int cols = (int) t.shape()[1];
            Rows src = new Rows(new Matrix(t.data(), t.dtype(), rows, cols), role(name), foldedNorm(name));
            boolean quantize = options.bits() > 0 && name.endsWith(".weight") && cols % options.groupSize() == 0
                    && (options.keep() == null || !options.keep().matcher(module).find());
            if (!quantize) {
                DType dt = options.denseType() != null ? options.denseType() : t.dtype();
                out.add(new SafetensorsOutput.Entry(name, dt, t.shape(), sink -> {
                    float[] row = new float[cols];
                    for (int r = 0; r < rows; r++) {
                        src.row(r, row);
                        for (float x : row) {
                            sink.value(dt, x);
                        }
                    }
                    src.release();
                    advance(t.data().byteSize(), name, progress);
                }));
                continue;
            }
            int bits = options.bitsFor(module);
            if (bits != options.bits()) {
                overridden.put(module, bits);
            }
            int groups = cols / options.groupSize();
            float[] none = new float[0];
            float[][] holder = new float[2][];
            out.add(new SafetensorsOutput.Entry(name, DType.U32, new long[] {rows, (long) cols * bits / 32}, sink -> {
                float[] row = new float[cols];
                byte[] packed = new byte[cols * bits / 8];
                holder[0] = new float[rows * groups];
                holder[1] = new float[rows * groups];
                for (int r = 0; r < rows; r++) {
                    src.row(r, row);
                    AffineQuantizer.quantizeRow(row, 0, cols, bits, options.groupSize(), packed, 0, holder[0],
                            holder[1], r * groups);
                    sink.bytes(packed, 0, packed.length);
                }
                src.release();
                advance(t.data().byteSize(), name, progress);
            }));
            long[] sshape = {rows, groups};
            out.add(new SafetensorsOutput.Entry(module + ".scales", t.dtype(), sshape, sink -> {
                for (float s : holder[0]) {
                    sink.value(t.dtype(), s);
                }
            }));
            out.add(new SafetensorsOutput.Entry(module + ".biases", t.dtype(), sshape, sink -> {
                for (float b : holder[1]) {
                    sink.value(t.dtype(), b);
                }
                holder[0] = none; // let the arrays go
                holder[1] = none;
            }));
        }
        return out;
    }

    private void advance(long bytes, String tensor, Progress progress) {
        doneBytes += bytes;
        if (progress != null) {
            progress.update(Math.min(1.0, (double) doneBytes / totalBytes), tensor);
        }
    }

    /** How the rotation treats a matrix. */
    enum Role { EMBEDDING, READS_STREAM, WRITES_STREAM, OTHER }

    private Role role(String name) {
        if (rotation == null) {
            return Role.OTHER;
        }
        if (name.equals("model.embed_tokens.weight")) {
            return Role.EMBEDDING;
        }
        if (name.equals("lm_head.weight") || name.matches(".*\\.(self_attn\\.[qkv]_proj|mlp\\.(gate|up)_proj)\\.weight")) {
            return Role.READS_STREAM;
        }
        if (name.matches(".*\\.(self_attn\\.o_proj|mlp\\.down_proj)\\.weight")) {
            return Role.WRITES_STREAM;
        }
        return Role.OTHER;
    }

    /** The RMSNorm scale folded into a stream-reading matrix (its input columns), or null. */
    private float[] foldedNorm(String name) {
        if (rotation == null) {
            return null;
        }
        if (name.equals("lm_head.weight")) {
            return st.get("model.norm.weight").toFloats();
        }
        int at = name.indexOf(".self_attn.");
        String norm = "input_layernorm";
        if (at < 0) {
            at = name.indexOf(".mlp.");
            norm = "post_attention_layernorm";
        }
        if (at < 0 || !(name.contains("_proj.weight")) || name.contains("o_proj") || name.contains("down_proj")) {
            return null;
        }
        return st.get(name.substring(0, at) + "." + norm + ".weight").toFloats();
    }

    /** The rows of a source matrix with the rotation applied. */
    private final class Rows {
        private final Matrix m;
        private final Role role;
        private final float[] norm;
        private float[] whole; // WRITES_STREAM: R·W needs whole columns

        Rows(Matrix m, Role role, float[] norm) {
            this.m = m;
            this.role = role;
            this.norm = norm;
        }

        void row(int r, float[] dst) {
            if (role == Role.WRITES_STREAM) {
                if (whole == null) {
                    whole = rotateColumns();
                }
                System.arraycopy(whole, r * m.cols(), dst, 0, m.cols());
                return;
            }
            m.row(r, dst);
            if (norm != null) {
                for (int i = 0; i < dst.length; i++) {
                    dst[i] *= norm[i];
                }
            }
            if (role == Role.EMBEDDING || role == Role.READS_STREAM) {
                rotation.apply(dst, 0);
            }
        }

        private float[] rotateColumns() {
            int rows = m.rows();
            int cols = m.cols();
            float[] w = new float[rows * cols];
            float[] row = new float[cols];
            for (int r = 0; r < rows; r++) {
                m.row(r, row);
                System.arraycopy(row, 0, w, r * cols, cols);
            }
            float[] col = new float[rows];
            for (int c = 0; c < cols; c++) {
                for (int r = 0; r < rows; r++) {
                    col[r] = w[r * cols + c];
                }
                rotation.apply(col, 0);
                for (int r = 0; r < rows; r++) {
                    w[r * cols + c] = col[r];
                }
            }
            return w;
        }

        void release() {
            whole = null;
        }
    }
}
