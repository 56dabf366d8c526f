package io.tqserve.cli;

import io.tqserve.backend.ComputeBackend;
import io.tqserve.backend.DeviceSampler;
import io.tqserve.backend.DeviceStats;
import io.tqserve.backend.SamplingSpec;
import io.tqserve.backend.BackendSelector;
import io.tqserve.kv.KvCache;
import io.tqserve.kv.KvCacheFactory;
import io.tqserve.kv.KvScheme;
import io.tqserve.model.ForwardState;
import io.tqserve.model.ModelConfig;
import io.tqserve.model.ModelWeights;
import io.tqserve.model.Safetensors;
import io.tqserve.model.Transformer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;

/**
 * {@code ./tqserve bench decode [--model DIR] [--synthetic] [--prompt-tokens N] [--decode-tokens N] [--threads N]
 * [--kv turbo:k8v3] [--contexts 256,1024,...] [--repeat N] [--max-context N] [--no-sweep] [--no-batched]
 * [--weights bf16,8,4] [--synthetic-dir DIR]}: prefill and decode tok/s, the memory read and copy bandwidths
 * measured in the same run ({@link MemoryBandwidth}), and the fraction of the decode roofline reached (weight bytes per token × tok/s ÷ read
 * bandwidth; the fraction of the copy bandwidth beside it); then a context-length sweep ({@link ContextSweep}):
 * decode tok/s and attention time per step for bf16 and the three attention paths of the turbo scheme, as ratios to
 * bf16. {@code --synthetic} benchmarks the {@link SyntheticModel} written to a temp folder and deleted afterwards;
 * {@code --synthetic-dir DIR} writes it to DIR once and keeps it (later runs reuse it; other engines can convert it).
 * {@code --max-context N} overrides the model's max positions (RoPE tables), e.g. to sweep the tiny
 * 2048-position model to 4k+ (its outputs beyond its trained context are meaningless; its speed is not).
 * {@code --weights 4} benchmarks a copy quantized to that width (MLX affine, group 64) instead; a list
 * ({@code --weights bf16,8,4}) compares the formats' decode tok/s interleaved ({@link WeightsDecodeComparison}).
 * {@code --no-batched} skips the table of 1/2/4/8/16 sequences decoded together.
 */
final class DecodeBenchmark {
    private DecodeBenchmark() {
    }

    static int run(String[] args) throws Exception {
        CliArgs a = new CliArgs(args, 2, Set.of("--model", "--prompt-tokens", "--decode-tokens", "--threads", "--kv",
                "--contexts", "--repeat", "--max-context", "--weights", "--backend", "--mlx-library", "--mlx-dtype",
                "--mlx-turbo-kernel", "--synthetic-dir"),
                Set.of("--synthetic", "--no-sweep", "--no-batched"));
        List<Integer> weights = parseWeights(a.get("--weights", "bf16"));
        KvScheme kv = KvScheme.parse(a.get("--kv", "turbo:k8v3"));
        if (!(kv instanceof KvScheme.Turbo turbo)) {
            throw new IllegalArgumentException("--kv must be a turbo scheme (the sweep compares its attention paths)");
        }
        Sweep sweep = a.has("--no-sweep") ? null : new Sweep(turbo, parseContexts(a.get("--contexts", null)),
                a.getInt("--repeat", 3), a.getInt("--max-context", 0));
        int promptTokens = a.getInt("--prompt-tokens", 128);
        int decodeTokens = a.getInt("--decode-tokens", 64);
        BackendSelector.Selection selection = BackendSelector.select(a.get("--backend", "cpu"), a.getInt("--threads", 0),
                a.get("--mlx-library", null), a.mlxOptions());
        try (ComputeBackend backend = selection.backend()) {
            System.out.println("backend: " + backend.describe());
            double peak = "cpu".equals(backend.name()) ? io.tqserve.backend.cpu.FmaPeak.measure(backend, 20_000_000) : 0;
            Ceilings mem = new Ceilings(MemoryBandwidth.read(backend), MemoryBandwidth.copy(), !a.has("--no-batched"),
                    peak);
            if (peak > 0) {
                System.out.printf("f32 FMA peak: %.1f GFLOP/s (%d threads, register-only multiply-add chains, best of 5;"
                        + " the Vector API has no bf16 dot product)%n", peak, backend.threads());
            }
            System.out.printf("memory read bandwidth: %.2f GB/s (%d threads, each streaming its slice of a 1 GiB buffer,"
                    + " best of 7)%n", mem.readGbs(), backend.threads());
            System.out.printf("memory copy bandwidth: %.2f GB/s (STREAM convention: bytes read + bytes written, 512 MiB"
                    + " copy on one thread, best of 5)%n", mem.copyGbs());
            if (a.has("--synthetic-dir")) { // written once, kept for later runs and for other engines' converters
                Path dir = SyntheticModel.writeIfAbsent(Path.of(a.get("--synthetic-dir", null)));
                benchWeights("synthetic-0.58b", dir, weights, backend, promptTokens, decodeTokens, mem, sweep);
            } else if (a.has("--synthetic")) {
                Path dir = SyntheticModel.writeTemp();
                try {
                    benchWeights("synthetic-0.58b", dir, weights, backend, promptTokens, decodeTokens, mem, sweep);
                } finally {
                    SyntheticModel.deleteTree(dir);
                }
            } else {
                benchWeights("model", Path.of(a.get("--model", TqserveMain.DEFAULT_MODEL)), weights, backend,
                        promptTokens, decodeTokens, mem, sweep);
            }
        }
        return 0;
    }

