package io.tqserve.cli;

import io.tqserve.model.quantize.WeightQuantizer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * {@code ./tqserve quantize --model DIR --bits 4|8 [--group-size 64] --out DIR [--keep LAYER_REGEX]
 * [--layer-bits REGEX=BITS,...] [--rotate] [--seed N]}: writes an mlx-community-compatible quantized copy of a dense model folder
 * ({@link WeightQuantizer}). stdout carries only the written folder; the progress bar goes to stderr.
 */
final class QuantizeCommand {
    static final String USAGE = """
            usage: tqserve quantize --model DIR --bits 2|3|4|5|6|8 [--group-size 32|64|128] --out DIR
                                    [--keep LAYER_REGEX] [--layer-bits REGEX=BITS,...] [--rotate] [--seed N]
            """;

    private QuantizeCommand() {
    }

    static int run(String[] args) throws Exception {
        CliArgs a = new CliArgs(args, 1, Set.of("--model", "--bits", "--group-size", "--out", "--keep", "--seed",
                "--layer-bits"),
                Set.of("--rotate"));
        Path model = Path.of(a.require("--model"));
        Path out = Path.of(a.require("--out"));
        int bits = a.getInt("--bits", 4);
        int groupSize = a.getInt("--group-size", 64);
        Pattern keep;
        try {
            keep = a.has("--keep") ? Pattern.compile(a.get("--keep", null)) : null;
        } catch (PatternSyntaxException e) {
            throw new IllegalArgumentException("--keep is not a valid regular expression: " + e.getDescription());
        }
        if (Files.exists(out.resolve("model.safetensors")) || Files.exists(out.resolve("config.json"))) {
            throw new IllegalArgumentException(out + " holds a model already; choose an empty --out folder");
        }
        if (model.toAbsolutePath().normalize().equals(out.toAbsolutePath().normalize())) {
            throw new IllegalArgumentException("--out must differ from --model");
        }
        java.util.Map<Pattern, Integer> layerBits = new java.util.LinkedHashMap<>();
        if (a.has("--layer-bits")) {
            for (String part : a.get("--layer-bits", "").split(",")) {
                int eq = part.lastIndexOf('=');
                try {
                    layerBits.put(Pattern.compile(part.substring(0, eq)), Integer.parseInt(part.substring(eq + 1)));
                } catch (RuntimeException e) {
                    throw new IllegalArgumentException("--layer-bits takes REGEX=BITS[,REGEX=BITS...], got '" + part
                            + "'");
                }
            }
        }
        WeightQuantizer.Options options = new WeightQuantizer.Options(bits, groupSize, keep, a.has("--rotate"),
                a.getInt("--seed", 0x7105), null, layerBits);
        ProgressBar bar = new ProgressBar();
        long t0 = System.nanoTime();
        WeightQuantizer.run(model, out, options, bar::update);
        bar.finish();
        System.err.printf("quantized %s to %d-bit (group %d%s) in %.1f s%n", model, bits, groupSize,
                options.rotate() ? ", rotated" : "", (System.nanoTime() - t0) / 1e9);
        System.out.println(out.toAbsolutePath());
        return 0;
    }

    /** A one-line bar on stderr, redrawn with a carriage return at most once per percent. */
    static final class ProgressBar {
        private int shown = -1;

        void update(double fraction, String tensor) {
            int pct = (int) Math.floor(fraction * 100);
            if (pct == shown) {
                return;
            }
            shown = pct;
            int filled = pct * 30 / 100;
            String name = tensor.length() > 40 ? "..." + tensor.substring(tensor.length() - 37) : tensor;
            System.err.printf("\r[%s%s] %3d%% %-40s", "#".repeat(filled), " ".repeat(30 - filled), pct, name);
        }

        void finish() {
            System.err.println();
        }
    }
}
