package io.tqserve.model.quantize;

import io.tqserve.backend.DType;
import io.tqserve.backend.Matrix;
import io.tqserve.model.ForwardState;
import io.tqserve.model.Model;
import io.tqserve.model.Safetensors;
import io.tqserve.model.Transformer;
import io.tqserve.backend.ComputeBackend;
import io.tqserve.kv.KvCacheFactory;
import io.tqserve.kv.KvScheme;
import io.tqserve.kv.KvCache;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/** Test models made at test time: dense twins of quantized folders, and teacher-forced logits. */
final class QuantizedModels {
    static final Path TINY = Path.of("models/tiny-llama-h128");

    private QuantizedModels() {
    }

    /**
     * Writes the dense twin of a quantized folder: every quantized matrix dequantized (exactly the values the
     * kernels use) and stored as float32, every other tensor as float32, the quantization block removed.
     */
    static void writeDenseTwin(Path quantized, Path out) throws IOException {
        Files.createDirectories(out);
        ObjectNode cfg = (ObjectNode) JsonMapper.shared().readTree(Files.readString(quantized.resolve("config.json")));
        cfg.remove("quantization");
        cfg.remove("quantization_config");
        try (Safetensors st = Safetensors.open(quantized)) {
            io.tqserve.model.QuantizationConfig q = io.tqserve.model.QuantizationConfig.parse(
                    JsonMapper.shared().readTree(Files.readString(quantized.resolve("config.json"))));
            List<SafetensorsOutput.Entry> entries = new ArrayList<>();
            for (String name : new java.util.TreeSet<>(st.tensors().keySet())) {
                if (name.endsWith(".scales") || name.endsWith(".biases")) {
                    continue;
                }
                Safetensors.Tensor t = st.get(name);
                String module = name.replace(".weight", "");
                if (t.dtype() == DType.U32) {
                    var p = q.forModule(module, true);
                    int rows = (int) t.shape()[0];
                    int cols = (int) (t.shape()[1] * 32 / p.bits());
                    Safetensors.Tensor s = st.get(module + ".scales");
                    Matrix m = new Matrix(t.data(), DType.U32, rows, cols, new io.tqserve.backend.GroupQuant(p.bits(),
                            p.groupSize(), s.data(), st.get(module + ".biases").data(), s.dtype()));
                    entries.add(new SafetensorsOutput.Entry(name, DType.F32, new long[] {rows, cols}, sink -> {
                        for (int r = 0; r < rows; r++) {
                            for (int c = 0; c < cols; c++) {
                                sink.value(DType.F32, m.get(r, c));
                            }
                        }
                    }));
                } else {
                    entries.add(new SafetensorsOutput.Entry(name, DType.F32, t.shape(), sink -> {
                        for (float v : t.toFloats()) {
                            sink.value(DType.F32, v);
                        }
                    }));
                }
            }
            SafetensorsOutput.write(out, entries);
        }
        Files.writeString(out.resolve("config.json"), cfg.toString());
        for (String f : new String[] {"tokenizer.json", "tokenizer_config.json"}) {
            Files.copy(quantized.resolve(f), out.resolve(f));
        }
    }

    /** Teacher-forced logits of every position of {@code tokens} (rows of vocab). */
    static float[] logits(Model m, ComputeBackend backend, int[] tokens) {
        Transformer t = m.transformer();
        ForwardState state = new ForwardState(m.config());
        try (KvCache cache = KvCacheFactory.create(KvScheme.BF16, t.attentionShape(), backend, tokens.length)) {
            return t.forward(state, List.of(new Transformer.Chunk(cache, tokens, 0, tokens.length, true)))
                    .clone();
        }
    }

    /** The prompts' token ids of the embedded model's PyTorch reference ({@code reference_outputs.json}). */
    static List<int[]> referencePrompts() throws IOException {
        List<int[]> prompts = new ArrayList<>();
        for (var p : JsonMapper.shared().readTree(Files.readString(TINY.resolve("reference_outputs.json")))
                .path("prompts")) {
            int[] ids = new int[p.path("input_ids").size()];
            for (int i = 0; i < ids.length; i++) {
                ids[i] = p.path("input_ids").get(i).asInt();
            }
            prompts.add(ids);
        }
        return prompts;
    }

    /** {@code steps} greedy tokens after a prefill of {@code prompt}, decoding one token per step (bf16 KV cache). */
    static int[] greedy(Model m, ComputeBackend backend, int[] prompt, int steps) {
        Transformer t = m.transformer();
        ForwardState state = new ForwardState(m.config());
        int vocab = m.config().vocabSize();
        int[] out = new int[steps];
        try (KvCache cache = KvCacheFactory.create(KvScheme.BF16, t.attentionShape(), backend,
                prompt.length + steps + 1)) {
            float[] last = t.forward(state, List.of(Transformer.Chunk.of(cache, prompt)));
            for (int i = 0; i < steps; i++) {
                int best = 0;
                for (int v = 1; v < vocab; v++) {
                    best = last[v] > last[best] ? v : best;
                }
                out[i] = best;
                last = t.forward(state, List.of(Transformer.Chunk.of(cache, new int[] {best})));
            }
        }
        return out;
    }

    static float maxAbsDiff(float[] a, float[] b, int n) {
        float max = 0;
        for (int i = 0; i < n; i++) {
            max = Math.max(max, Math.abs(a[i] - b[i]));
        }
        return max;
    }
}