    /** The two bandwidths the roofline fractions divide by (GB/s); batched: run the 1/2/4/8/16-sequence table too; the f32 FMA peak (GFLOP/s, 0 when not measured). */
    record Ceilings(double readGbs, double copyGbs, boolean batched, double fmaPeakGflops) {
    }

    /** Multiply-add flops of the weight matmuls of a prefill of n tokens (all layers; the LM head for one row). */
    static double prefillFlops(ModelWeights w, int n) {
        double layer = 0;
        for (ModelWeights.Layer l : w.layers()) {
            for (io.tqserve.backend.Matrix m : List.of(l.wq(), l.wk(), l.wv(), l.wo(), l.wGate(), l.wUp(), l.wDown())) {
                layer += (double) m.rows() * m.cols();
            }
        }
        return 2.0 * (layer * n + (double) w.lmHead().rows() * w.lmHead().cols());
    }

    /** "bf16,8,4" to code widths, 0 standing for the dense weights as stored. */
    static List<Integer> parseWeights(String s) {
        List<Integer> out = new java.util.ArrayList<>();
        for (String p : s.split(",")) {
            String t = p.trim().toLowerCase(java.util.Locale.ROOT);
            try {
                out.add(t.equals("bf16") || t.equals("dense") ? 0 : Integer.parseInt(t.startsWith("q") ? t.substring(1) : t));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("--weights takes a list of bf16 and code widths (e.g. bf16,8,4), got " + s);
            }
        }
        return out;
    }

    /**
     * The benchmark of one weight format: the dense model as stored, or a copy quantized to the given width (group
     * size 64, written to a temp folder with the quantize verb's code and deleted afterwards). Several formats are
     * compared interleaved instead ({@link WeightsDecodeComparison}).
     */
    static void benchWeights(String label, Path dir, List<Integer> weights, ComputeBackend backend, int promptTokens,
            int decodeTokens, Ceilings mem, Sweep sweep) throws Exception {
        if (weights.size() > 1) {
            WeightsDecodeComparison.run(label, dir, weights, backend, promptTokens, decodeTokens, mem.readGbs());
            return;
        }
        int bits = weights.get(0);
        if (bits == 0) {
            bench(label, dir, backend, promptTokens, decodeTokens, mem, sweep);
            return;
        }
        Path q = Files.createTempDirectory("tqserve-bench-q" + bits);
        try {
            System.err.println("quantizing to " + bits + " bits ...");
            io.tqserve.model.quantize.WeightQuantizer.run(dir, q, new io.tqserve.model.quantize.WeightQuantizer.Options(
                    bits, 64, null, false, 0, null), null);
            bench(label + " " + bits + "-bit weights", q, backend, promptTokens, decodeTokens, mem, sweep);
        } finally {
            SyntheticModel.deleteTree(q);
        }
    }

    /** Bytes a decode step reads from the weights: every layer matrix once, the LM head once. */
    static long weightBytesPerToken(ModelWeights w) {
        long bytes = w.lmHead().byteSize();
        for (ModelWeights.Layer l : w.layers()) {
            bytes += l.wq().byteSize() + l.wk().byteSize() + l.wv().byteSize() + l.wo().byteSize()
                    + l.wGate().byteSize() + l.wUp().byteSize() + l.wDown().byteSize();
        }
        return bytes;
    }

    /** The benchmark prompt: n token ids spread over the vocabulary. */
    static int[] prompt(ModelConfig c, int n) {
        int[] prompt = new int[n];
        for (int i = 0; i < prompt.length; i++) {
            prompt[i] = 3 + (i * 7919) % (c.vocabSize() - 3);
        }
        return prompt;
    }

