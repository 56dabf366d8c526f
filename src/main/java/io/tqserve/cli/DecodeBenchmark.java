package io.tqserve.cli;

import io.tqserve.backend.ComputeBackend;
import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.kv.KvCache;
import io.tqserve.kv.KvCacheFactory;
import io.tqserve.kv.KvScheme;
import io.tqserve.model.ForwardState;
import io.tqserve.model.ModelConfig;
import io.tqserve.model.ModelWeights;
import io.tqserve.model.Safetensors;
import io.tqserve.model.SafetensorsWriter;
import io.tqserve.model.Transformer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;

/**
 * {@code ./tqserve bench decode [--model DIR] [--synthetic] [--prompt-tokens N] [--decode-tokens N] [--threads N]}:
 * prefill and decode tok/s, a memory copy bandwidth measured in the same run, and the fraction of the decode
 * roofline reached (weight bytes per token × tok/s ÷ copy bandwidth). {@code --synthetic} benchmarks a ~0.5B
 * random bf16 Llama (hidden 2048, 16 heads, 8 KV heads, head_dim 128, intermediate 5632, 12 layers) written to a
 * temp folder and deleted afterwards.
 */
final class DecodeBenchmark {
    private DecodeBenchmark() {
    }

    static int run(String[] args) throws Exception {
        CliArgs a = new CliArgs(args, 2, Set.of("--model", "--prompt-tokens", "--decode-tokens", "--threads"),
                Set.of("--synthetic"));
        int promptTokens = a.getInt("--prompt-tokens", 128);
        int decodeTokens = a.getInt("--decode-tokens", 64);
        try (CpuBackend backend = CpuBackend.create(a.getInt("--threads", 0))) {
            System.out.println("backend: " + backend.describe());
            double copyGbs = copyBandwidth();
            System.out.printf("memory copy bandwidth: %.2f GB/s (STREAM convention: bytes read + bytes written, 512 MiB copy, best of 5)%n", copyGbs);
            if (a.has("--synthetic")) {
                Path dir = Files.createTempDirectory("tqserve-synthetic-0.5b");
                try {
                    System.out.println("writing the synthetic ~0.5B model to " + dir + " ...");
                    SafetensorsWriter.writeLlama(dir, 2048, 5632, 12, 16, 8, 128, 32000, 4096, null, 42);
                    bench("synthetic-0.5b", dir, backend, promptTokens, decodeTokens, copyGbs);
                } finally {
                    try (var files = Files.list(dir)) {
                        for (Path f : files.toList()) {
                            Files.deleteIfExists(f);
                        }
                    }
                    Files.deleteIfExists(dir);
                }
            } else {
                bench("model", Path.of(a.get("--model", TqserveMain.DEFAULT_MODEL)), backend, promptTokens, decodeTokens,
                        copyGbs);
            }
        }
        return 0;
    }

    /**
     * GB/s of MemorySegment.copy over a buffer far larger than the caches, counted as STREAM counts Copy (bytes
     * read + bytes written): the memory bandwidth ceiling that a decode step, which streams every weight once, runs
     * against.
     */
    static double copyBandwidth() {
        long size = 512L << 20;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = arena.allocate(size, 64);
            MemorySegment dst = arena.allocate(size, 64);
            src.fill((byte) 1);
            dst.fill((byte) 2);
            double best = 0;
            for (int i = 0; i < 5; i++) {
                long t0 = System.nanoTime();
                MemorySegment.copy(src, 0, dst, 0, size);
                long t1 = System.nanoTime();
                best = Math.max(best, 2.0 * size / ((t1 - t0) / 1e9) / 1e9);
            }
            return best;
        }
    }

    static void bench(String label, Path dir, ComputeBackend backend, int promptTokens, int decodeTokens,
            double copyGbs) throws Exception {
        ModelConfig c = ModelConfig.load(dir);
        try (Safetensors st = Safetensors.open(dir)) {
            ModelWeights w = ModelWeights.load(st, c);
            Transformer t = new Transformer(c, w, backend);
            long weightBytesPerToken = w.lmHead().byteSize();
            for (ModelWeights.Layer l : w.layers()) {
                weightBytesPerToken += l.wq().byteSize() + l.wk().byteSize() + l.wv().byteSize() + l.wo().byteSize()
                        + l.wGate().byteSize() + l.wUp().byteSize() + l.wDown().byteSize();
            }
            int[] prompt = new int[promptTokens];
            for (int i = 0; i < prompt.length; i++) {
                prompt[i] = 3 + (i * 7919) % (c.vocabSize() - 3);
            }
            ForwardState state = new ForwardState(c);
            double[] result = new double[2];
            for (int round = 0; round < 2; round++) { // round 0 warms up the JIT
                try (KvCache cache = KvCacheFactory.create(KvScheme.BF16, t.attentionShape(), backend,
                        promptTokens + decodeTokens)) {
                    long t0 = System.nanoTime();
                    t.forward(state, List.of(Transformer.Chunk.of(cache, prompt)));
                    long t1 = System.nanoTime();
                    int[] one = {prompt[0]};
                    for (int i = 0; i < decodeTokens; i++) {
                        t.forward(state, List.of(Transformer.Chunk.of(cache, one)));
                    }
                    long t2 = System.nanoTime();
                    result[0] = promptTokens / ((t1 - t0) / 1e9);
                    result[1] = decodeTokens / ((t2 - t1) / 1e9);
                }
            }
            double roofline = weightBytesPerToken * result[1] / (copyGbs * 1e9);
            System.out.printf("%s: %s, %d layers, dim %d, %.1f MB weights read per token%n", label,
                    c.architecture().hfName(), c.numLayers(), c.dim(), weightBytesPerToken / 1e6);
            System.out.printf("  prefill %d tokens: %.1f tok/s%n", promptTokens, result[0]);
            System.out.printf("  decode  %d tokens: %.1f tok/s (bf16 KV)%n", decodeTokens, result[1]);
            System.out.printf("  decode roofline fraction: %.2f (weight bytes/token x tok/s / copy bandwidth)%n", roofline);
        }
    }
}
