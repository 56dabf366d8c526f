package io.tqserve.cli;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** A verb as a user runs it: {@link TqserveMain} in its own JVM, from this build's classpath, stdin closed. */
record CliProcess(int exit, String stdout, String stderr) {
    static CliProcess run(String... args) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        File stderr = File.createTempFile("tqserve-cli", ".err");
        stderr.deleteOnExit();
        List<String> cmd = new ArrayList<>(List.of(java, "--add-modules", "jdk.incubator.vector",
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                TqserveMain.class.getName()));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectError(stderr).start();
        p.getOutputStream().close();
        CompletableFuture<byte[]> stdout = CompletableFuture.supplyAsync(() -> {
            try {
                return p.getInputStream().readAllBytes();
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError(String.join(" ", args) + " did not finish in 120 s");
        }
        return new CliProcess(p.exitValue(), new String(stdout.get(10, TimeUnit.SECONDS), StandardCharsets.UTF_8),
                Files.readString(stderr.toPath(), StandardCharsets.UTF_8));
    }
}