    /** What the context sweep runs; contexts null = the default ladder. */
    record Sweep(KvScheme.Turbo turbo, List<Integer> contexts, int repeat, int maxContext) {
    }

    static List<Integer> parseContexts(String s) {
        if (s == null) {
            return null;
        }
        List<Integer> out = new java.util.ArrayList<>();
        for (String p : s.split(",")) {
            try {
                out.add(Integer.parseInt(p.trim()));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("--contexts must be a comma-separated list of integers, got " + s);
            }
        }
        return out;
    }

    /** Benchmarks one model folder; returns its decode tok/s. */
    static double bench(String label, Path dir, ComputeBackend device, int promptTokens, int decodeTokens,
            Ceilings mem, Sweep sweep) throws Exception {
        // on the CPU backend the decode step is timed by phase; a device backend runs the whole forward itself
        PhaseTimedBackend timed = "cpu".equals(device.name()) ? new PhaseTimedBackend(device) : null;
        ComputeBackend backend = timed != null ? timed : device;
        ModelConfig c = ModelConfig.load(dir);
        if (sweep != null && sweep.maxContext() > 0) {
            c = new ModelConfig(c.architecture(), c.dim(), c.hiddenDim(), c.numLayers(), c.numHeads(), c.numKvHeads(),
                    c.headDim(), c.vocabSize(), sweep.maxContext(), c.rmsNormEps(), c.ropeTheta(), c.ropeScaling(),
                    c.tieEmbeddings(), c.dtype(), c.eosTokenIds(), c.bosTokenId());
        }
        try (Safetensors st = Safetensors.open(dir)) {
            ModelWeights w = ModelWeights.load(st, c, io.tqserve.model.QuantizationConfig.load(dir));
            // with the weight files, a backend with a device decoder (MLX) runs the whole forward on its device
            Transformer t = new Transformer(c, w, backend, st.headers().keySet().stream().map(dir::resolve).toList());
            long weightBytesPerToken = weightBytesPerToken(w);
            int[] prompt = prompt(c, promptTokens);
            ForwardState state = new ForwardState(c);
            double[] result = new double[3];
            long[] steps = new long[decodeTokens];
            DeviceStats stepStats = DeviceStats.NONE;
            io.tqserve.backend.cpu.CpuBackend cpu = device instanceof io.tqserve.backend.cpu.CpuBackend b ? b : null;
            io.tqserve.backend.cpu.CpuBackend.KernelTime kernelTime = null;
            // warm-up rounds, then one measured round: see JitWarmup
            JitWarmup warmup = new JitWarmup();
            boolean measured;
            do {
                measured = warmup.done();
                try (KvCache cache = KvCacheFactory.create(KvScheme.BF16, t.attentionShape(), backend,
                        promptTokens + decodeTokens);
                        DeviceSampler sampler = t.runsOnDevice(cache) ? t.deviceSampler(new SamplingSpec(0f, 0, 1f, 0f,
                                0L, 1f, 0f, 0f, java.util.Map.of(), -1, prompt)).orElseThrow() : null) {
                    long t0 = System.nanoTime();
                    t.forward(state, List.of(Transformer.Chunk.of(cache, prompt)));
                    long t1 = System.nanoTime();
                    int[] one = {prompt[0]};
                    DeviceStats decodeStart = backend.deviceStats();
                    if (timed != null) {
                        timed.reset();
                    }
                    io.tqserve.backend.cpu.CpuBackend.KernelTime kernelStart = cpu == null ? null : cpu.matvecBlockTime();
                    long s0 = t1;
                    for (int i = 0; i < decodeTokens; i++) {
                        t.forward(state, List.of(sampler == null ? Transformer.Chunk.of(cache, one)
                                : Transformer.Chunk.sampled(cache, one[0], sampler)));
                        long s1 = System.nanoTime();
                        steps[i] = s1 - s0;
                        s0 = s1;
                    }
                    long t2 = System.nanoTime();
                    kernelTime = cpu == null ? null : cpu.matvecBlockTime().since(kernelStart);
                    stepStats = backend.deviceStats().since(decodeStart);
                    result[0] = promptTokens / ((t1 - t0) / 1e9);
                    result[1] = decodeTokens / ((t2 - t1) / 1e9);
                    long[] sorted = steps.clone();
                    java.util.Arrays.sort(sorted);
                    result[2] = 1e9 / sorted[sorted.length / 2];
                }
            } while (!measured);
            double readRoofline = weightBytesPerToken * result[1] / (mem.readGbs() * 1e9);
            double medianReadRoofline = weightBytesPerToken * result[2] / (mem.readGbs() * 1e9);
            double copyRoofline = weightBytesPerToken * result[1] / (mem.copyGbs() * 1e9);
            System.out.printf("%s: %s, %d layers, dim %d, %.1f MB weights read per token%n", label,
                    c.architecture().hfName(), c.numLayers(), c.dim(), weightBytesPerToken / 1e6);
            double prefillGflops = prefillFlops(w, promptTokens) * result[0] / promptTokens / 1e9;
            if (mem.fmaPeakGflops() > 0) {
                System.out.printf("  prefill %d tokens: %.1f tok/s (weight matmuls %.1f GFLOP/s, %.2f of the f32 FMA"
                        + " peak)%n", promptTokens, result[0], prefillGflops, prefillGflops / mem.fmaPeakGflops());
            } else {
                System.out.printf("  prefill %d tokens: %.1f tok/s%n", promptTokens, result[0]);
            }
            System.out.printf("  decode  %d tokens: %.1f tok/s (bf16 KV; median step %.1f tok/s)%n", decodeTokens,
                    result[1], result[2]);
            if (cpu != null && cpu.matvecKernel() != null) {
                System.out.println("  one-row bf16 kernel: " + cpu.matvecKernel());
            }
            if (cpu != null && cpu.gemmKernel() != null) {
                System.out.println("  multi-row bf16 kernel: " + cpu.gemmKernel());
            }
            if (timed != null) {
                double stepMs = 1e3 / result[1];
                double mm = timed.matmulNanos / 1e6 / decodeTokens;
                double par = timed.parallelNanos / 1e6 / decodeTokens;
                System.out.printf("  per decode step: %.2f ms = weight matmuls %.2f ms (%.1f GB/s of weights, %.2f of the"
                        + " read bandwidth) + attention and other parallel work %.2f ms + the lane thread alone %.2f ms%n",
                        stepMs, mm, timed.matmulBytes / (timed.matmulNanos / 1e9) / 1e9,
                        timed.matmulBytes / (timed.matmulNanos / 1e9) / 1e9 / mem.readGbs(), par, stepMs - mm - par);
                StepAccount.printKernel(kernelTime, mm, timed.handoffs, decodeTokens, backend.threads(), mem.readGbs());
            }
            if (!"cpu".equals(backend.name())) {
                System.out.printf("  per decode step: %.2f device evaluations, %.1f bytes device->Java; device memory "
                        + "active %.1f MB, peak %.1f MB%n", (double) stepStats.evaluations() / decodeTokens,
                        (double) stepStats.bytesToJava() / decodeTokens, stepStats.activeBytes() / 1e6,
                        stepStats.peakBytes() / 1e6);
            }
            if (backend.gpuDevice()) { // the weights are in the GPU's memory: the host's bandwidth bounds nothing here
                System.out.println("  decode roofline fraction: not shown (the weights are in GPU memory; the host"
                        + " bandwidths above do not bound the decode)");
            } else {
                System.out.printf("  decode roofline fraction: %.2f (weight bytes/token x tok/s / read bandwidth;"
                        + " median step %.2f; against the copy bandwidth %.2f)%n", readRoofline, medianReadRoofline,
                        copyRoofline);
            }
            if (mem.batched()) {
                BatchedDecode.run(t, backend, prompt, decodeTokens, System.out);
            }
            if (sweep != null) {
                List<Integer> contexts = sweep.contexts() != null ? sweep.contexts()
                        : ContextSweep.defaultContexts(c.maxPositions(), decodeTokens, sweep.repeat());
                long kvBf16 = t.attentionShape().layout(KvScheme.BF16).bytesPerToken();
                long kvTurbo = t.attentionShape().layout(sweep.turbo()).bytesPerToken();
                System.out.printf("  KV bytes per token: bf16 %d, %s %d (%.2fx fewer)%n", kvBf16, sweep.turbo().id(),
                        kvTurbo, (double) kvBf16 / kvTurbo);
                if ("cpu".equals(backend.name())) {
                    ContextSweep.run(t, backend, ContextSweep.arms(sweep.turbo()), contexts, decodeTokens,
                            sweep.repeat(), System.out, System.err);
                } else { // bf16 vs turbo, both on the device
                    DeviceContextSweep.run(t, backend, sweep.turbo(), contexts, decodeTokens, sweep.repeat(),
                            System.out, System.err);
                }
            }
            return result[1];
        }
    }
}
