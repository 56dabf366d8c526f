package io.tqserve.backend;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Puts the calling thread at the lowest scheduling priority the OS gives a thread, for work that must not take CPU
 * from the lanes' steps (constraint compiles): on Linux its nice value becomes 19 ({@code setpriority(PRIO_PROCESS,
 * gettid(), 19)}: on Linux a thread id names one thread, and nice is per thread); on macOS it enters the darwin
 * background band ({@code setpriority(PRIO_DARWIN_THREAD, 0, PRIO_DARWIN_BG)}: lowest CPU and I/O priority).
 * Java's {@link Thread#setPriority} does nothing on Linux (HotSpot ignores it unless started with
 * {@code -XX:ThreadPriorityPolicy=1} as root), hence two libc calls through the FFM API; no JVM library offers
 * them. Lowering a thread's own priority needs no privilege. Where the call is unavailable (another OS, native
 * access denied, an error), it is logged once and the thread runs at its normal priority.
 */
public final class BackgroundPriority {
    /** Linux {@code PRIO_PROCESS}; macOS {@code PRIO_DARWIN_THREAD} and {@code PRIO_DARWIN_BG}. */
    private static final int PRIO_PROCESS = 0;
    private static final int PRIO_DARWIN_THREAD = 3;
    private static final int PRIO_DARWIN_BG = 0x1000;
    /** The nice value Linux threads get: the lowest. */
    public static final int LINUX_NICE = 19;

    private static final AtomicBoolean WARNED = new AtomicBoolean();
    private static final Native NATIVE = Native.load();

    private BackgroundPriority() {
    }

    /**
     * Lowers the calling thread's scheduling priority (see the class comment); logs once when it cannot.
     *
     * @return whether the priority was lowered
     */
    public static boolean lowerCurrentThread() {
        if (NATIVE.unavailable != null) {
            warnOnce(NATIVE.unavailable);
            return false;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(NATIVE.callState);
            int rc = NATIVE.linux
                    ? (int) NATIVE.setpriority.invokeExact(state, PRIO_PROCESS, currentTid(), LINUX_NICE)
                    : (int) NATIVE.setpriority.invokeExact(state, PRIO_DARWIN_THREAD, 0, PRIO_DARWIN_BG);
            if (rc != 0) {
                warnOnce("setpriority failed, errno " + (int) NATIVE.errno.get(state, 0L));
                return false;
            }
            return true;
        } catch (Throwable t) {
            warnOnce(t.toString());
            return false;
        }
    }

    /** The calling thread's Linux thread id ({@code gettid}); empty elsewhere or when it cannot be had. */
    public static Optional<Integer> linuxThreadId() {
        if (NATIVE.unavailable != null || !NATIVE.linux) {
            return Optional.empty();
        }
        try {
            return Optional.of(currentTid());
        } catch (Throwable t) {
            return Optional.empty();
        }
    }

    private static int currentTid() throws Throwable {
        return (int) (long) NATIVE.syscall.invokeExact(NATIVE.gettidNumber);
    }

    private static void warnOnce(String why) {
        if (WARNED.compareAndSet(false, true)) {
            System.getLogger(BackgroundPriority.class.getName()).log(System.Logger.Level.WARNING,
                    "background threads keep their normal scheduling priority: " + why);
        }
    }

    /** The bound libc calls, or why there are none. */
    private record Native(String unavailable, boolean linux, MethodHandle setpriority, MethodHandle syscall,
            long gettidNumber, StructLayout callState, VarHandle errno) {
        static Native load() {
            String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
            boolean linux = os.contains("linux");
            boolean mac = os.contains("mac") || os.contains("darwin");
            if (!linux && !mac) {
                return failed("no thread priority call on " + os);
            }
            try {
                Linker linker = Linker.nativeLinker();
                Linker.Option errnoState = Linker.Option.captureCallState("errno");
                StructLayout callState = Linker.Option.captureStateLayout();
                VarHandle errno = callState.varHandle(java.lang.foreign.MemoryLayout.PathElement.groupElement("errno"));
                MethodHandle setpriority = linker.downcallHandle(
                        linker.defaultLookup().find("setpriority").orElseThrow(),
                        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
                                ValueLayout.JAVA_INT), errnoState);
                MethodHandle syscall = null;
                long gettid = -1;
                if (linux) {
                    // syscall(SYS_gettid) rather than gettid(): glibc only exports gettid since 2.30
                    String arch = System.getProperty("os.arch", "");
                    gettid = arch.equals("amd64") || arch.equals("x86_64") ? 186
                            : arch.equals("aarch64") || arch.equals("arm64") ? 178 : -1;
                    if (gettid < 0) {
                        return failed("no gettid syscall number for " + arch);
                    }
                    syscall = linker.downcallHandle(linker.defaultLookup().find("syscall").orElseThrow(),
                            FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG),
                            Linker.Option.firstVariadicArg(1));
                }
                return new Native(null, linux, setpriority, syscall, gettid, callState, errno);
            } catch (RuntimeException | LinkageError e) { // IllegalCallerException: native access not enabled
                return failed(e.toString());
            }
        }

        private static Native failed(String why) {
            return new Native(why, false, null, null, -1, null, null);
        }
    }
}
