package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.tqserve.backend.BackgroundPriority;
import io.tqserve.constraint.CompileObserver;
import io.tqserve.constraint.ConstraintLimits;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The compile threads run at the lowest OS scheduling priority: on Linux the thread's nice value, as the kernel
 * reports it ({@code /proc/self/task/TID/stat}, field 19), is 19 inside a compile, and unchanged with
 * {@code low-priority} off. Elsewhere the nice value cannot be read back this way and the test is skipped.
 */
class ConstraintPoolPriorityTest {
    @Test
    void compileThreadsRunAtNice19OnLinux() throws Exception {
        assumeTrue(BackgroundPriority.linuxThreadId().isPresent(), "Linux only: reads /proc/self/task/TID/stat");
        assertThat(niceInsideACompile(true)).isEqualTo(BackgroundPriority.LINUX_NICE);
    }

    @Test
    void withLowPriorityOffTheyKeepTheProcessNice() throws Exception {
        assumeTrue(BackgroundPriority.linuxThreadId().isPresent(), "Linux only: reads /proc/self/task/TID/stat");
        int mine = nice(BackgroundPriority.linuxThreadId().orElseThrow());
        assumeTrue(mine < BackgroundPriority.LINUX_NICE, "the test JVM already runs at nice 19");
        assertThat(niceInsideACompile(false)).isEqualTo(mine);
    }

    private static int niceInsideACompile(boolean low) throws Exception {
        ConstraintPool pool = new ConstraintPool(new StructuredOutputSettings(1, 4, 1 << 20, Duration.ofSeconds(5),
                ConstraintLimits.DEFAULT, low), new ApiSettings(List.of(), false, 512, Duration.ofSeconds(5),
                Duration.ofSeconds(1)), CompileObserver.NONE);
        try {
            AtomicInteger nice = new AtomicInteger(Integer.MIN_VALUE);
            pool.submit(() -> {
                nice.set(nice(BackgroundPriority.linuxThreadId().orElseThrow()));
                return ConstraintCacheTest.constraint("x");
            }, "response_format").result().get(30, TimeUnit.SECONDS);
            return nice.get();
        } finally {
            pool.destroy();
        }
    }

    /** Field 19 of a thread's stat line: its nice value (fields counted after the ')' that ends the name). */
    static int nice(int tid) throws java.io.IOException {
        String stat = Files.readString(Path.of("/proc/self/task/" + tid + "/stat"));
        String[] after = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
        return Integer.parseInt(after[19 - 3]);
    }
}
