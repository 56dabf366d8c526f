package io.tqserve.backend.mlx.ffm;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A unit of MLX work on one thread: a confined arena for the array handles and argument buffers, the thread's
 * default stream on the default device, and every array the scope's operations return. {@link #close} frees
 * them all (one {@code mlx_array_free} per {@code mlx_array_new}) and the stream handle; arrays that must
 * outlive the scope are handed to an {@link MlxStore} first.
 */
public final class MlxScope extends MlxOps implements AutoCloseable {
    private final Arena arena = Arena.ofConfined();
    private final List<MlxArray> owned = new ArrayList<>();
    private final MemorySegment stream; // mlx_stream
    private boolean closed;

    MlxScope(Mlx mlx) {
        super(mlx);
        try {
            stream = (MemorySegment) mlx.n.streamNew.invokeExact((SegmentAllocator) arena);
            MlxErrors.check((int) mlx.n.getDefaultStream.invokeExact(stream, mlx.deviceHandle()),
                    "mlx_get_default_stream");
        } catch (Throwable t) {
            arena.close();
            throw MlxErrors.rethrow(t);
        }
    }

    @Override
    public MlxArray newArray() {
        if (closed) {
            throw new IllegalStateException("MLX scope is closed");
        }
        try {
            MlxArray a = new MlxArray(mlx, (MemorySegment) mlx.n.arrayNew.invokeExact((SegmentAllocator) arena));
            owned.add(a);
            return a;
        } catch (Throwable t) {
            throw MlxErrors.rethrow(t);
        }
    }

    @Override
    MemorySegment stream() {
        return stream;
    }

    @Override
    MemorySegment ints(int... values) {
        return values.length == 0 ? arena.allocate(4) : arena.allocateFrom(ValueLayout.JAVA_INT, values);
    }

    @Override
    MemorySegment cString(String s) {
        return arena.allocateFrom(s);
    }

    @Override
    MemorySegment optionalFloat(float value) {
        MemorySegment o = arena.allocate(MlxLibrary.OPTIONAL_FLOAT);
        boolean has = !Float.isNaN(value);
        o.set(ValueLayout.JAVA_FLOAT, 0, has ? value : 0f);
        o.set(ValueLayout.JAVA_BOOLEAN, 4, has);
        return o;
    }

    @Override
    MemorySegment optionalInt(int value) {
        MemorySegment o = arena.allocate(MlxLibrary.OPTIONAL_INT);
        o.set(ValueLayout.JAVA_INT, 0, value);
        o.set(ValueLayout.JAVA_BOOLEAN, 4, true);
        return o;
    }

    @Override
    MemorySegment optionalDtype(MlxDtype dtype) {
        MemorySegment o = arena.allocate(MlxLibrary.OPTIONAL_DTYPE);
        o.set(ValueLayout.JAVA_INT, 0, dtype == null ? 0 : dtype.c());
        o.set(ValueLayout.JAVA_BOOLEAN, 4, dtype != null);
        return o;
    }

    /** A scalar float32 array. */
    public MlxArray scalar(float value) {
        return adopt("mlx_array_new_float32",
                () -> (MemorySegment) mlx.n.arrayNewFloat32.invokeExact((SegmentAllocator) arena, value));
    }

    /** A scalar int32 array. */
    public MlxArray scalar(int value) {
        return adopt("mlx_array_new_int", () -> (MemorySegment) mlx.n.arrayNewInt.invokeExact((SegmentAllocator) arena,
                value));
    }

    /** Copies {@code data} (native memory, e.g. a mapped weight) into a new array of the given dtype and shape. */
    public MlxArray fromSegment(MemorySegment data, MlxDtype dtype, int... shape) {
        long n = 1;
        for (int d : shape) {
            n *= d;
        }
        if (data.byteSize() != n * dtype.bytes()) {
            throw new IllegalArgumentException("segment of " + data.byteSize() + " bytes does not hold " + n + " "
                    + dtype + " elements");
        }
        MemorySegment s = ints(shape);
        return adopt("mlx_array_new_data",
                () -> (MemorySegment) mlx.n.arrayNewData.invokeExact((SegmentAllocator) arena,
                data, s, shape.length, dtype.c()));
    }

    public MlxArray fromFloatsAt(float[] data, int off, int len, int... shape) {
        MemorySegment tmp = arena.allocate(4L * len, 16);
        MemorySegment.copy(data, off, tmp, ValueLayout.JAVA_FLOAT, 0, len);
        return fromSegment(tmp, MlxDtype.FLOAT32, shape);
    }

