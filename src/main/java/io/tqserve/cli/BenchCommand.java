package io.tqserve.cli;

/** {@code ./tqserve bench <what> [...]}: benchmarks that print ratios measured in one run. */
final class BenchCommand {
    static final String USAGE = """
            usage: tqserve bench decode [--model DIR | --synthetic] [--prompt-tokens N] [--decode-tokens N] [--threads N]
                                        [--kv turbo:k8v3] [--contexts 256,1024,...] [--repeat N] [--max-context N]
                                        [--no-sweep] [--weights bf16,8,4] [--backend cpu|mlx|auto]
                                        [--mlx-library FILE] [--mlx-dtype native|float32] [--mlx-turbo-kernel auto|ops|metal|cuda]
                   tqserve bench serve [--model DIR | --synthetic] [--tokens N] [--rounds R] [--threads N]
                                       [--backend auto|cpu|mlx] [--mlx-library FILE] [--mlx-dtype native|float32]
                   tqserve bench prefix [--model DIR] [--prefix-tokens N] [--kv SCHEME] [--threads N]
                   tqserve bench constraint [--model DIR] [--rounds 20] [--max-tokens 160] [--threads N]
                   tqserve bench constraint --maskbench DIR [--tokenizer DIR_OR_FILE] [--limit N] [--only TEXT]
                                            [--timeout-ms 10000] [--failures FILE] [--clock cpu|wall] [--jobs 1]
                                            [--exclude FILE]
                   tqserve bench speculative [--model DIR] [--kv SCHEME] [--tokens 256] [--rounds 5] [--threads N]
                                             [--min-ngram 2] [--max-ngram 4] [--max-draft 8] [--account]
                   tqserve bench load [--clients 64] [--duration 60] [--max-tokens 64] [--seed 1] [--model DIR] [--threads N] [--kv-scheme S]
            """;

    private BenchCommand() {
    }

    static int run(String[] args) throws Exception {
        String what = args.length > 1 ? args[1] : "";
        return switch (what) {
            case "decode" -> DecodeBenchmark.run(args);
            case "serve" -> ServeBenchmark.run(args);
            case "prefix" -> PrefixBenchmark.run(args);
            case "load" -> LoadBenchmark.run(args);
            case "constraint" -> ConstraintBenchmark.run(args);
            case "speculative" -> SpeculativeBenchmark.run(args);
            default -> {
                System.err.print(USAGE);
                yield 2;
            }
        };
    }
}
