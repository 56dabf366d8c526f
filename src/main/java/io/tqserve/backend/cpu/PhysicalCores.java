package io.tqserve.backend.cpu;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/** Counts physical cores (hyper-threads share a core's vector units, so kernels gain nothing from them). */
final class PhysicalCores {
    private PhysicalCores() {
    }

    static int count() {
        int logical = Runtime.getRuntime().availableProcessors();
        Path cpuinfo = Path.of("/proc/cpuinfo");
        if (!Files.isReadable(cpuinfo)) {
            return logical;
        }
        try {
            return Math.max(1, Math.min(logical, parse(Files.readAllLines(cpuinfo))));
        } catch (IOException | RuntimeException e) {
            return logical;
        }
    }

    /** Distinct (physical id, core id) pairs in /proc/cpuinfo lines; 0 when the file lacks them. */
    static int parse(List<String> lines) {
        Set<String> cores = new HashSet<>();
        String physical = "0";
        for (String line : lines) {
            int colon = line.indexOf(':');
            if (colon < 0) {
                continue;
            }
            String key = line.substring(0, colon).trim();
            String value = line.substring(colon + 1).trim();
            if (key.equals("physical id")) {
                physical = value;
            } else if (key.equals("core id")) {
                cores.add(physical + "/" + value);
            }
        }
        return cores.isEmpty() ? Runtime.getRuntime().availableProcessors() : cores.size();
    }
}