    public MlxArray fromFloats(float[] data, int... shape) {
        return fromFloatsAt(data, 0, data.length, shape);
    }

    public MlxArray fromInts(int[] data, int off, int len, int... shape) {
        MemorySegment tmp = arena.allocate(4L * len, 16);
        MemorySegment.copy(data, off, tmp, ValueLayout.JAVA_INT, 0, len);
        return fromSegment(tmp, MlxDtype.INT32, shape);
    }

    /** A float16, bfloat16 or uint16 array from 16-bit patterns. */
    public MlxArray fromBits16(short[] bits, MlxDtype dtype, int... shape) {
        MemorySegment tmp = arena.allocate(2L * bits.length, 16);
        MemorySegment.copy(bits, 0, tmp, ValueLayout.JAVA_SHORT, 0, bits.length);
        return fromSegment(tmp, dtype, shape);
    }

    @FunctionalInterface
    private interface Maker {
        MemorySegment make() throws Throwable;
    }

    /** Takes ownership of an array a constructor returned by value; checks its ctx. */
    private MlxArray adopt(String name, Maker maker) {
        MemorySegment struct;
        try {
            struct = maker.make();
        } catch (Throwable t) {
            throw MlxErrors.rethrow(t);
        }
        MlxErrors.checkHandle(struct, name);
        mlx.opIssued();
        MlxArray a = new MlxArray(mlx, struct);
        owned.add(a);
        return a;
    }

    @Override
    public MlxArray concatenate(int axis, MlxArray... arrays) {
        MemorySegment vec = vector(arrays);
        try {
            return op("mlx_concatenate_axis", r -> concatenateInto(r, vec, axis));
        } finally {
            freeVector(vec);
        }
    }

    @Override
    public MlxArray[] quantize(MlxArray w, int groupSize, int bits) {
        try {
            MemorySegment vec = (MemorySegment) mlx.n.vectorArrayNew.invokeExact((SegmentAllocator) arena);
            try {
                // vec passed as mlx_vector_array*
                MlxErrors.check(quantizeInto(vec, w, groupSize, bits), "mlx_quantize");
                long n = (long) mlx.n.vectorArraySize.invokeExact(vec);
                MlxArray[] out = new MlxArray[(int) n];
                for (int i = 0; i < out.length; i++) {
                    out[i] = newArray();
                    MlxErrors.check((int) mlx.n.vectorArrayGet.invokeExact(out[i].struct(), vec, (long) i),
                            "mlx_vector_array_get");
                }
                return out;
            } finally {
                freeVector(vec);
            }
        } catch (Throwable t) {
            throw MlxErrors.rethrow(t);
        }
    }

    /** Evaluates the arrays (one {@code mlx_eval} over all of them). */
    public void eval(MlxArray... arrays) {
        MemorySegment vec = vector(arrays);
        try {
            mlx.evaluated();
            MlxErrors.check((int) mlx.n.eval.invokeExact(vec), "mlx_eval");
        } catch (Throwable t) {
            throw MlxErrors.rethrow(t);
        } finally {
            freeVector(vec);
        }
    }

    /**
     * Queues the evaluation of the arrays and returns at once ({@code mlx_async_eval}); a later read or
     * {@link #eval} of them waits for the result.
     */
    public void asyncEval(MlxArray... arrays) {
        MemorySegment vec = vector(arrays);
        try {
            mlx.evaluated();
            MlxErrors.check((int) mlx.n.asyncEval.invokeExact(vec), "mlx_async_eval");
        } catch (Throwable t) {
            throw MlxErrors.rethrow(t);
        } finally {
            freeVector(vec);
        }
    }

    /**
     * Copies an int32 array that an earlier {@link #eval} or {@link #asyncEval} evaluated (waiting for it if
     * needed) without adding work to the graph: {@code a} must be row-contiguous int32 (e.g. the result of
     * {@link #contiguous}); {@link Mlx#evaluations} does not move.
     */
    public int[] readInts(MlxArray a) {
        if (a.dtype() != MlxDtype.INT32 && a.dtype() != MlxDtype.UINT32) {
            throw new IllegalArgumentException("readInts needs an int32 array, got " + a.dtype());
        }
        return evaluatedData(a, mlx.n.dataInt32, "mlx_array_data_int32").toArray(ValueLayout.JAVA_INT);
    }

