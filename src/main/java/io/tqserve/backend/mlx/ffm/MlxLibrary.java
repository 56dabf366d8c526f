package io.tqserve.backend.mlx.ffm;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A loaded {@code libmlxc} and the layouts of MLX-C's types. Every MLX-C object ({@code mlx_array},
 * {@code mlx_stream}, {@code mlx_device}, {@code mlx_vector_array}, {@code mlx_map_*}, {@code mlx_string}) is a
 * struct holding one {@code void* ctx}, passed and returned <em>by value</em>; the layouts below say so, so the
 * linker applies the platform's struct-passing rules (SysV x86_64, AAPCS64) rather than relying on a struct of
 * one pointer happening to travel like a pointer.
 *
 * <p>Hand-written rather than jextract output: about eighty functions are used, and a generated binding would
 * be tens of thousands of lines tied to one header revision. Written against MLX-C 0.6.0 (commit fba4470, which
 * pins MLX v0.31.2).
 */
public final class MlxLibrary {
    /** {@code typedef struct { void* ctx; }}: the shape of every MLX-C object. */
    static final StructLayout HANDLE = MemoryLayout.structLayout(ValueLayout.ADDRESS.withName("ctx"));
    static final StructLayout ARRAY = HANDLE.withName("mlx_array");
    static final StructLayout STREAM = HANDLE.withName("mlx_stream");
    static final StructLayout DEVICE = HANDLE.withName("mlx_device");
    static final StructLayout DEVICE_INFO = HANDLE.withName("mlx_device_info");
    static final StructLayout VECTOR_ARRAY = HANDLE.withName("mlx_vector_array");
    static final StructLayout MAP = HANDLE.withName("mlx_map");
    static final StructLayout MAP_ITERATOR = MemoryLayout.structLayout(ValueLayout.ADDRESS.withName("ctx"),
            ValueLayout.ADDRESS.withName("map_ctx")).withName("mlx_map_string_to_array_iterator");
    static final StructLayout STRING = HANDLE.withName("mlx_string");
    /** {@code typedef struct { float value; bool has_value; } mlx_optional_float}. */
    static final StructLayout OPTIONAL_FLOAT = MemoryLayout.structLayout(ValueLayout.JAVA_FLOAT.withName("value"),
            ValueLayout.JAVA_BOOLEAN.withName("has_value"), MemoryLayout.paddingLayout(3))
            .withName("mlx_optional_float");
    /** {@code typedef struct { int value; bool has_value; } mlx_optional_int}. */
    static final StructLayout OPTIONAL_INT = MemoryLayout.structLayout(ValueLayout.JAVA_INT.withName("value"),
            ValueLayout.JAVA_BOOLEAN.withName("has_value"), MemoryLayout.paddingLayout(3)).withName("mlx_optional_int");
    /** {@code typedef struct { mlx_dtype value; bool has_value; } mlx_optional_dtype} (mlx_dtype is a C enum). */
    static final StructLayout OPTIONAL_DTYPE = MemoryLayout.structLayout(ValueLayout.JAVA_INT.withName("value"),
            ValueLayout.JAVA_BOOLEAN.withName("has_value"), MemoryLayout.paddingLayout(3))
            .withName("mlx_optional_dtype");
    static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT;
    static final ValueLayout.OfLong SIZE_T = ValueLayout.JAVA_LONG;
    static final ValueLayout PTR = ValueLayout.ADDRESS;

    private final Path file;
    private final SymbolLookup lookup;
    private final Linker linker = Linker.nativeLinker();

    private MlxLibrary(Path file, SymbolLookup lookup) {
        this.file = file;
        this.lookup = lookup;
    }

    /**
     * dlopens the library for the life of the process (MLX keeps global state: allocator, streams, the error
     * handler, so it is never unloaded).
     *
     * @throws MlxException when the file is missing or the dynamic loader refuses it (with the loader's reason)
     */
    public static MlxLibrary load(Path file) {
        if (!Files.isRegularFile(file)) {
            throw new MlxException("no MLX-C library at " + file.toAbsolutePath());
        }
        try {
            return new MlxLibrary(file.toAbsolutePath(), SymbolLookup.libraryLookup(file, Arena.global()));
        } catch (IllegalArgumentException e) {
            throw new MlxException("cannot load " + file.toAbsolutePath() + ": " + e.getMessage(), e);
        }
    }

    public Path file() {
        return file;
    }

    /** A downcall handle for {@code name}; fails naming the symbol when the library lacks it. */
    MethodHandle fn(String name, FunctionDescriptor descriptor) {
        MemorySegment symbol = lookup.find(name).orElseThrow(() -> new MlxException(
                file + " has no symbol " + name + " (an MLX-C older than 0.6.0?)"));
        return linker.downcallHandle(symbol, descriptor);
    }

    /** A function returning MLX-C's {@code int} status. */
    MethodHandle status(String name, MemoryLayout... args) {
        return fn(name, FunctionDescriptor.of(INT, args));
    }

    /** A function returning a value of {@code ret}. */
    MethodHandle returning(String name, MemoryLayout ret, MemoryLayout... args) {
        return fn(name, FunctionDescriptor.of(ret, args));
    }

    Linker linker() {
        return linker;
    }
}
