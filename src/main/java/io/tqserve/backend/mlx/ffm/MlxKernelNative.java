package io.tqserve.backend.mlx.ffm;

import static io.tqserve.backend.mlx.ffm.MlxLibrary.HANDLE;
import static io.tqserve.backend.mlx.ffm.MlxLibrary.INT;
import static io.tqserve.backend.mlx.ffm.MlxLibrary.PTR;
import static io.tqserve.backend.mlx.ffm.MlxLibrary.SIZE_T;
import static io.tqserve.backend.mlx.ffm.MlxLibrary.STREAM;
import static io.tqserve.backend.mlx.ffm.MlxLibrary.VECTOR_ARRAY;

import io.tqserve.backend.mlx.ffm.MlxCustomKernel.Gpu;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Method handles for MLX's custom kernels in one GPU language ({@code mlx/c/fast.h}: {@code mlx_fast_metal_kernel_*}
 * or {@code mlx_fast_cuda_kernel_*}, {@code mlx/c/metal.h}, {@code mlx/c/cuda.h}, {@code mlx/c/vector.h}; the C
 * declarations are quoted beside each handle, {@code X} standing for {@code metal} or {@code cuda}). The two APIs
 * differ only in the last parameter of {@code _new}: Metal's {@code bool atomic_outputs}, CUDA's
 * {@code int shared_memory}. Used by {@link MlxCustomKernel}.
 */
final class MlxKernelNative {
    static final StructLayout VECTOR_STRING = HANDLE.withName("mlx_vector_string");
    static final StructLayout KERNEL = HANDLE.withName("mlx_fast_kernel");
    static final StructLayout CONFIG = HANDLE.withName("mlx_fast_kernel_config");
    private static final ValueLayout BOOL = ValueLayout.JAVA_BOOLEAN;

    final Gpu gpu;
    // int mlx_X_is_available(bool* res); null where the library lacks it (mlx_cuda_is_available: MLX-C 0.5.0+)
    final MethodHandle isAvailable;
    // mlx_vector_string mlx_vector_string_new_data(const char** data, size_t size)
    final MethodHandle vectorStringNewData;
    // int mlx_vector_string_free(mlx_vector_string vec)
    final MethodHandle vectorStringFree;
    // mlx_fast_X_kernel mlx_fast_X_kernel_new(const char* name, const mlx_vector_string input_names,
    //     const mlx_vector_string output_names, const char* source, const char* header, bool ensure_row_contiguous,
    //     bool atomic_outputs | int shared_memory)
    final MethodHandle kernelNew;
    // void mlx_fast_X_kernel_free(mlx_fast_X_kernel cls)
    final MethodHandle kernelFree;
    // int mlx_fast_X_kernel_apply(mlx_vector_array* outputs, mlx_fast_X_kernel cls, const mlx_vector_array inputs,
    //     const mlx_fast_X_kernel_config config, const mlx_stream stream)
    final MethodHandle kernelApply;
    // mlx_fast_X_kernel_config mlx_fast_X_kernel_config_new(void)
    final MethodHandle configNew;
    // void mlx_fast_X_kernel_config_free(mlx_fast_X_kernel_config cls)
    final MethodHandle configFree;
    // int mlx_fast_X_kernel_config_add_output_arg(mlx_fast_X_kernel_config cls, const int* shape, size_t size,
    //     mlx_dtype dtype)
    final MethodHandle configAddOutput;
    // int mlx_fast_X_kernel_config_set_grid(mlx_fast_X_kernel_config cls, int grid1, int grid2, int grid3)
    final MethodHandle configSetGrid;
    // int mlx_fast_X_kernel_config_set_thread_group(mlx_fast_X_kernel_config cls, int thread1, int thread2,
    //     int thread3)
    final MethodHandle configSetThreadGroup;
    // int mlx_fast_X_kernel_config_add_template_arg_int(mlx_fast_X_kernel_config cls, const char* name, int value)
    final MethodHandle configAddTemplateInt;
    // int mlx_fast_X_kernel_config_add_template_arg_bool(mlx_fast_X_kernel_config cls, const char* name,
    //     bool value)
    final MethodHandle configAddTemplateBool;

    MlxKernelNative(MlxLibrary lib, Gpu gpu) {
        this.gpu = gpu;
        String x = gpu == Gpu.METAL ? "metal" : "cuda";
        String k = "mlx_fast_" + x + "_kernel";
        MethodHandle available;
        try {
            available = lib.status("mlx_" + x + "_is_available", PTR);
        } catch (MlxException e) {
            available = null;
        }
        isAvailable = available;
        vectorStringNewData = lib.returning("mlx_vector_string_new_data", VECTOR_STRING, PTR, SIZE_T);
        vectorStringFree = lib.status("mlx_vector_string_free", VECTOR_STRING);
        MemoryLayout last = gpu == Gpu.METAL ? BOOL : INT;
        kernelNew = lib.returning(k + "_new", KERNEL, PTR, VECTOR_STRING, VECTOR_STRING, PTR, PTR, BOOL, last);
        kernelFree = lib.fn(k + "_free", FunctionDescriptor.ofVoid(KERNEL));
        kernelApply = lib.status(k + "_apply", PTR, KERNEL, VECTOR_ARRAY, CONFIG, STREAM);
        configNew = lib.returning(k + "_config_new", CONFIG);
        configFree = lib.fn(k + "_config_free", FunctionDescriptor.ofVoid(CONFIG));
        configAddOutput = lib.status(k + "_config_add_output_arg", CONFIG, PTR, SIZE_T, INT);
        configSetGrid = lib.status(k + "_config_set_grid", CONFIG, INT, INT, INT);
        configSetThreadGroup = lib.status(k + "_config_set_thread_group", CONFIG, INT, INT, INT);
        configAddTemplateInt = lib.status(k + "_config_add_template_arg_int", CONFIG, PTR, INT);
        configAddTemplateBool = lib.status(k + "_config_add_template_arg_bool", CONFIG, PTR, BOOL);
    }
}