    /** As {@link #readInts}, for a row-contiguous float32 array. */
    public float[] readFloats(MlxArray a) {
        if (a.dtype() != MlxDtype.FLOAT32) {
            throw new IllegalArgumentException("readFloats needs a float32 array, got " + a.dtype());
        }
        return evaluatedData(a, mlx.n.dataFloat32, "mlx_array_data_float32").toArray(ValueLayout.JAVA_FLOAT);
    }

    /** The data of a queued or evaluated 4-byte array (waiting for it), counted as copied to Java. */
    private MemorySegment evaluatedData(MlxArray a, java.lang.invoke.MethodHandle accessor, String name) {
        try {
            MlxErrors.check((int) mlx.n.arrayEval.invokeExact(a.struct()), "mlx_array_eval");
            MemorySegment p = (MemorySegment) accessor.invokeExact(a.struct());
            mlx.copiedToJava(a.size() * 4);
            return MlxErrors.checkPointer(p, name).reinterpret(a.size() * 4);
        } catch (Throwable t) {
            throw MlxErrors.rethrow(t);
        }
    }

    /** An mlx_vector_array of the arrays' handles (free with {@link #freeVector}). */
    MemorySegment vector(MlxArray... arrays) {
        MemorySegment data = arena.allocate(MlxLibrary.ARRAY, arrays.length);
        for (int i = 0; i < arrays.length; i++) {
            MemorySegment.copy(arrays[i].struct(), 0, data, (long) i * MlxLibrary.ARRAY.byteSize(),
                    MlxLibrary.ARRAY.byteSize());
        }
        try {
            MemorySegment vec = (MemorySegment) mlx.n.vectorArrayNewData.invokeExact((SegmentAllocator) arena, data,
                    (long) arrays.length);
            MlxErrors.checkHandle(vec, "mlx_vector_array_new_data");
            return vec;
        } catch (Throwable t) {
            throw MlxErrors.rethrow(t);
        }
    }

    void freeVector(MemorySegment vec) {
        try {
            MlxErrors.check((int) mlx.n.vectorArrayFree.invokeExact(vec), "mlx_vector_array_free");
        } catch (Throwable t) {
            throw MlxErrors.rethrow(t);
        }
    }

    /** Evaluates a row-contiguous float32 copy of {@code a} and returns its data pointer, sized. */
    private MemorySegment dataOf(MlxArray a, MlxDtype as, java.lang.invoke.MethodHandle accessor, String name) {
        MlxArray c = contiguous(a.dtype() == as ? a : astype(a, as));
        eval(c);
        try {
            MemorySegment p = (MemorySegment) accessor.invokeExact(c.struct());
            mlx.copiedToJava(c.size() * as.bytes());
            return MlxErrors.checkPointer(p, name).reinterpret(c.size() * as.bytes());
        } catch (Throwable t) {
            throw MlxErrors.rethrow(t);
        }
    }

    /** Evaluates {@code a} and copies it, converted to float32, into {@code dst} at {@code off}. */
    public void copyFloats(MlxArray a, float[] dst, int off) {
        MemorySegment d = dataOf(a, MlxDtype.FLOAT32, mlx.n.dataFloat32, "mlx_array_data_float32");
        MemorySegment.copy(d, ValueLayout.JAVA_FLOAT, 0, dst, off, (int) (d.byteSize() / 4));
    }

    public float[] toFloats(MlxArray a) {
        float[] out = new float[Math.toIntExact(a.size())];
        copyFloats(a, out, 0);
        return out;
    }

    public int[] toInts(MlxArray a) {
        return dataOf(a, MlxDtype.INT32, mlx.n.dataInt32, "mlx_array_data_int32").toArray(ValueLayout.JAVA_INT);
    }

    public byte[] toBytes(MlxArray a) {
        return dataOf(a, MlxDtype.UINT8, mlx.n.dataUint8, "mlx_array_data_uint8").toArray(ValueLayout.JAVA_BYTE);
    }

    /**
     * The 16-bit patterns of a float16/bfloat16/uint16 array. MLX-C has no float16/bfloat16 data accessors on
     * x86_64 (they exist on arm64 only), so the bytes are read through a uint16 view.
     */
    public short[] toBits16(MlxArray a) {
        if (a.dtype().bytes() != 2) {
            throw new IllegalArgumentException("toBits16 needs a 16-bit array, got " + a.dtype());
        }
        MlxArray u = a.dtype() == MlxDtype.UINT16 ? a : view(contiguous(a), MlxDtype.UINT16);
        return dataOf(u, MlxDtype.UINT16, mlx.n.dataUint16, "mlx_array_data_uint16").toArray(ValueLayout.JAVA_SHORT);
    }

