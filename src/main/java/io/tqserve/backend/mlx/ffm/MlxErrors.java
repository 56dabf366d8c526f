package io.tqserve.backend.mlx.ffm;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/**
 * MLX-C reports failures by calling the process-wide error handler with a message and returning a non-zero
 * status. The default handler prints and calls {@code exit(-1)}, so {@link #install} replaces it with an upcall
 * that keeps the message for the calling thread; {@link #check} turns a non-zero status into an
 * {@link MlxException} carrying that message.
 */
final class MlxErrors {
    private static final ThreadLocal<String> LAST = new ThreadLocal<>();

    private MlxErrors() {
    }

    /** Installs the upcall (the stub lives in the global arena: MLX may call it until the process ends). */
    static void install(MlxLibrary lib, MlxNative n) {
        try {
            MemorySegment stub = lib.linker().upcallStub(
                    MethodHandles.lookup().findStatic(MlxErrors.class, "onError",
                            MethodType.methodType(void.class, MemorySegment.class, MemorySegment.class)),
                    FunctionDescriptor.ofVoid(ValueLayout.ADDRESS, ValueLayout.ADDRESS), Arena.global());
            n.setErrorHandler.invokeExact(stub, MemorySegment.NULL, MemorySegment.NULL);
        } catch (Throwable t) {
            throw new MlxException("cannot install the MLX error handler", t);
        }
    }

    /** The upcall: {@code void handler(const char* msg, void* data)}. Must not throw into native code. */
    private static void onError(MemorySegment msg, MemorySegment data) {
        try {
            LAST.set(msg.equals(MemorySegment.NULL) ? "(no message)" : msg.reinterpret(1 << 16).getString(0));
        } catch (Throwable t) {
            LAST.set("(unreadable MLX error message)");
        }
    }

    /** Throws when {@code status} is non-zero, with the message MLX reported on this thread. */
    static void check(int status, String function) {
        if (status != 0) {
            throw new MlxException(function + " failed (status " + status + "): " + take());
        }
    }

    /** Throws when a data accessor returned NULL. */
    static MemorySegment checkPointer(MemorySegment p, String function) {
        if (p.equals(MemorySegment.NULL)) {
            throw new MlxException(function + " returned NULL: " + take());
        }
        return p;
    }

    /** Throws when a constructor returned an object with a NULL ctx. */
    static void checkHandle(MemorySegment struct, String function) {
        if (struct.get(ValueLayout.ADDRESS, 0).equals(MemorySegment.NULL)) {
            throw new MlxException(function + " failed: " + take());
        }
    }

    private static String take() {
        String m = LAST.get();
        LAST.remove();
        return m == null ? "(MLX reported no message)" : m;
    }

    /** Rethrows what a downcall threw (only errors or our own exceptions: downcalls throw nothing checked). */
    static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new MlxException("MLX-C call failed", t);
    }
}
