package io.tqserve.cli;

import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.kv.KvScheme;
import io.tqserve.kv.turbo.AttentionPath;
import io.tqserve.model.Model;
import io.tqserve.model.quantize.WeightQuantizer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * {@code ./tqserve eval weight-curve [--model DIR] [--arms W/KV,...] [--group-size 64] [--seed N] [--prompts FILE]
 * [--prompt-tokens 128] [--decode-steps 128] [--threads N]}: the teacher-forced quality of quantized weights, with
 * the protocol of {@code eval kv-curve} ({@link KvCurve}): each arm is a weight format (bf16 = the model as stored;
 * 2..8 = a copy quantized to that many bits with the quantize verb's code; a trailing {@code r} = rotated first,
 * {@code --rotate}) and a KV scheme; KL, top-1 agreement and perplexity are measured against the control arm
 * bf16 weights + bf16 KV. Weights and KV quantization are independent axes, so an arm may combine both
 * (e.g. {@code 4/turbo:k8v3}). The quantized copies are written to temp folders and deleted afterwards. stdout
 * carries the markdown table; progress goes to stderr.
 */
final class WeightCurve {
    static final String DEFAULT_ARMS = "bf16/bf16,8/bf16,4/bf16,4r/bf16,bf16/turbo:k8v3,4/turbo:k8v3";

    private WeightCurve() {
    }

    static int run(String[] args) throws Exception {
        CliArgs a = new CliArgs(args, 2, Set.of("--model", "--arms", "--group-size", "--seed", "--prompts",
                "--prompt-tokens", "--decode-steps", "--threads"), Set.of());
        Path modelDir = Path.of(a.get("--model", TqserveMain.DEFAULT_MODEL));
        int groupSize = a.getInt("--group-size", 64);
        int promptTokens = a.getInt("--prompt-tokens", 128);
        int decodeSteps = a.getInt("--decode-steps", 128);
        List<String[]> arms = new ArrayList<>();
        for (String arm : a.get("--arms", DEFAULT_ARMS).split(",")) {
            String[] wk = arm.trim().split("/", 2);
            if (wk.length != 2) {
                throw new IllegalArgumentException("--arms takes WEIGHTS/KV items (e.g. 4/turbo:k8v3), got " + arm);
            }
            KvScheme.parse(wk[1]);
            arms.add(wk);
        }
        List<String> texts = EvalCommand.readPrompts(a.get("--prompts", null));
        Map<String, Path> copies = new LinkedHashMap<>();
        List<Model> models = new ArrayList<>();
        try (CpuBackend backend = CpuBackend.create(a.getInt("--threads", 0))) {
            try {
                Model base = Model.load(modelDir, backend);
                models.add(base);
                Map<String, Model> byWeights = new LinkedHashMap<>();
                byWeights.put("bf16", base);
                for (String[] arm : arms) {
                    if (!byWeights.containsKey(arm[0])) {
                        boolean rotate = arm[0].endsWith("r");
                        int bits = Integer.parseInt(rotate ? arm[0].substring(0, arm[0].length() - 1) : arm[0]);
                        Path dir = Files.createTempDirectory("tqserve-weight-curve-" + arm[0]);
                        copies.put(arm[0], dir);
                        System.err.println("weight-curve: quantizing to " + bits + " bits" + (rotate ? ", rotated" : ""));
                        WeightQuantizer.run(modelDir, dir, new WeightQuantizer.Options(bits, groupSize, null, rotate,
                                a.getInt("--seed", 0x7105), null), null);
                        Model m = Model.load(dir, backend);
                        models.add(m);
                        byWeights.put(arm[0], m);
                    }
                }
                List<KvCurve.Arm> curveArms = new ArrayList<>();
                curveArms.add(new KvCurve.Arm("bf16 weights, bf16 KV", base.transformer(), KvScheme.BF16));
                for (String[] arm : arms) {
                    if (!(arm[0].equals("bf16") && arm[1].equals("bf16"))) {
                        curveArms.add(new KvCurve.Arm(label(arm, groupSize), byWeights.get(arm[0]).transformer(),
                                KvScheme.parse(arm[1])));
                    }
                }
                List<int[]> prompts = EvalCommand.tokenize(base, texts, promptTokens + decodeSteps);
                List<KvCurve.Row> rows = new KvCurve(base.transformer(), promptTokens, decodeSteps, AttentionPath.FUSED,
                        System.err).runArms(curveArms, prompts);
                System.out.print(markdown(rows, models, modelDir, prompts.size(), promptTokens, decodeSteps));
            } finally {
                for (Model m : models) {
                    m.close();
                }
                for (Path p : copies.values()) {
                    SyntheticModel.deleteTree(p);
                }
            }
        }
        return 0;
    }

    static String label(String[] arm, int groupSize) {
        String w = arm[0].equals("bf16") ? "bf16 weights"
                : arm[0].replace("r", "") + "-bit weights (group " + groupSize + (arm[0].endsWith("r") ? ", rotated)" : ")");
        return w + ", " + arm[1] + " KV";
    }

    static String markdown(List<KvCurve.Row> rows, List<Model> models, Path modelDir, int prompts, int promptTokens,
            int decodeSteps) {
        StringBuilder b = new StringBuilder();
        b.append(String.format(Locale.ROOT, "Model `%s`, %d prompts, %d prompt tokens + %d teacher-forced decode steps;"
                + " KL and top-1 against bf16 weights + bf16 KV.%n%n", modelDir, prompts, promptTokens, decodeSteps));
        b.append("| arm | KV bits / element | mean KL(control ‖ arm) | perplexity | top-1 agreement |\n");
        b.append("|---|---|---|---|---|\n");
        for (KvCurve.Row r : rows) {
            b.append(String.format(Locale.ROOT, "| %s | %.2f | %.6f | %.4f | %.4f |%n", r.scheme(), r.effectiveBits(),
                    r.meanKl(), r.perplexity(), r.top1Agreement()));
        }
        b.append("\nWeight bytes: ");
        for (int i = 0; i < models.size(); i++) {
            b.append(i == 0 ? "" : ", ").append(models.get(i).quantization().describe()).append(' ')
                    .append(models.get(i).weightBytes() / 1000).append(" kB");
        }
        return b.append('\n').toString();
    }
}