    /** Evaluates a 16-bit array and copies its row-major bytes (native order) into {@code dst}. */
    public void copyBits16(MlxArray a, MemorySegment dst) {
        if (a.dtype().bytes() != 2) {
            throw new IllegalArgumentException("copyBits16 needs a 16-bit array, got " + a.dtype());
        }
        MlxArray u = a.dtype() == MlxDtype.UINT16 ? a : view(contiguous(a), MlxDtype.UINT16);
        MemorySegment src = dataOf(u, MlxDtype.UINT16, mlx.n.dataUint16, "mlx_array_data_uint16");
        MemorySegment.copy(src, 0, dst, 0, src.byteSize());
    }

    /**
     * Loads every tensor of a safetensors file ({@code mlx_load_safetensors}, lazily read on MLX's CPU stream:
     * MLX's Load primitive has no GPU kernel). The arrays belong to this scope.
     */
    public Map<String, MlxArray> loadSafetensors(Path file) {
        Map<String, MlxArray> out = new LinkedHashMap<>();
        try {
            MemorySegment cpu = (MemorySegment) mlx.n.defaultCpuStreamNew.invokeExact((SegmentAllocator) arena);
            MemorySegment tensors = (MemorySegment) mlx.n.mapArrayNew.invokeExact((SegmentAllocator) arena);
            MemorySegment metadata = (MemorySegment) mlx.n.mapStringNew.invokeExact((SegmentAllocator) arena);
            try {
                MlxErrors.checkHandle(cpu, "mlx_default_cpu_stream_new");
                MlxErrors.check((int) mlx.n.loadSafetensors.invokeExact(tensors, metadata,
                        cString(file.toAbsolutePath().toString()), cpu), "mlx_load_safetensors(" + file + ")");
                MemorySegment it = (MemorySegment) mlx.n.mapIteratorNew.invokeExact((SegmentAllocator) arena, tensors);
                try {
                    MemorySegment key = arena.allocate(ValueLayout.ADDRESS);
                    while (true) {
                        MlxArray value = newArray();
                        int st = (int) mlx.n.mapIteratorNext.invokeExact(key, value.struct(), it);
                        if (st == 2) { // end of map
                            value.close();
                            break;
                        }
                        MlxErrors.check(st, "mlx_map_string_to_array_iterator_next");
                        out.put(key.get(ValueLayout.ADDRESS, 0).reinterpret(1 << 16).getString(0), value);
                    }
                } finally {
                    MlxErrors.check((int) mlx.n.mapIteratorFree.invokeExact(it),
                            "mlx_map_string_to_array_iterator_free");
                }
            } finally {
                MlxErrors.check((int) mlx.n.mapArrayFree.invokeExact(tensors), "mlx_map_string_to_array_free");
                MlxErrors.check((int) mlx.n.mapStringFree.invokeExact(metadata), "mlx_map_string_to_string_free");
                MlxErrors.check((int) mlx.n.streamFree.invokeExact(cpu), "mlx_stream_free");
            }
        } catch (Throwable t) {
            throw MlxErrors.rethrow(t);
        }
        return out;
    }

    /**
     * Frees now every array the scope owns except {@code keep}: after an {@link #asyncEval} the graph holds what it
     * needs, and a K/V array whose only remaining handle is its cache's can then be donated to the next step's
     * {@code slice_update} (updated in place) instead of copied.
     */
    public void releaseExcept(MlxArray... keep) {
        java.util.Set<MlxArray> kept = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        for (MlxArray a : keep) {
            if (a != null) {
                kept.add(a);
            }
        }
        List<MlxArray> still = new ArrayList<>(kept.size());
        for (MlxArray a : owned) {
            if (kept.contains(a)) {
                still.add(a);
            } else {
                a.close();
            }
        }
        owned.clear();
        owned.addAll(still);
    }

    /** Frees every array the scope still owns and the stream handle. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        RuntimeException first = null;
        for (MlxArray a : owned) {
            try {
                a.close();
            } catch (RuntimeException e) {
                first = first == null ? e : first;
            }
        }
        owned.clear();
        try {
            MlxErrors.check((int) mlx.n.streamFree.invokeExact(stream), "mlx_stream_free");
        } catch (Throwable t) {
            first = first == null ? MlxErrors.rethrow(t) : first;
        }
        arena.close();
        if (first != null) {
            throw first;
        }
    }
}
