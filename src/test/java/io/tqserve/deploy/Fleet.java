package io.tqserve.deploy;

import com.sun.management.HotSpotDiagnosticMXBean;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.UnixDomainSocketAddress;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.jar.JarFile;

/**
 * A fleet started by {@code deploy/haproxy/fleet.sh}: replicas are child JVMs of the script running the build's
 * classes ({@code target/classes} and the runtime dependencies of this JVM's class path, not the test classes) with
 * the project's JVM flags; HAProxy runs the shipped configuration. Ports are free loopback ports. The fleet is read
 * through HAProxy's statistics CSV and the replicas' pid files.
 */
final class Fleet implements AutoCloseable {
    static final Path SCRIPT = Path.of("deploy/haproxy/fleet.sh").toAbsolutePath();
    final Path dir;
    final int port;
    final int statsPort;
    final int basePort;
    final Map<String, String> env = new HashMap<>();
    private final AtomicInteger diagnoses = new AtomicInteger();
    final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10)).build();

    /** Null when HAProxy, bash and curl (fleet.sh's readiness checks) run here, else what is missing. */
    static String toolsMissing() {
        for (String[] tool : new String[][] {{"haproxy", "-v"}, {"bash", "--version"}, {"curl", "--version"}}) {
            try {
                Process p = new ProcessBuilder(tool).redirectErrorStream(true).start();
                p.getInputStream().readAllBytes();
                if (p.waitFor() != 0) {
                    return String.join(" ", tool) + " failed";
                }
            } catch (IOException | InterruptedException e) {
                return tool[0] + " is not installed (CI installs Debian's haproxy package in .ci/run): " + e.getMessage();
            }
        }
        return null;
    }

    /** dir: emptied first (a previous run's logs, pid files and stores). */
    Fleet(Path dir, String replicaArgs) throws IOException {
        this.dir = dir;
        org.springframework.util.FileSystemUtils.deleteRecursively(dir);
        this.port = freePort();
        this.statsPort = freePort();
        this.basePort = freeConsecutivePorts(2);
        String java = ProcessHandle.current().info().command().orElseThrow();
        env.put("FLEET_DIR", dir.toString());
        env.put("FLEET_PORT", Integer.toString(port));
        env.put("FLEET_STATS_PORT", Integer.toString(statsPort));
        env.put("FLEET_BASE_PORT", Integer.toString(basePort));
        env.put("FLEET_READY_TIMEOUT", "300");
        env.put("FLEET_REPLICA_CMD", java + " --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED"
                + " -Xmx384m -XX:+UseSerialGC io.tqserve.cli.TqserveMain");
        env.put("FLEET_REPLICA_ARGS", replicaArgs);
        env.put("CLASSPATH", replicaClassPath());
    }

    /** Runs {@code fleet.sh args...} to its end; fails with its output when it fails. */
    void script(String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("bash", SCRIPT.toString()));
        cmd.addAll(List.of(args));
        Files.createDirectories(dir);
        Path out = dir.resolve("script-" + String.join("-", args) + ".log");
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out.toFile());
        pb.environment().putAll(env);
        Process p = pb.start();
        if (!p.waitFor(330, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException("fleet.sh " + String.join(" ", args) + " did not end:\n"
                    + Files.readString(out));
        }
        if (p.exitValue() != 0) {
            throw new IllegalStateException("fleet.sh " + String.join(" ", args) + " failed:\n" + Files.readString(out)
                    + tail(dir.resolve("r1/log")) + tail(dir.resolve("r2/log")));
        }
    }

    static String tail(Path log) throws IOException {
        if (!Files.exists(log)) {
            return "";
        }
        List<String> lines = Files.readAllLines(log);
        return "\n--- " + log + "\n" + String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
    }

    int replicaPort(int i) {
        return basePort + i - 1;
    }

    ProcessHandle replica(int i) throws IOException {
        long pid = Long.parseLong(Files.readString(dir.resolve("r" + i + "/pid")).strip());
        return ProcessHandle.of(pid).orElseThrow(() -> new IllegalStateException("replica " + i + " is not running"));
    }

    /** HAProxy's statistics for one server of the backend: column name to value. */
    Map<String, String> stats(String server) throws IOException, InterruptedException {
        String csv = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + statsPort + "/stats;csv"))
                .build(), HttpResponse.BodyHandlers.ofString()).body();
        String[] lines = csv.split("\n");
        String[] header = lines[0].replaceFirst("^# ", "").split(",", -1);
        for (String line : lines) {
            String[] cols = line.split(",", -1);
            if (cols.length > 1 && cols[0].equals("replicas") && cols[1].equals(server)) {
                Map<String, String> row = new HashMap<>();
                for (int c = 0; c < header.length && c < cols.length; c++) {
                    row.put(header[c], cols[c]);
                }
                return row;
            }
        }
        throw new IllegalStateException("no server " + server + " in\n" + csv);
    }

    long counter(String server, String column) throws IOException, InterruptedException {
        String v = stats(server).get(column);
        return v == null || v.isEmpty() ? 0 : Long.parseLong(v);
    }

    /** Waits (polling HAProxy's statistics, 2 minutes at most) until HAProxy reports the server UP or DOWN. */
    void awaitStatus(String server, String status) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
        String seen;
        while (!(seen = stats(server).get("status")).startsWith(status)) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(server + " is " + seen + ", not " + status);
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
        }
    }

    /**
     * What the fleet is doing, for a test that waited too long: writes under {@code dir/diagnostics-N-why/} the
     * thread dump of every replica still running ({@code jcmd PID Thread.print}) and of this JVM (virtual threads
     * included), HAProxy's statistics CSV and its sessions ({@code show sess all}), and each replica's metrics, and
     * returns {@code what} followed by a summary: where the files are, HAProxy's view of each server, the replicas'
     * lane and request metrics and their tqserve threads' stacks. Each replica's heap goes there too
     * ({@code rN.hprof}, live objects): the state of a stalled stream's operators is read from it.
     * Never throws: a part that cannot be had says why.
     */
    String diagnose(String why, String what) {
        StringBuilder sb = new StringBuilder(what);
        try {
            Path out = dir.resolve("diagnostics-" + diagnoses.incrementAndGet() + "-" + why.replaceAll("[^\\w-]", "_"));
            Files.createDirectories(out);
            sb.append("\n--- diagnostics in ").append(out);
            Files.writeString(out.resolve("what.txt"), what + "\n");
            try {
                threadDump(out.resolve("test-jvm-threads.txt"));
            } catch (IOException | RuntimeException e) {
                sb.append("\nthis JVM's threads: ").append(e);
            }
            try {
                Files.writeString(out.resolve("haproxy-sessions.txt"), haproxyCommand("show sess all"));
            } catch (IOException e) {
                sb.append("\nhaproxy sessions: ").append(e);
            }
            try {
                String csv = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + statsPort
                        + "/stats;csv")).timeout(Duration.ofSeconds(10)).build(),
                        HttpResponse.BodyHandlers.ofString()).body();
                Files.writeString(out.resolve("haproxy-stats.csv"), csv);
                for (String server : List.of("r1", "r2")) {
                    Map<String, String> row = stats(server);
                    sb.append("\nhaproxy ").append(server).append(": status ").append(row.get("status"))
                            .append(", current sessions ").append(row.get("scur")).append(", queued ")
                            .append(row.get("qcur")).append(", total ").append(row.get("stot")).append(", retries ")
                            .append(row.get("wretr")).append(", redispatches ").append(row.get("wredis"));
                }
            } catch (Exception e) {
                sb.append("\nhaproxy statistics: ").append(e);
            }
            for (int i = 1; i <= 2; i++) {
                sb.append("\n--- replica r").append(i);
                try {
                    String metrics = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + replicaPort(i)
                            + "/actuator/prometheus")).timeout(Duration.ofSeconds(10)).build(),
                            HttpResponse.BodyHandlers.ofString()).body();
                    Files.writeString(out.resolve("r" + i + "-metrics.txt"), metrics);
                    // what the lanes finished against what the responses saw: tokens generated and sequences
                    // finished, tokens timed by the response pipelines, responses ended
                    metrics.lines().filter(l -> l.startsWith("tqserve_requests_") || l.startsWith("tqserve_server_")
                            || l.startsWith("tqserve_tokens_generated") || l.startsWith("tqserve_request_e2e_seconds_count")
                            || l.startsWith("tqserve_request_inter_token_seconds_count"))
                            .filter(l -> !l.endsWith(" 0") && !l.endsWith(" 0.0")).limit(60)
                            .forEach(l -> sb.append("\n  ").append(l));
                } catch (Exception e) {
                    sb.append("\n  metrics: ").append(e);
                }
                try {
                    long pid = replica(i).pid();
                    String dump = jcmd(pid, "Thread.print");
                    jcmd(pid, "GC.heap_dump", out.resolve("r" + i + ".hprof").toString());
                    Files.writeString(out.resolve("r" + i + "-threads.txt"), dump);
                    for (String thread : dump.split("\n\n")) {
                        if (thread.startsWith("\"tqserve-")) {
                            sb.append("\n").append(thread.strip());
                        }
                    }
                } catch (Exception e) {
                    sb.append("\n  threads: ").append(e);
                }
            }
        } catch (Exception e) {
            sb.append("\ndiagnostics failed: ").append(e);
        }
        return sb.toString();
    }

    /** {@code jcmd PID args...} of this JVM's JDK: its output. */
    static String jcmd(long pid, String... args) throws IOException, InterruptedException {
        Path javaCommand = Path.of(ProcessHandle.current().info().command().orElseThrow());
        List<String> cmd = new ArrayList<>(List.of(javaCommand.resolveSibling("jcmd").toString(), Long.toString(pid)));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
        }
        return new String(out, StandardCharsets.UTF_8);
    }

    /** This JVM's threads, virtual ones (the streams' readers) included, written to {@code file}. */
    static void threadDump(Path file) throws IOException {
        ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class)
                .dumpThreads(file.toString(), HotSpotDiagnosticMXBean.ThreadDumpFormat.TEXT_PLAIN);
    }

    /** A command of HAProxy's runtime API on the admin socket fleet.sh configures (its answer, to the end). */
    String haproxyCommand(String command) throws IOException {
        try (SocketChannel ch = SocketChannel.open(UnixDomainSocketAddress.of(dir.resolve("haproxy.sock")))) {
            ch.write(ByteBuffer.wrap((command + "\n").getBytes(StandardCharsets.US_ASCII)));
            ByteArrayOutputStream answer = new ByteArrayOutputStream();
            ByteBuffer buf = ByteBuffer.allocate(65536);
            while (ch.read(buf) >= 0) {
                answer.write(buf.array(), 0, buf.position());
                buf.clear();
            }
            return answer.toString(StandardCharsets.UTF_8);
        }
    }

    @Override
    public void close() throws Exception {
        try {
            script("down");
        } finally { // whatever the script left
            for (int i = 1; i <= 2; i++) {
                Path pid = dir.resolve("r" + i + "/pid");
                if (Files.exists(pid)) {
                    ProcessHandle.of(Long.parseLong(Files.readString(pid).strip()))
                            .ifPresent(ProcessHandle::destroyForcibly);
                }
            }
        }
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    static int freeConsecutivePorts(int n) throws IOException {
        for (int attempt = 0; attempt < 50; attempt++) {
            int base = freePort();
            if (base + n > 65535) {
                continue;
            }
            boolean free = true;
            for (int p = base + 1; p < base + n && free; p++) {
                try (ServerSocket s = new ServerSocket(p, 1, InetAddress.getLoopbackAddress())) {
                    free = s.getLocalPort() == p;
                } catch (IOException e) {
                    free = false;
                }
            }
            if (free) {
                return base;
            }
        }
        throw new IOException("no " + n + " consecutive free ports");
    }

    /**
     * This JVM's class path without the test classes. Surefire may put a single manifest-only jar on the class
     * path; its Class-Path attribute then lists the real entries.
     */
    static String replicaClassPath() throws IOException {
        List<String> entries = new ArrayList<>();
        for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
            Path p = Path.of(e).toAbsolutePath();
            String manifestPath = null;
            if (e.endsWith(".jar") && Files.isRegularFile(p)) {
                try (JarFile jar = new JarFile(p.toFile())) {
                    var m = jar.getManifest();
                    manifestPath = m == null ? null : m.getMainAttributes().getValue("Class-Path");
                }
            }
            if (manifestPath != null && p.getFileName().toString().startsWith("surefire")) {
                for (String u : manifestPath.trim().split("\\s+")) {
                    URI uri = p.getParent().toUri().resolve(u);
                    entries.add(Path.of(uri).toString());
                }
            } else {
                entries.add(p.toString());
            }
        }
        entries.removeIf(s -> s.endsWith("test-classes") || s.endsWith("test-classes/"));
        if (entries.stream().noneMatch(s -> s.endsWith("classes") || s.endsWith("classes/"))) {
            throw new UncheckedIOException(new IOException("target/classes is not on the class path: " + entries));
        }
        return String.join(File.pathSeparator, entries);
    }
}
